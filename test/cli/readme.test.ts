import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { DAY, childEnv } from '../sync/helpers.ts';
import { freshDatabase, type TestDatabase } from '../support/databases.ts';
import { ROOT } from '../support/process.ts';
import { tempDir } from '../support/tmp.ts';
import { runMain } from '../support/cli.ts';

/**
 * The README is the user's manual: its examples must work as printed. The "Try every command against the sandbox"
 * block is run line by line, in order, against a sandbox; every command its tables name answers --help.
 */

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

function block(heading: string): string[] {
  const start = README.indexOf(heading);
  expect(start, heading).toBeGreaterThan(0);
  const fence = README.indexOf('```sh\n', start);
  const end = README.indexOf('```', fence + 6);
  return README.slice(fence + 6, end).split('\n').map((l) => l.trim()).filter(Boolean);
}

const cli = runMain;

const scratch = tempDir('readme-');

describe('README examples', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 31, customers: 1, dataStart: Math.floor((Date.now() - 8 * DAY) / 300_000) * 300_000 });
    db = await freshDatabase('sqlite', 'readme');
  });
  afterAll(async () => {
    await sandbox?.close();
    await db?.drop();
    scratch.remove();
  });

  it('every line of "Try every command against the sandbox" runs as printed and exits 0', async () => {
    const lines = block('### Try every command against the sandbox');
    expect(lines.length).toBeGreaterThan(10);
    const env = childEnv(sandbox, db.url, { LOG_LEVEL: 'warn' });
    // Files the examples write (report --html) land in a scratch directory, as they would in the user's own.
    const cwd = process.cwd();
    process.chdir(scratch.dir);
    try {
      for (const line of lines) {
        expect(line.startsWith('npx occupancy-sync '), line).toBe(true);
        const args = line.slice('npx occupancy-sync '.length).split(/\s+/);
        const result = await cli(args, env);
        expect(result.code, `${line}\n${result.stderr}`).toBe(0);
        // Every command says something; with --html alone the report's confirmation goes to stderr.
        expect(result.stdout.length + result.stderr.length, line).toBeGreaterThan(0);
        const html = args.indexOf('--html');
        if (html >= 0) expect(readFileSync(join(scratch.dir, args[html + 1]!), 'utf8'), line).toMatch(/^<!doctype html>/i);
      }
    } finally {
      process.chdir(cwd);
    }
  }, 180_000);

  it('every command in the Commands table answers --help with examples', async () => {
    const table = README.slice(README.indexOf('## Commands'), README.indexOf('### Exit codes'));
    const commands = [...table.matchAll(/^\| `occupancy-sync ([a-z]+)(?: ([a-z]+)(?:\\\|[a-z|\\]+)?)?/gm)].map((m) => [m[1]!, ...(m[2] ? [m[2]] : [])]);
    expect(commands.length).toBeGreaterThan(12);
    for (const command of commands) {
      const result = await cli([...command, '--help'], {});
      expect(result.code, command.join(' ')).toBe(0);
      expect(result.stdout, command.join(' ')).toContain('Examples:');
    }
  });
});
