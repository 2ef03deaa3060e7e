import postgres from 'postgres';
import { expect, it } from 'vitest';
import { startSandbox } from '../../src/sandbox/index.ts';
import { freshDatabase, openTestStore, PG_BASE_URL } from '../support/databases.ts';
import { spawnCli } from '../support/process.ts';
import { childEnv, DAY } from '../sync/helpers.ts';

/**
 * `sync` as cron runs it, against a Postgres where another session holds occupancy_readings locked: the run says what
 * it waits for, and SIGTERM (systemd stopping it, an operator) ends the wait at once: the commit is cancelled, the run
 * is recorded interrupted and the command exits 0 (README: interrupted is not a failure; the next run resumes).
 */
it('SIGTERM while a sync waits for a lock another session holds: said, cancelled, recorded interrupted, exit 0', async () => {
  const now = Date.now();
  const sandbox = await startSandbox({ seed: 41, customers: 1, dataStart: Math.floor((now - 2 * DAY) / 300_000) * 300_000, lateArrivalMaxMs: 0 });
  const db = await freshDatabase('postgres', 'sigterm', { migrate: true });
  const blocker = postgres(PG_BASE_URL, { max: 1, onnotice: () => {} });
  try {
    const session = await blocker.reserve();
    await session.unsafe('BEGIN');
    await session.unsafe(`LOCK TABLE "${db.schema}".occupancy_readings IN ACCESS EXCLUSIVE MODE`);
    const child = spawnCli(['sync'], { env: childEnv(sandbox, db.url, { LOG_LEVEL: 'info', SYNC_INITIAL_HISTORY: '1d', SYNC_SETTLE_DELAY: '1s' }) });
    await child.waitForLine(/waiting for Postgres while writing a page of \d+ occupancy records: a lock on occupancy_readings held by .*; DATABASE_LOCK_TIMEOUT ends the wait after 30 s/, 'the sync to say what it waits for', { stream: 'stderr', timeoutMs: 90_000 });
    const exit = await child.kill("SIGTERM", 30_000).catch((error: unknown) => { throw new Error(`${(error as Error).message}\n${child.stderr().slice(-3000)}`); });
    expect(exit.code, child.stderr().slice(-2000)).toBe(0);
    // Still held: the wait ended because SIGTERM cancelled it.
    expect((await session.unsafe(`SELECT count(*)::int AS n FROM pg_locks WHERE pid = pg_backend_pid() AND mode = 'AccessExclusiveLock'`))[0]).toEqual({ n: 1 });
    await session.unsafe('ROLLBACK');
    session.release();
    const store = await openTestStore(db);
    try {
      const runs = await store.lastRuns(sandbox.customers[0]!.id);
      expect(runs.find((r) => r.stream === 'occupancy')).toMatchObject({ status: 'interrupted', pages: 0 });
      expect(await store.query('SELECT count(*) AS n FROM occupancy')).toEqual([{ n: 0 }]);
    } finally {
      await store.close();
    }
  } finally {
    await blocker.end({ timeout: 1 });
    await sandbox.close();
    await db.drop();
  }
}, 180_000);
