import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { runMain } from '../support/cli.ts';
import { ABANDONED_RUN_ERROR } from '../../src/store/types.ts';
import { DIALECTS, PG_BASE_URL } from '../support/databases.ts';
import { waitFor } from '../support/wait.ts';
import { Figures } from '../reliability/figures.ts';
import { fresh, storeChild } from './harness.ts';

/**
 * A run whose process is gone (kill -9; on Postgres also a session cut off by a restart) used to show as `running` in
 * `status` until the next run of its stream. The run lock tells: it dies with its holder (Postgres: the advisory lock
 * ends with the session; SQLite: the lock row's holder is checked), so a running run nobody holds the lock of is shown
 * as interrupted, with the reason, without writing anything.
 */

const admin = postgres(PG_BASE_URL, { max: 1, onnotice: () => {} });
afterAll(() => admin.end());
const figures = new Figures(
  { section: 'dead-runs', title: 'Runs whose process is gone, as `status` shows them (test/store/dead-runs.test.ts)' },
  ['dead-runs/sqlite/kill-9', 'dead-runs/postgres/kill-9', 'dead-runs/postgres/session-cut'],
);
afterAll(() => void figures.publish());

describe.each(DIALECTS)('a run whose process is gone, on %s', (dialect) => {
  it('killed with kill -9, is shown as interrupted by status and lastRuns, nothing written', async () => {
    const { database, store } = await fresh(dialect, 'deadrun');
    const child = storeChild(database.url, 'start-run', 'cust-d', 'occupancy');
    expect(await child.nextLine('the run to take its lock')).toBe('locked');
    const id = Number(await child.nextLine('the run to start'));
    expect(await store.lastRuns('cust-d')).toMatchObject([{ id, status: 'running', error: null }]);

    await child.kill('SIGKILL');
    // Postgres ends the session when it notices the closed socket.
    await waitFor(async () => (await store.lastRuns('cust-d'))[0]?.status !== 'running', 'the killed run to be seen as gone', 10_000, { everyMs: 50 });
    expect(await store.lastRuns('cust-d')).toMatchObject([{ id, status: 'interrupted', error: ABANDONED_RUN_ERROR, finishedAt: null }]);
    const status = await runMain(['status'], { DATABASE_URL: database.url, LOG_LEVEL: 'silent' });
    expect(status.stdout).toMatch(/cust-d\s+occupancy\s+.*\(incremental\)\s+interrupted/);
    expect(await store.query('SELECT status FROM sync_runs WHERE id = $1', [id])).toEqual([{ status: 'running' }]);
    figures.record({
      key: `dead-runs/${dialect}/kill-9`,
      tried: `a process holding a run is killed with SIGKILL (${dialect})`,
      count: 1,
      held: '`status` and lastRuns show the run interrupted, with the reason, at once (formerly `running` until the next run); nothing written',
    });
  });

  it.runIf(dialect === 'postgres')('cut off by the server (its session ended, the process still alive), is shown as interrupted', async () => {
    const { database, store } = await fresh(dialect, 'cutrun');
    const child = storeChild(database.url, 'start-run', 'cust-d', 'occupancy');
    expect(await child.nextLine('the run to take its lock')).toBe('locked');
    const id = Number(await child.nextLine('the run to start'));
    const cut = await admin`SELECT pg_terminate_backend(pid) AS ok FROM pg_locks WHERE locktype = 'advisory' AND pid IN (SELECT pid FROM pg_stat_activity WHERE application_name = ${`occupancy-sync (pid ${child.process.pid})`})`;
    expect(cut).toEqual([{ ok: true }]);
    await waitFor(async () => (await store.lastRuns('cust-d'))[0]?.status !== 'running', 'the cut-off run to be seen as gone', 10_000, { everyMs: 50 });
    expect(await store.lastRuns('cust-d')).toMatchObject([{ id, status: 'interrupted', error: ABANDONED_RUN_ERROR }]);
    figures.record({
      key: 'dead-runs/postgres/session-cut',
      tried: 'the session holding a run\'s lock is ended by the server (a restart), its process still alive',
      count: 1,
      held: 'the run is shown interrupted, with the reason (its advisory lock is no longer held)',
    });
  });
});
