import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { DIALECTS, migrationNames, trackedDatabase } from './harness.ts';

function capture() {
  let text = '';
  return { stream: { write: (s: string) => (text += s) }, text: () => text };
}

async function run(args: string[], env: Record<string, string>) {
  const stdout = capture();
  const stderr = capture();
  const code = await main(['node', 'occupancy-sync', ...args], { env, stdout: stdout.stream, stderr: stderr.stream, signal: new AbortController().signal });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

describe.each(DIALECTS)('occupancy-sync migrate on %s', (dialect) => {
  it('applies the migrations, prints them, and reports up to date the second time', async () => {
    const database = await trackedDatabase(dialect, 'cmd');
    const first = await run(['migrate'], { DATABASE_URL: database.url, LOG_LEVEL: 'silent' });
    expect(first).toMatchObject({ code: 0, stderr: '' });
    const names = migrationNames(dialect);
    expect(first.stdout).toContain(`Applied ${names.length} migration${names.length === 1 ? '' : 's'} to ${dialect}`);
    for (const name of names) expect(first.stdout).toContain(`  ${name}\n`);
    const second = await run(['migrate'], { DATABASE_URL: database.url, LOG_LEVEL: 'silent' });
    expect(second).toMatchObject({ code: 0, stdout: expect.stringContaining('Database is up to date') });
  });
});

describe('occupancy-sync migrate', () => {
  it('--help describes the command with examples and exit codes', async () => {
    const help = await run(['migrate', '--help'], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Apply pending database migrations');
    expect(help.stdout).toContain('$ npx occupancy-sync migrate');
    expect(help.stdout).toContain('Exit codes');
  });

  it('exits 78 with the variable named when DATABASE_URL is unusable', async () => {
    const bad = await run(['migrate'], { DATABASE_URL: 'mysql://x' });
    expect(bad.code).toBe(78);
    expect(bad.stderr).toContain('DATABASE_URL');
  });
});
