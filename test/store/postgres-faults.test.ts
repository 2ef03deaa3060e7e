import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { Config, DatabaseTimeouts } from '../../src/config.ts';
import { memoryLogger } from '../../src/logger.ts';
import { openStore } from '../../src/store/index.ts';
import type { Store } from '../../src/store/types.ts';
import { PG_BASE_URL } from '../support/databases.ts';
import { waitFor } from '../support/wait.ts';
import { checkpoint, readings, trackedDatabase } from './harness.ts';
import { tcpProxy } from './tcp-proxy.ts';

/**
 * Waits on Postgres are bounded and said (issue 24): a table lock another session holds, an exclusive request queued
 * behind a long reporting query, a network path gone silent. Each wait logs what it waits for (whom), ends within
 * DATABASE_LOCK_TIMEOUT, DATABASE_STATEMENT_TIMEOUT or when the server answers nothing at all, and SIGTERM cancels it.
 * What ends a run says what happened, where, the fix, and that the next run resumes.
 */

const C = 'cust-pg';
const WAITING = 'waiting for Postgres while';
const admin = postgres(PG_BASE_URL, { max: 4, onnotice: () => {} });
afterAll(() => admin.end());
const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const page = (n: number, start = '2026-03-01T10:00:00.000Z') => ({
  customerId: C,
  sink: 'occupancy' as const,
  records: readings(n, start),
  at: '2026-03-01T12:00:00.000Z',
  checkpoint: checkpoint(C, null, start),
});

interface Opened {
  store: Store;
  log: ReturnType<typeof memoryLogger>;
  abort: AbortController;
  schema: string;
  database: Config['database'];
}

/** A migrated store with its own bounds, log and abort signal. */
async function opened(label: string, timeouts: Partial<DatabaseTimeouts> = {}, url?: (db: { url: string; schema: string }) => string): Promise<Opened> {
  const db = await trackedDatabase('postgres', label);
  const database = { ...db.database, url: url ? url({ url: db.url, schema: db.schema! }) : db.url, timeouts: { connectMs: 2_000, lockMs: 60_000, statementMs: 60_000, ...timeouts } };
  const log = memoryLogger({ level: 'info' });
  const abort = new AbortController();
  const store = await openStore(database, { logger: log.logger, signal: abort.signal });
  cleanups.push(() => store.close());
  await store.migrate();
  return { store, log, abort, schema: db.schema!, database };
}

/** Another session that takes `lock` on `table` in an open transaction; resolves once it holds it. */
async function holding(schema: string, statement: string): Promise<{ pid: number; release(): Promise<void> }> {
  const session = await admin.reserve();
  await session.unsafe(`SET search_path = "${schema}"`);
  const [{ pid }] = (await session.unsafe('SELECT pg_backend_pid() AS pid')) as unknown as [{ pid: number }];
  await session.unsafe('BEGIN');
  await session.unsafe(statement);
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    await session.unsafe('ROLLBACK').catch(() => undefined);
    session.release();
  };
  cleanups.push(release);
  return { pid, release };
}

const lines = (log: Opened['log']) => log.records().filter((r) => String(r.msg).startsWith(WAITING)).map((r) => String(r.msg));
const said = (log: Opened['log'], what: string) => waitFor(() => lines(log).length > 0, what, 60_000, { everyMs: 100 });

describe('a Postgres lock another session holds', () => {
  it('a page waiting for a table lock says whom it waits for, and commits once the lock is released', async () => {
    const { store, log, schema } = await opened('pg_lock_say');
    await store.commitPage(page(5));
    const blocker = await holding(schema, 'LOCK TABLE occupancy_readings IN ACCESS EXCLUSIVE MODE');
    const committing = store.commitPage(page(5, '2026-03-01T11:00:00.000Z'));
    await said(log, 'the line saying what the page waits for');
    expect(lines(log)[0]).toMatch(new RegExp(`^${WAITING} writing a page of 5 occupancy records: a lock on occupancy_readings held by \\(or queued ahead in\\) Postgres session ${blocker.pid} \\(.*idle in transaction.*LOCK TABLE occupancy_readings.*\\); DATABASE_LOCK_TIMEOUT ends the wait after 1 min`));
    await blocker.release();
    await committing;
    expect(await store.query('SELECT count(*) AS n FROM occupancy')).toEqual([{ n: 10 }]);
  });

  it('behind an exclusive request queued after a long reporting query, the line names the session queued ahead', async () => {
    const { store, log, schema } = await opened('pg_lock_queue');
    await store.commitPage(page(5));
    const report = await holding(schema, 'SELECT count(*) FROM occupancy_readings');
    const exclusive = await admin.reserve();
    cleanups.push(() => exclusive.release());
    const [{ pid: queued }] = (await exclusive.unsafe('SELECT pg_backend_pid() AS pid')) as unknown as [{ pid: number }];
    await exclusive.unsafe('BEGIN');
    const altering = exclusive.unsafe(`LOCK TABLE "${schema}".occupancy_readings IN ACCESS EXCLUSIVE MODE`).then(() => exclusive.unsafe('ROLLBACK'));
    await waitFor(async () => (await admin`SELECT 1 FROM pg_stat_activity WHERE pid = ${queued} AND wait_event_type = 'Lock'`).length > 0, 'the exclusive request to queue');
    const committing = store.commitPage(page(5, '2026-03-01T11:00:00.000Z'));
    await said(log, 'the line saying what the page waits for');
    expect(lines(log)[0]).toContain(`Postgres session ${queued} (`);
    await report.release();
    await altering;
    await committing;
  });

  it('ends at DATABASE_LOCK_TIMEOUT with one line (what, the fix), nothing of the page committed', async () => {
    const { store, schema } = await opened('pg_lock_timeout', { lockMs: 1_000 });
    await holding(schema, 'LOCK TABLE occupancy_readings IN ACCESS EXCLUSIVE MODE');
    await expect(store.commitPage(page(5))).rejects.toThrow(
      /a lock that another session holds at postgres:\/\/.* was not released within DATABASE_LOCK_TIMEOUT \(canceling statement due to lock timeout\): nothing of this statement was done\. Fix: find the session holding it/,
    );
    expect(await store.getState(C, 'occupancy')).toBeUndefined();
  });

  it('SIGTERM cancels a commit waiting for a lock: nothing committed, and the store goes on to record the run', async () => {
    const { store, log, abort, schema } = await opened('pg_lock_sigterm');
    const run = await store.startRun({ customerId: C, stream: 'occupancy', mode: 'incremental', startedAt: '2026-03-01T12:00:00.000Z' });
    await holding(schema, 'LOCK TABLE occupancy_readings IN ACCESS EXCLUSIVE MODE');
    const committing = store.commitPage({ ...page(5), runId: run }).catch((e: unknown) => e as Error);
    await said(log, 'the commit to wait');
    abort.abort();
    const error = await committing;
    expect(error.message).toMatch(/the statement was cancelled at .*\(canceling statement due to user request; SIGTERM or SIGINT, or an administrator\): nothing of it was committed, and the next run resumes/);
    // The lock is still held: the wait ended because it was cancelled. Recording the run does not need it.
    await store.finishRun(run, { status: 'interrupted', finishedAt: '2026-03-01T12:01:00.000Z' });
    expect(await store.lastRuns(C)).toMatchObject([{ id: run, status: 'interrupted', pages: 0 }]);
  });
});

describe('a Postgres that goes away', () => {
  it('a black-holed network path: the wait says the server does not answer, ends, and the same store goes on once it is back', async () => {
    const proxy = await tcpProxy({ host: '127.0.0.1', port: Number(new URL(PG_BASE_URL).port || 5432) });
    cleanups.push(() => proxy.close());
    const { store, log } = await opened('pg_blackhole', {}, ({ url }) => url.replace(/:\d+\//, `:${proxy.port}/`));
    await store.commitPage(page(5));
    proxy.blackhole();
    const error = (await store.commitPage(page(5, '2026-03-01T11:00:00.000Z')).catch((e: unknown) => e)) as Error;
    expect(error.message).toMatch(
      /^no answer from Postgres at postgres:\/\/postgres@127\.0\.0\.1:\d+\/test.* for \d+ s while committing a transaction: the server or the network path to it is gone, so the connection was dropped; what was not committed is not stored, and the next run resumes from the last committed page\. Fix: check that the server is up and reachable from here$/,
    );
    expect(lines(log).some((line) => /the server does not answer a new connection either/.test(line))).toBe(true);
    proxy.restore();
    await store.commitPage(page(5, '2026-03-01T11:00:00.000Z'));
    expect(await store.query('SELECT count(*) AS n FROM occupancy')).toEqual([{ n: 10 }]);
  });

  it('a lost connection is one line: what, where, the fix, and that the next run resumes', async () => {
    const { store, log, schema } = await opened('pg_lost');
    const blocker = await holding(schema, 'LOCK TABLE occupancy_readings IN ACCESS EXCLUSIVE MODE');
    const committing = store.commitPage(page(5)).catch((e: unknown) => e as Error);
    await said(log, 'the commit to wait');
    // The server ends the waiting session (a restart, a failover, an administrator).
    await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND ${blocker.pid} = ANY(pg_blocking_pids(pid))`;
    const error = await committing;
    expect(error.message).toMatch(/lost the connection to Postgres at postgres:\/\/postgres@127\.0\.0\.1:\d+\/test.* \(.*\): what was not committed is not stored, and the next run resumes from the last committed page\. Fix: check that the server is up and reachable from here/);
    await blocker.release();
    await store.commitPage(page(5));
  });

  it('a role with CONNECTION LIMIT 1 is told what occupancy-sync needs, and the fix', async () => {
    const db = await trackedDatabase('postgres', 'pg_limit');
    const role = `ostest_limited_${randomBytes(4).toString('hex')}`;
    await admin.unsafe(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 1`);
    cleanups.push(() => admin.unsafe(`DROP OWNED BY ${role}; DROP ROLE ${role}`));
    await admin.unsafe(`GRANT ALL ON SCHEMA "${db.schema}" TO ${role}`);
    const store = await openStore({ ...db.database, url: db.url.replace('postgres@', `${role}@`) });
    cleanups.push(() => store.close());
    await expect(store.migrate()).rejects.toThrow(
      new RegExp(`refused a connection: too many connections for role "${role}"\\. occupancy-sync opens up to 13 per process .*Fix: raise the limit \\(ALTER ROLE <user> CONNECTION LIMIT 20`),
    );
  });
});
