import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, describe, expect, it, type TestContext } from 'vitest';
import type { Config, DatabaseTimeouts } from '../../src/config.ts';
import { memoryLogger } from '../../src/logger.ts';
import { openStore } from '../../src/store/index.ts';
import type { Store } from '../../src/store/types.ts';
import { startSandbox } from '../../src/sandbox/index.ts';
import { freshDatabase, openTestStore, PG_BASE_URL, type TestDatabase } from '../support/databases.ts';
import { spawnCli } from '../support/process.ts';
import { Figures } from '../reliability/figures.ts';
import { childEnv, DAY } from '../sync/helpers.ts';
import { waitFor } from '../support/wait.ts';
import { checkpoint, readings } from './harness.ts';
import { tcpProxy } from './tcp-proxy.ts';

/**
 * Waits on Postgres are bounded and said (issue 24): a table lock another session holds, an exclusive request queued
 * behind a long reporting query, a network path gone silent. Each wait logs what it waits for (whom), ends within
 * DATABASE_LOCK_TIMEOUT, DATABASE_STATEMENT_TIMEOUT or when the server answers nothing at all, and SIGTERM cancels it.
 * What ends a run says what happened, where, the fix, and that the next run resumes.
 *
 * The tests run concurrently (describe.concurrent below): each waits for the store's own timers (when it says a wait,
 * when it gives a silent server up), not for the CPU, and each has its own schema, sessions and cleanups, so the file
 * takes about as long as its longest test instead of their sum.
 */

const C = 'cust-pg';
const WAITING = 'waiting for Postgres while';
// Enough for every concurrent test's reserved sessions (a reserved session is not given back until released).
const admin = postgres(PG_BASE_URL, { max: 12, onnotice: () => {} });
afterAll(() => admin.end());
const CASES = ['lock-said', 'lock-queued', 'lock-timeout', 'sigterm', 'cancel-lands', 'sigterm-sync', 'blackhole', 'lost-connection', 'connection-limit', 'schema-rights'];
const figures = new Figures(
  { section: 'postgres-faults', title: 'Waits and faults of Postgres: locks, a silent network, lost sessions, SIGTERM (test/store/postgres-faults.test.ts)' },
  CASES.map((c) => `postgres-faults/${c}`),
);
afterAll(() => void figures.publish());
const record = (key: string, tried: string, held: string) => figures.record({ key: `postgres-faults/${key}`, tried, count: 1, held });
type Cleanups = Array<() => Promise<unknown> | unknown>;
/** The test's own cleanups, run in reverse when it finishes (a file-wide afterEach would end the concurrent tests'). */
function cleanupsOf(context: TestContext): Cleanups {
  const list: Cleanups = [];
  context.onTestFinished(async () => {
    while (list.length > 0) await list.pop()!();
  });
  return list;
}

/** A fresh schema dropped when the test finishes. */
async function trackedDatabase(cleanups: Cleanups, label: string): Promise<TestDatabase> {
  const db = await freshDatabase('postgres', label);
  cleanups.push(() => db.drop());
  return db;
}

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
async function opened(cleanups: Cleanups, label: string, timeouts: Partial<DatabaseTimeouts> = {}, url?: (db: { url: string; schema: string }) => string): Promise<Opened> {
  const db = await trackedDatabase(cleanups, label);
  const database = { ...db.database, url: url ? url({ url: db.url, schema: db.schema! }) : db.url, timeouts: { connectMs: 2_000, lockMs: 60_000, statementMs: 60_000, ...timeouts } };
  const log = memoryLogger({ level: 'info' });
  const abort = new AbortController();
  const store = await openStore(database, { logger: log.logger, signal: abort.signal });
  cleanups.push(() => store.close());
  await store.migrate();
  return { store, log, abort, schema: db.schema!, database };
}

/** Another session that takes `lock` on `table` in an open transaction; resolves once it holds it. */
async function holding(cleanups: Cleanups, schema: string, statement: string): Promise<{ pid: number; release(): Promise<void> }> {
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

describe.concurrent('Postgres faults', () => {
  describe('a Postgres lock another session holds', () => {
    it('a page waiting for a table lock says whom it waits for, and commits once the lock is released', async (context) => {
      const cleanups = cleanupsOf(context);
      const { store, log, schema } = await opened(cleanups, 'pg_lock_say');
      await store.commitPage(page(5));
      const blocker = await holding(cleanups, schema, 'LOCK TABLE occupancy_readings IN ACCESS EXCLUSIVE MODE');
      let committed = false;
      const committing = store.commitPage(page(5, '2026-03-01T11:00:00.000Z')).finally(() => (committed = true));
      await said(log, 'the line saying what the page waits for');
      // Said while the page still waits for the lock (a read of the table would wait too: it is not counted here).
      expect(committed).toBe(false);
      // The line can name other sessions too: the monitor reports every waiting session with the store's application
      // name, so the waits of this file's concurrent tests (or of another process) appear in it as well.
      const line = lines(log)[0]!;
      // The page's upsert is what waits (its aggregates are only recorded stale in the same transaction, after it).
      // (Another test's first page, making its month's partition, waits on the default partition of its own schema.)
      expect(line).toMatch(new RegExp(`^${WAITING} writing a page of 5 occupancy records: a lock on occupancy_readings(_default)? held by `));
      expect(line).toMatch(new RegExp(`a lock on occupancy_readings held by \\(or queued ahead in\\) Postgres session ${blocker.pid} \\([^()]*idle in transaction[^()]*LOCK TABLE occupancy_readings[^()]*\\)`));
      expect(line).toMatch(/; DATABASE_LOCK_TIMEOUT ends the wait after 1 min$/);
      await blocker.release();
      await committing;
      expect(await store.query('SELECT count(*) AS n FROM occupancy')).toEqual([{ n: 10 }]);
      record('lock-said', 'a page waits for `LOCK TABLE occupancy_readings` held by another session', 'while the page still waits, a warning names the lock, the holding session (pid, state, query) and the bound (DATABASE_LOCK_TIMEOUT); the page commits once the lock is released');
    });

    it('behind an exclusive request queued after a long reporting query, the line names the session queued ahead', async (context) => {
      const cleanups = cleanupsOf(context);
      const { store, log, schema } = await opened(cleanups, 'pg_lock_queue');
      await store.commitPage(page(5));
      const report = await holding(cleanups, schema, 'SELECT count(*) FROM occupancy_readings');
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
      record('lock-queued', 'a page waits behind an exclusive lock request queued after a long reporting query', 'the warning names the session queued ahead; the page commits once both are done');
    });

    it('ends at DATABASE_LOCK_TIMEOUT with one line (what, the fix), nothing of the page committed', async (context) => {
      const cleanups = cleanupsOf(context);
      const { store, schema } = await opened(cleanups, 'pg_lock_timeout', { lockMs: 1_000 });
      await holding(cleanups, schema, 'LOCK TABLE occupancy_readings IN ACCESS EXCLUSIVE MODE');
      await expect(store.commitPage(page(5))).rejects.toThrow(
        /a lock that another session holds at postgres:\/\/.* was not released within DATABASE_LOCK_TIMEOUT \(canceling statement due to lock timeout\): nothing of this statement was done\. Fix: find the session holding it/,
      );
      expect(await store.getState(C, 'occupancy')).toBeUndefined();
      record('lock-timeout', 'the same lock held past DATABASE_LOCK_TIMEOUT', 'the page fails with one line (the lock, the fix: find the holder or raise DATABASE_LOCK_TIMEOUT); nothing of it committed');
    });

    it('SIGTERM cancels a commit waiting for a lock: nothing committed, and the store goes on to record the run', async (context) => {
      const cleanups = cleanupsOf(context);
      const { store, log, abort, schema } = await opened(cleanups, 'pg_lock_sigterm');
      const run = await store.startRun({ customerId: C, stateKey: 'occupancy', mode: 'incremental', startedAt: '2026-03-01T12:00:00.000Z' });
      await holding(cleanups, schema, 'LOCK TABLE occupancy_readings IN ACCESS EXCLUSIVE MODE');
      const committing = store.commitPage({ ...page(5), runId: run }).then(() => new Error('committed'), (e: unknown) => e as Error);
      await said(log, 'the commit to wait');
      abort.abort();
      const error = await committing;
      expect(error.message).toMatch(/the statement was cancelled at .*\(canceling statement due to user request; SIGTERM or SIGINT, or an administrator\): nothing of it was committed, and the next run resumes/);
      // The lock is still held: the wait ended because it was cancelled. Recording the run does not need it.
      await store.finishRun(run, { status: 'interrupted', finishedAt: '2026-03-01T12:01:00.000Z' });
      expect(await store.lastRuns(C)).toMatchObject([{ id: run, status: 'interrupted', pages: 0 }]);
      record('sigterm', 'SIGTERM (the store\'s signal) while a page waits for a lock', 'the statement is cancelled on the server at once, nothing committed, the lock still held by the other session; the run is recorded interrupted on the same store');
    });
  });

  describe('a cancel that lands on the next statement', () => {
    it('the end of a run is recorded once more when a cancel meant for another statement lands on it; twice fails with one line', async (context) => {
      const cleanups = cleanupsOf(context);
      const { store, schema } = await opened(cleanups, 'pg_cancel_lands');
      // What a cancel request for a statement that already ended does to the next one its pooled session runs: the
      // server cancels it (57014, on request). A sequence counts the attempts: it is not rolled back with them.
      const s = `"${schema}"`;
      await admin.unsafe(`CREATE SEQUENCE ${s}.attempts`);
      await admin.unsafe(`CREATE TABLE ${s}.cancels (n int NOT NULL)`);
      await admin.unsafe(`INSERT INTO ${s}.cancels VALUES (1)`);
      await admin.unsafe(`CREATE FUNCTION ${s}.cancelled() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF nextval('${s}.attempts') <= (SELECT n FROM ${s}.cancels) THEN
            RAISE EXCEPTION 'canceling statement due to user request' USING ERRCODE = '57014';
          END IF;
          RETURN NEW;
        END $$`);
      await admin.unsafe(`CREATE TRIGGER cancelled BEFORE UPDATE ON ${s}.sync_runs FOR EACH ROW EXECUTE FUNCTION ${s}.cancelled()`);
      const attempts = async () => Number(((await admin.unsafe(`SELECT last_value FROM ${s}.attempts`)) as unknown as [{ last_value: string }])[0].last_value);

      const first = await store.startRun({ customerId: C, stateKey: 'occupancy', mode: 'incremental', startedAt: '2026-03-01T12:00:00.000Z' });
      await store.finishRun(first, { status: 'interrupted', finishedAt: '2026-03-01T12:01:00.000Z' });
      expect(await attempts()).toBe(2);
      expect(await store.lastRuns(C)).toMatchObject([{ id: first, status: 'interrupted' }]);

      // Cancelled on every attempt (an administrator's pg_cancel_backend, say): not retried for ever.
      await admin.unsafe(`UPDATE ${s}.cancels SET n = 1000`);
      const second = await store.startRun({ customerId: C, stateKey: 'occupancy', mode: 'incremental', startedAt: '2026-03-01T12:02:00.000Z' });
      const error = await store.finishRun(second, { status: 'succeeded', finishedAt: '2026-03-01T12:03:00.000Z' }).then(() => new Error('recorded'), (e: unknown) => e as Error);
      expect(error.message).toMatch(new RegExp(`^recording the end of run ${second} failed: the statement was cancelled at .*\\(canceling statement due to user request; SIGTERM or SIGINT, or an administrator\\)`));
      expect(await attempts()).toBe(4);
      // Not recorded: a run still marked running is read as interrupted (run-records.ts), never as succeeded.
      expect(await store.lastRuns(C)).toMatchObject([{ id: second, status: 'interrupted' }]);
      record('cancel-lands', 'recording the end of a run is cancelled on request (57014) once, as when SIGTERM\'s cancel for a statement that already ended lands on the next one its session runs; then on every attempt', 'sent once more, the run recorded (formerly the run exited 1: \'recording the end of run N failed: the statement was cancelled\'); cancelled again: one line, no third attempt');
    });
  });

  describe('a Postgres that goes away', () => {
    it('a black-holed network path: the wait says the server does not answer, ends, and the same store goes on once it is back', async (context) => {
      const cleanups = cleanupsOf(context);
      const proxy = await tcpProxy({ host: '127.0.0.1', port: Number(new URL(PG_BASE_URL).port || 5432) });
      cleanups.push(() => proxy.close());
      const { store, log } = await opened(cleanups, 'pg_blackhole', {}, ({ url }) => url.replace(/:\d+\//, `:${proxy.port}/`));
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
      record('blackhole', 'the network path to Postgres goes silent mid-commit (a TCP proxy stops forwarding, keeping the connection open)', 'warnings say the server answers nothing, not even a new connection; after two such the commit is given up with one line (no answer, the next run resumes, the fix); once the path is back the same store commits the page');
    });

    it('a lost connection is one line: what, where, the fix, and that the next run resumes', async (context) => {
      const cleanups = cleanupsOf(context);
      const { store, log, schema } = await opened(cleanups, 'pg_lost');
      const blocker = await holding(cleanups, schema, 'LOCK TABLE occupancy_readings IN ACCESS EXCLUSIVE MODE');
      const committing = store.commitPage(page(5)).then(() => new Error('committed'), (e: unknown) => e as Error);
      await said(log, 'the commit to wait');
      // The server ends the waiting session (a restart, a failover, an administrator).
      await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND ${blocker.pid} = ANY(pg_blocking_pids(pid))`;
      const error = await committing;
      expect(error.message).toMatch(/lost the connection to Postgres at postgres:\/\/postgres@127\.0\.0\.1:\d+\/test.* \(.*\): what was not committed is not stored, and the next run resumes from the last committed page\. Fix: check that the server is up and reachable from here/);
      await blocker.release();
      await store.commitPage(page(5));
      record('lost-connection', 'the server ends the session of a waiting commit (pg_terminate_backend: a restart, a failover)', 'one line: lost the connection to Postgres at the URL (no password), nothing uncommitted stored, the next run resumes, the fix (formerly `write CONNECTION_CLOSED host:port`)');
    });

    it('a role with CONNECTION LIMIT 1 is told what occupancy-sync needs, and the fix', async (context) => {
      const cleanups = cleanupsOf(context);
      const db = await trackedDatabase(cleanups, 'pg_limit');
      const role = `ostest_limited_${randomBytes(4).toString('hex')}`;
      await admin.unsafe(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 1`);
      cleanups.push(() => admin.unsafe(`DROP OWNED BY ${role}; DROP ROLE ${role}`));
      await admin.unsafe(`GRANT ALL ON SCHEMA "${db.schema}" TO ${role}`);
      const store = await openStore({ ...db.database, url: db.url.replace('postgres@', `${role}@`) });
      cleanups.push(() => store.close());
      await expect(store.migrate()).rejects.toThrow(
        new RegExp(`refused a connection: too many connections for role "${role}"\\. occupancy-sync opens up to 13 per process .*Fix: raise the limit \\(ALTER ROLE <user> CONNECTION LIMIT 20`),
      );
      record('connection-limit', 'a role with CONNECTION LIMIT 1', 'one line: the refusal, how many connections a process opens, the fix (ALTER ROLE ... CONNECTION LIMIT, max_connections) (formerly the raw `too many connections for role`)');
    });
  });

  describe('a Postgres role with rights on its schema only', () => {
    it('migrates and writes its schema (no CREATE on the database needed once the schema exists)', async (context) => {
      const cleanups = cleanupsOf(context);
      const db = await trackedDatabase(cleanups, 'pg_rights');
      const role = `ostest_schema_${randomBytes(4).toString('hex')}`;
      await admin.unsafe(`CREATE ROLE ${role} LOGIN`);
      cleanups.push(() => admin.unsafe(`DROP OWNED BY ${role}; DROP ROLE ${role}`));
      await admin.unsafe(`GRANT USAGE, CREATE ON SCHEMA "${db.schema}" TO ${role}`);
      const store = await openStore({ ...db.database, url: db.url.replace('postgres@', `${role}@`) });
      cleanups.push(() => store.close());
      await store.migrate();
      await store.commitPage(page(5));
      expect(await store.query('SELECT count(*) AS n FROM occupancy')).toEqual([{ n: 5 }]);
      record('schema-rights', 'a role with USAGE and CREATE on its (existing) schema only, no CREATE on the database', 'migrates and writes (formerly refused: CREATE SCHEMA IF NOT EXISTS needs CREATE on the database)');
    });
  });

  describe('`sync` on Postgres', () => {
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
        // The first page of a month makes its partition first (src/store/reading-partitions.ts): that is what waits,
        // reading the bounds of the partitions (each one locked by the LOCK TABLE of their parent).
        await child.waitForLine(/waiting for Postgres while making the month partitions of a page of \d+ readings: a lock on occupancy_readings(_default)? held by .*; DATABASE_LOCK_TIMEOUT ends the wait after 30 s/, 'the sync to say what it waits for', { stream: 'stderr', timeoutMs: 90_000 });
        const exit = await child.kill('SIGTERM', 30_000);
        expect(exit.code, child.stderr().slice(-2000)).toBe(0);
        // Still held: the wait ended because SIGTERM cancelled it.
        expect((await session.unsafe(`SELECT count(*)::int AS n FROM pg_locks WHERE pid = pg_backend_pid() AND mode = 'AccessExclusiveLock' AND relation = '"${db.schema}".occupancy_readings'::regclass`))[0]).toEqual({ n: 1 });
        await session.unsafe('ROLLBACK');
        session.release();
        const store = await openTestStore(db);
        try {
          const runs = await store.lastRuns(sandbox.customers[0]!.id);
          expect(runs.find((r) => r.stateKey === 'occupancy')).toMatchObject({ status: 'interrupted', pages: 0 });
          expect(await store.query('SELECT count(*) AS n FROM occupancy')).toEqual([{ n: 0 }]);
          record('sigterm-sync', '`occupancy-sync sync` (a child process, as cron runs it) waits for a lock another session holds; then SIGTERM', 'it logs what it waits for and whom; SIGTERM cancels the commit: exit code 0, the run recorded interrupted, no row of the page stored, the other session\'s lock untouched');
        } finally {
          await store.close();
        }
      } finally {
        await blocker.end({ timeout: 1 });
        await sandbox.close();
        await db.drop();
      }
    }, 180_000);
  });
});
