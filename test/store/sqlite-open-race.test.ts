import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnTs, type Child } from '../support/process.ts';
import { tempDir } from '../support/tmp.ts';

/**
 * Processes opening one new SQLite file at the same moment (a cron `sync` and `serve` started together on a fresh
 * install). Switching a new file to WAL needs it alone for a moment, and SQLite answered the others SQLITE_BUSY at once,
 * without waiting through the busy handler: about one open in twenty failed with "database is locked" (CI met it in
 * test/store/concurrent-starts.test.ts). Each round is one line written to every process at once.
 */

const PROCESSES = 4;
const ROUNDS = 40;

describe('processes opening one new SQLite file at the same moment', () => {
  let children: Child[] = [];
  const tmp = tempDir();
  beforeAll(async () => {
    children = Array.from({ length: PROCESSES }, () => spawnTs('test/store/fixtures/open-child.ts', [], { stdin: 'pipe', stderr: 'inherit' }));
    for (const child of children) expect(await child.nextLine('the opening process to start')).toBe('ready');
  });
  afterAll(async () => {
    await Promise.all(children.map((child) => child.kill('SIGKILL')));
    tmp.remove();
  });

  it(`${PROCESSES} processes, ${ROUNDS} new files: every open succeeds`, async () => {
    const failures: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const path = join(tmp.dir, `open-race-${round}.db`);
      for (const child of children) child.write(`file:${path}\n`);
      const answers = await Promise.all(children.map((child) => child.nextLine('the open to end', 60_000)));
      failures.push(...answers.filter((a) => a !== 'ok').map((a) => `round ${round}: ${a}`));
      for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
    }
    expect(failures).toEqual([]);
  });
});
