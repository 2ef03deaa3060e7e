import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { tempDir } from '../support/tmp.ts';

/** The command line of `record` and `sandbox --replay`: help, and misuse refused before anything runs. */

async function cli(args: string[], env: Record<string, string> = {}) {
  let stdout = '';
  let stderr = '';
  const code = await main(['node', 'occupancy-sync', ...args], {
    env: { LOG_LEVEL: 'silent', ...env },
    stdout: { write: (s: string) => void (stdout += s) },
    stderr: { write: (s: string) => void (stderr += s) },
    signal: new AbortController().signal,
  });
  return { code, stdout, stderr };
}

const API = {
  API_BASE_URL: 'http://127.0.0.1:9',
  API_KEY: 'key-for-usage-tests',
  API_SECRET: 'secret-for-usage-tests',
  CUSTOMER_ID: '11111111-2222-4333-8444-555555555555',
};

describe('record and sandbox --replay on the command line', () => {
  let work: ReturnType<typeof tempDir>;
  beforeEach(() => {
    work = tempDir('occupancy-sync-record-cli-');
  });
  afterEach(() => work.remove());

  it('record --help says what is kept, what is removed, the exit code, and gives examples', async () => {
    const { code, stdout } = await cli(['record', '--help']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/Usage: occupancy-sync record \[options\] \[command\] \[args\.\.\.\]/);
    expect(stdout).toMatch(/--out <dir>/);
    expect(stdout).toMatch(/--load-state <dir>/);
    expect(stdout).toMatch(/its clock stands still/);
    expect(stdout).toMatch(/Exit code: the command's own/);
    // Run from the sources, as in a clone: examples spelled the way that works there (src/cli/invocation.ts).
    expect(stdout).toMatch(/\$ npx occupancy-sync record --out \.\/recording sync/);
    expect(stdout).toContain('`DATABASE_URL=file:./data/replay.db npx occupancy-sync record --load-state ./recording`');
  });

  it('sandbox --help offers --replay', async () => {
    const { code, stdout } = await cli(['sandbox', '--help']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/--replay <dir>/);
    expect(stdout).toMatch(/\$ npx occupancy-sync sandbox --replay \.\/recording/);
  });

  it('refuses misuse with exit 64 and one line naming the fix, before running anything', async () => {
    const out = join(work.dir, 'recording');
    expect(await cli(['record', 'sync'], API)).toMatchObject({ code: 64, stderr: 'occupancy-sync: record: --out DIR is missing. Fix: e.g. `npx occupancy-sync record --out ./recording sync`\n' });
    expect(await cli(['record', '--out', out], API)).toMatchObject({ code: 64, stderr: 'occupancy-sync: record: no command given. Fix: e.g. `npx occupancy-sync record --out ./recording sync`\n' });
    const serve = await cli(['record', '--out', out, 'serve'], API);
    expect(serve).toMatchObject({ code: 64, stderr: expect.stringMatching(/cannot record "serve"\. Fix: name one of check, sync, backfill/) });
    expect(() => readdirSync(out)).toThrow();

    mkdirSync(out);
    writeFileSync(join(out, 'keep.txt'), 'mine');
    const full = await cli(['record', '--out', out, 'sync'], API);
    expect(full.code).toBe(64);
    expect(full.stderr).toMatch(/the directory is not empty; nothing was run\. Fix: give a new \(or empty\) directory/);
    expect(readdirSync(out)).toEqual(['keep.txt']);

    expect((await cli(['record', '--out', join(work.dir, 'x'), 'sync'])).code).toBe(78);
    expect(await cli(['record', '--load-state', out, 'sync'], API)).toMatchObject({ code: 64, stderr: expect.stringMatching(/record --load-state runs nothing and records nothing/) });
    expect(await cli(['sandbox', '--replay', join(work.dir, 'none'), '--port', '0'])).toMatchObject({ code: 64, stderr: expect.stringMatching(/--replay ".+none": no such directory/) });
  });
});
