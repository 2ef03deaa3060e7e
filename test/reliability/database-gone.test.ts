import postgres from 'postgres';
import { afterAll, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { StoreError } from '../../src/errors.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import type { Store } from '../../src/store/types.ts';
import { freshDatabase, openTestStore, PG_BASE_URL, type Dialect } from '../support/databases.ts';
import { spawnCli, spawnProcess, type Child, type Exit } from '../support/process.ts';
import { waitFor, WaitTimeout } from '../support/wait.ts';
import { childEnv } from '../sync/helpers.ts';
import { Figures } from './figures.ts';
import { DAY, againstTruth, dbRows, runEngine, syncSettings, type EngineRun } from './sync-harness.ts';

/**
 * The database goes away in the middle of a run: Postgres backends terminated (pg_terminate_backend, as a failover
 * or an admin would), and a SQLite file locked by another process (BEGIN EXCLUSIVE), shorter and longer than the
 * busy timeout (5 s). The run either waits and completes or fails with a StoreError; either way the database holds
 * whole pages only (its rows are exactly the first N rows of the ground truth, N the pages' recorded records), and
 * the next run completes the ground truth.
 */

const START = Date.parse('2026-01-08T00:00:00Z');
const SETTINGS = syncSettings({ pageSize: 50, stepMs: 6 * 3_600_000 });
/** The first incremental run starts SYNC_INITIAL_HISTORY before now. */
const HISTORY_START = START - SETTINGS.initialHistoryMs;
const figures = new Figures({ section: 'database-gone', title: 'The database goes away mid-run' }, [
  'database-gone/postgres-lock-terminated',
  'database-gone/postgres-terminated',
  'database-gone/sqlite-locked-1.5s',
  'database-gone/sqlite-locked-7s',
]);
afterAll(() => void figures.publish());

async function world(backend: Dialect, label: string, seed: number) {
  const clock = new FakeClock(START);
  const sandbox = await startSandbox({ clock, seed, customers: 1, dataStart: START - 3 * DAY });
  const db = await freshDatabase(backend, label);
  // A recognisable application_name singles out this store's backends in pg_stat_activity.
  const appName = `osrel_${label}_${process.pid}`;
  const database = backend === 'postgres' ? { ...db.database, url: `${db.database.url}&application_name=${appName}` } : db.database;
  const store = await openTestStore({ ...db, database });
  return { clock, sandbox, db, store, appName, customer: sandbox.customers[0]!.id };
}

async function occupancyPages(store: Store): Promise<{ pages: number; records: number }> {
  const [row] = await store.query<{ p: unknown; r: unknown }>("SELECT coalesce(sum(pages), 0) AS p, coalesce(sum(records), 0) AS r FROM sync_runs WHERE stream = 'occupancy'");
  return { pages: Number(row?.p ?? 0), records: Number(row?.r ?? 0) };
}

/** Whole pages only: the stored rows are exactly the first `records` rows of the truth in (created, id) order. */
async function expectWholePages(store: Store, sandbox: Sandbox, customer: string): Promise<number> {
  const { records } = await occupancyPages(store);
  const key = (r: { floorSpaceId: string; observedAt: string }) => `${r.floorSpaceId}|${r.observedAt}`;
  const prefix = [...sandbox.truth.observations(customer, { from: HISTORY_START, to: START })].slice(0, records).map((o) => `${o.floorSpaceId}|${o.created}`).sort();
  const stored = (await dbRows(store, customer)).map(key).sort();
  expect(stored.length, 'rows stored = records of committed pages').toBe(records);
  expect(stored).toEqual(prefix);
  return records;
}

async function expectTruth(store: Store, sandbox: Sandbox, customer: string) {
  const state = await store.getState(customer, 'occupancy');
  const held = againstTruth(await dbRows(store, customer), sandbox, customer, state!.watermark!, HISTORY_START);
  expect(held.stored).toEqual(held.truth);
  expect(held.strays).toEqual([]);
  return held.truth.length;
}

const outcomeOf = (run: EngineRun) => run.report.outcomes.find((o) => o.stream === 'occupancy')!;

type Ending = 'completed' | 'failed-cleanly' | 'crashed' | 'hung';

/** How a child run ended after its backends were terminated; a hung child is killed after 30 s. */
async function ending(child: Child): Promise<Ending> {
  let exit: Exit;
  try {
    exit = await child.exit(30_000, 'the sync to end after its database went away');
  } catch (error) {
    if (!(error instanceof WaitTimeout)) throw error;
    await child.kill('SIGKILL');
    return 'hung';
  }
  if (exit.code === 0) return 'completed';
  // An uncaught exception prints the error and its stack as plain lines, then Node's version, before main() could
  // say anything; a clean failure is logged (JSON lines, which may quote a driver's stack) and exits 1.
  const stderr = child.stderr();
  const crashed = /^Node\.js v\d/m.test(stderr) || /^\w*(Error|Exception)\b/m.test(stderr) || /uncaught/i.test(stderr);
  return crashed || exit.code !== 1 ? 'crashed' : 'failed-cleanly';
}

/**
 * Whole pages only, without knowing where the run started. Each page commits with its run's counters in one
 * transaction, so no row is stored without its page's count: rows <= committed records (a window read again after
 * its bounds moved, as a run's last one does, upserts rows already there), each row one of the truth. The CLI reads
 * windows in parallel (SYNC_WINDOW_CONCURRENCY): the rows are pages of several windows, not one prefix of the truth.
 */
async function expectWholePagesFromFirst(store: Store, sandbox: Sandbox, customer: string): Promise<void> {
  const { records } = await occupancyPages(store);
  const stored = (await dbRows(store, customer)).map((r) => `${r.floorSpaceId}|${r.observedAt}`).sort();
  expect(stored.length, 'rows stored <= records of committed pages').toBeLessThanOrEqual(records);
  if (records === 0) return;
  const first = stored.map((k) => k.split('|')[1]!).sort()[0]!;
  const truth = new Set([...sandbox.truth.observations(customer, { from: first })].map((o) => `${o.floorSpaceId}|${o.created}`));
  expect(stored.filter((k) => !truth.has(k)), 'rows that are not in the truth').toEqual([]);
}

async function pgChildWorld(label: string, seed: number) {
  const now = Date.now();
  const sandbox = await startSandbox({ seed, customers: 1, dataStart: Math.floor((now - 3 * DAY) / 300_000) * 300_000, lateArrivalMaxMs: 0 });
  const db = await freshDatabase('postgres', label);
  const appName = `osrel_${label}_${process.pid}`;
  const store = await openTestStore(db);
  // No lookback (and no late arrivals): every committed record is a new row, so rows = records proves whole pages.
  const env = childEnv(sandbox, `${db.url}&application_name=${appName}`, { SYNC_PAGE_SIZE: '50', SYNC_STEP: '6h', SYNC_SETTLE_DELAY: '1s', SYNC_INITIAL_HISTORY: '2d', SYNC_LOOKBACK: '0s' });
  return { sandbox, db, store, env, appName, customer: sandbox.customers[0]!.id };
}

const endings: Record<Ending, number> = { completed: 0, 'failed-cleanly': 0, crashed: 0, hung: 0 };
Object.assign(figures.measured, endings);

it('Postgres backends of a sync process terminated mid-run: whole pages only after each, and the next run completes the ground truth', async () => {
  const w = await pgChildWorld('pgkill', 31);
  const admin = postgres(PG_BASE_URL, { max: 1, onnotice: () => {} });
  let terminated = 0;
  const crashes: string[] = [];
  const rounds = 5;
  try {
    for (let round = 0; round < rounds; round++) {
      const before = await occupancyPages(w.store);
      const child = spawnCli(['sync'], { env: w.env });
      await waitFor(async () => (await occupancyPages(w.store)).pages >= before.pages + 3 + round, `${3 + round} more committed pages`, 60_000, { unless: child.exited });
      const killed = await admin<{ ok: boolean }[]>`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = ${w.appName}`;
      terminated += killed.filter((k) => k.ok).length;
      const end = await ending(child);
      endings[end] += 1;
      figures.measured[end] = endings[end];
      if (end === 'crashed' || end === 'hung') crashes.push(`${end} (exit ${(await child.exit()).code}): ${child.stderr().slice(-3000)}`);
      await expectWholePagesFromFirst(w.store, w.sandbox, w.customer);
    }
    expect(terminated).toBeGreaterThan(0);
    expect(crashes, 'every killed run completed or failed cleanly').toEqual([]);
    const final = spawnCli(['sync'], { env: w.env });
    expect((await final.exit(120_000, 'the next sync to complete')).code, final.stderr()).toBe(0);
    const state = await w.store.getState(w.customer, 'occupancy');
    const stored = await dbRows(w.store, w.customer);
    const held = againstTruth(stored, w.sandbox, w.customer, state!.watermark!);
    expect(held.stored).toEqual(held.truth);
    expect(held.strays).toEqual([]);
    figures.record({ key: 'database-gone/postgres-terminated', tried: 'pg_terminate_backend on every backend of a `sync` process, after 3, 4, 5, 6, 7 more committed pages', count: rounds, held: 'whole pages only after each (rows <= committed records, each one of the truth; windows read in parallel); each killed run completed or failed cleanly (exit 1), none crashed or hung; the next run = ground truth' });
  } finally {
    await admin.end();
    await w.store.close();
    await w.sandbox.close();
    await w.db.drop();
  }
}, 240_000);

// Formerly a crash: the advisory locks lived on a reserved connection (`sql.reserve()`), and postgres.js 3.4.9 throws
// an uncaught TypeError ("Cannot read properties of null (reading 'write')", porsager/postgres#1208, #1154) when the
// lock release is sent on it after its backend was terminated. The locks now live on a dedicated single-connection
// client that notices the closed session: the run stops committing (the lock is gone) and fails with a StoreError.
it('a sync whose lock session is terminated stops committing and fails cleanly with a StoreError (exit 1), never an uncaught exception', async () => {
  const w = await pgChildWorld('pglock', 32);
  const admin = postgres(PG_BASE_URL, { max: 1, onnotice: () => {} });
  try {
    const child = spawnCli(['sync'], { env: w.env });
    await waitFor(async () => (await occupancyPages(w.store)).pages >= 3, 'three committed pages', 60_000, { unless: child.exited });
    // Only the backend holding the run lock: the pool's other connections carry on. The run lock is a session's, held
    // while it is idle; a commit's own advisory locks (the aggregates' per building, the month partitions') are its
    // transaction's, held by a connection in a transaction.
    const killed = await admin<{ ok: boolean }[]>`
      SELECT pg_terminate_backend(a.pid) AS ok FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
      WHERE a.application_name = ${w.appName} AND l.locktype = 'advisory' AND l.granted AND a.state = 'idle'`;
    expect(killed.length, child.stderr().slice(0, 2000)).toBeGreaterThan(0);
    const end = await ending(child);
    expect(end, child.stderr().slice(0, 2000)).toBe('failed-cleanly');
    // The loss is said: by the run ("run lock ... was lost") or, when a statement of the run met the terminated
    // session first, by the store as the session ended (the run then fails with the server's own reason).
    expect(child.stderr()).toMatch(/run lock of .* was lost|the database session holding the run locks ended: the locks are lost/);
    // No page after the loss was seen: the failed run's last page is whole, and the next run completes the truth.
    await expectWholePagesFromFirst(w.store, w.sandbox, w.customer);
    const final = spawnCli(['sync'], { env: w.env });
    expect((await final.exit(90_000, 'the next sync to complete')).code, final.stderr()).toBe(0);
    const state = await w.store.getState(w.customer, 'occupancy');
    const stored = await dbRows(w.store, w.customer);
    const held = againstTruth(stored, w.sandbox, w.customer, state!.watermark!);
    expect(held.stored).toEqual(held.truth);
    expect(held.strays).toEqual([]);
    figures.record({
      key: 'database-gone/postgres-lock-terminated',
      tried: "pg_terminate_backend on the backend holding the run's advisory lock, after 3 committed pages",
      count: 1,
      held: 'the run stopped committing (lock lost) and failed cleanly with StoreError (exit 1, no uncaught exception); whole pages only; the next run = ground truth',
    });
  } finally {
    await admin.end();
    await w.store.close();
    await w.sandbox.close();
    await w.db.drop();
  }
}, 120_000);

/** A separate process holding the SQLite file's write lock (BEGIN EXCLUSIVE) for `holdMs` once told to. */
function lockHolder(path: string) {
  const script = `
    const Database = require('better-sqlite3');
    // A long busy timeout: the holder must get the lock however busy the writer keeps it, not give up after 5 s.
    const db = new Database(${JSON.stringify(path)}, { timeout: 60000 });
    const attempt = (fn) => { try { fn(); } catch (error) { console.log('error: ' + error.message); process.exit(1); } };
    require('readline').createInterface({ input: process.stdin }).on('line', (line) => {
      const holdMs = Number(line);
      attempt(() => db.exec('BEGIN EXCLUSIVE'));
      console.log('locked');
      setTimeout(() => attempt(() => { db.exec('COMMIT'); console.log('released'); }), holdMs);
    });
    console.log('ready');`;
  const child = spawnProcess(process.execPath, ['-e', script], { stdin: 'pipe', stderr: 'inherit', name: 'the SQLite lock holder' });
  // Waits resolve from every line seen so far, not only from lines still to come: this process's event loop can be
  // blocked (better-sqlite3 waits synchronously for the lock) for longer than the hold, so "locked" and "released"
  // may arrive together, both before anyone waits for "released". A holder that failed prints why and exits: the
  // wait then fails with its output instead of running into the test timeout.
  const ready = child.waitForLine('ready', 'the lock holder to start');
  return {
    ready,
    async lock(holdMs: number) {
      const locked = child.waitForLine('locked', 'the lock holder to take BEGIN EXCLUSIVE');
      child.write(`${holdMs}\n`);
      await locked;
      return child.waitForLine('released', 'the lock holder to commit', { timeoutMs: holdMs + 30_000 });
    },
    stop: () => child.kill('SIGKILL'),
  };
}

for (const [holdMs, expected] of [[1_500, 'waits within the busy timeout and completes'], [7_000, 'fails with a StoreError after the busy timeout']] as const) {
  it(`a SQLite file locked by another process for ${holdMs / 1000} s mid-run: the run ${expected}; whole pages only; the next run completes`, async () => {
    const w = await world('sqlite', `sqlitelock${holdMs}`, 41);
    const holder = lockHolder(w.db.database.sqlitePath!);
    try {
      await holder.ready;
      const running = runEngine({ store: w.store, sandbox: w.sandbox, clock: w.clock, settings: SETTINGS });
      // better-sqlite3 waits synchronously: poll from here until some pages are in, then lock from the other process.
      const fivePages = await waitFor(async () => (await occupancyPages(w.store)).pages >= 5, 'five committed pages', 60_000, { everyMs: 5, unless: running });
      if (!fivePages) throw new Error(`the run ended before 5 pages: ${JSON.stringify(outcomeOf(await running))}`);
      const released = await holder.lock(holdMs);
      const run = await running;
      const outcome = outcomeOf(run);
      if (holdMs < 5_000) expect(outcome.status).toBe('succeeded');
      else {
        expect(outcome.status).toBe('failed');
        expect(outcome.error, String(outcome.error)).toBeInstanceOf(StoreError);
        expect(String((outcome.error as Error).message)).toMatch(/lock|busy/i);
        await expectWholePages(w.store, w.sandbox, w.customer);
      }
      await released;
      const final = await runEngine({ store: w.store, sandbox: w.sandbox, clock: w.clock, settings: SETTINGS });
      expect(outcomeOf(final).status).toBe('succeeded');
      const count = await expectTruth(w.store, w.sandbox, w.customer);
      figures.record({
        key: `database-gone/sqlite-locked-${holdMs / 1000}s`,
        tried: `another process holds BEGIN EXCLUSIVE for ${holdMs / 1000} s after 5 committed pages (busy timeout 5 s)`,
        count: 1,
        held: `${holdMs < 5_000 ? 'the run waited and completed' : 'the run failed with StoreError (database locked), whole pages only'}; next run = ground truth (${count.toLocaleString('en-US')} rows)`,
      });
    } finally {
      await holder.stop();
      await w.store.close();
      await w.sandbox.close();
      await w.db.drop();
    }
  }, 120_000);
}
