import { afterAll, describe, expect, it, type TestContext } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import type { Store } from '../../src/store/types.ts';
import { freshDatabase, openTestStore, PG_BASE_URL, requirePostgres } from '../support/databases.ts';
import { spawnCli } from '../support/process.ts';
import { waitFor } from '../support/wait.ts';
import { childEnv } from '../sync/helpers.ts';
import { blackHoleProxy } from './black-hole-proxy.ts';
import { Figures } from './figures.ts';
import { DAY, againstTruth, dbRows } from './sync-harness.ts';

/**
 * Exits that wait for the network (issue 36): a `sync` whose database, or whose API, goes silent mid-run (a proxy that
 * keeps every connection open and forwards nothing, not even a goodbye) ends within the bound docs/reliability.md
 * ("Exits") gives, with one clear line, and what it committed stays committed: the next run completes the truth.
 *
 * The bounds below are the documented ones for the settings used here, plus SLACK_MS: a loaded 2-core machine runs
 * timers late, and what is proved is an end within a bound, instead of a wait for the network to come back
 * (formerly: not before the path was back, still running 60 s in).
 */

const SLACK_MS = 15_000;
const figures = new Figures({ section: 'exits', title: 'Exits that wait for the network: a database or an API that goes silent mid-run' }, [
  'exits/sync-postgres-silent',
  'exits/sync-api-silent-sigterm',
]);
afterAll(() => void figures.publish());
/** DATABASE_CONNECT_TIMEOUT here (the bounds scale with it). */
const CONNECT_S = 2;
/** docs/reliability.md: given up within 15 s + 2 x DATABASE_CONNECT_TIMEOUT, then out within DATABASE_CONNECT_TIMEOUT + 5 s. */
const SYNC_SILENT_DATABASE_MS = 20_000 + 3 * CONNECT_S * 1000;
/** docs/reliability.md: SIGTERM ends what waits on the API at once; recording the run and closing, a few seconds. */
const SYNC_SIGTERM_SILENT_API_MS = 10_000;

/** A child's output for a failed check's message: its first line names the check, then the output's last lines. */
function outputOf(child: { stdout(): string; stderr(): string }): string {
  return `stdout: ${child.stdout().trim().split('\n').slice(-3).join(' | ')}\nstderr (last 3000 characters):\n${child.stderr().slice(-3000)}`;
}

/** Each test's own clean-ups (the tests run concurrently), undone in reverse order when it finishes. */
function cleanupsOf(context: TestContext): Array<() => unknown> {
  const list: Array<() => unknown> = [];
  context.onTestFinished(async () => {
    for (const c of list.splice(0).reverse()) await c();
  });
  return list;
}

async function committed(store: Store): Promise<{ pages: number; records: number }> {
  const [row] = await store.query<{ p: unknown; r: unknown }>("SELECT coalesce(sum(pages), 0) AS p, coalesce(sum(records), 0) AS r FROM sync_runs WHERE stream = 'occupancy'");
  return { pages: Number(row?.p ?? 0), records: Number(row?.r ?? 0) };
}

/** Whole pages only: no row without its page's count, each row one of the truth (windows may be read in parallel). */
async function expectWholePages(store: Store, sandbox: Sandbox, customer: string): Promise<void> {
  const { records } = await committed(store);
  const stored = (await dbRows(store, customer)).map((r) => `${r.floorSpaceId}|${r.observedAt}`);
  expect(stored.length, 'rows stored <= records of committed pages').toBeLessThanOrEqual(records);
  const truth = new Set([...sandbox.truth.observations(customer, {})].map((o) => `${o.floorSpaceId}|${o.created}`));
  expect(stored.filter((k) => !truth.has(k)), 'rows that are not in the truth').toEqual([]);
}

/** After a clean run: the stored rows are the truth from the first stored reading up to the watermark. */
async function expectTruth(store: Store, sandbox: Sandbox, customer: string): Promise<void> {
  const state = await store.getState(customer, 'occupancy');
  const stored = await dbRows(store, customer);
  const held = againstTruth(stored, sandbox, customer, state!.watermark!);
  expect(held.stored).toEqual(held.truth);
  expect(held.strays).toEqual([]);
}

async function world(cleanups: Array<() => unknown>, label: string, seed: number, dialect: 'sqlite' | 'postgres') {
  const now = Date.now();
  // Answers 20 ms late: a run lasts long enough to be cut in the middle.
  const sandbox = await startSandbox({ seed, customers: 1, dataStart: Math.floor((now - 3 * DAY) / 300_000) * 300_000, lateArrivalMaxMs: 0, faults: { seed, latencyMs: 20 } });
  cleanups.push(() => sandbox.close());
  const db = await freshDatabase(dialect, label);
  cleanups.push(() => db.drop());
  const store = await openTestStore(db);
  cleanups.push(() => store.close());
  const settings = { LOG_LEVEL: 'warn', SYNC_PAGE_SIZE: '50', SYNC_STEP: '6h', SYNC_SETTLE_DELAY: '1s', SYNC_INITIAL_HISTORY: '2d', SYNC_LOOKBACK: '0s', DATABASE_CONNECT_TIMEOUT: `${CONNECT_S}s` };
  return { sandbox, db, store, settings, customer: sandbox.customers[0]!.id };
}

describe.concurrent('exits that wait for the network', () => {
  it('sync on a Postgres that goes silent mid-run (black-holed, connections kept open): exit 1 within its bound, one line saying so, whole pages only; the next run completes', async (context) => {
    await requirePostgres();
    const cleanups = cleanupsOf(context);
    const w = await world(cleanups, 'bh_sync', 61, 'postgres');
    const target = new URL(PG_BASE_URL);
    const proxy = await blackHoleProxy({ host: target.hostname, port: Number(target.port || 5432) });
    cleanups.push(() => proxy.close());
    const viaProxy = w.db.url.replace(`${target.host}/`, `127.0.0.1:${proxy.port}/`);
    const child = spawnCli(['sync'], { env: childEnv(w.sandbox, viaProxy, w.settings) });
    cleanups.push(() => child.kill('SIGKILL'));
    await waitFor(async () => (await committed(w.store)).pages >= 3, 'three committed pages', 60_000, { unless: child.exited });
    proxy.blackHole();
    const silentAt = performance.now();
    const exit = await child.exit(SYNC_SILENT_DATABASE_MS + SLACK_MS, 'the sync to end after its database went silent');
    const tookMs = performance.now() - silentAt;
    expect(exit, `the exit; ${outputOf(child)}`).toEqual({ code: 1, signal: null });
    expect(tookMs, `the time to exit; ${outputOf(child)}`).toBeLessThan(SYNC_SILENT_DATABASE_MS + SLACK_MS);
    const failures = child.stderr().split('\n').filter((l) => /^ {2}\S+ occupancy: failed: /.test(l));
    expect(failures, `the failure lines; ${outputOf(child)}`).toEqual([expect.stringMatching(/failed: no answer from Postgres at postgres:\/\/postgres@127\.0\.0\.1:\d+\/test.* for \d+ s while .*the next run resumes from the last committed page\. Fix: check that the server is up and reachable from here$/)]);
    expect(child.stdout()).toMatch(/^sync: 1 customer, 4 streams, \d+ pages, [\d,]+ records, 1 failed in \d+\.\ds$/m);

    // Nothing lost: the committed pages are whole, and a run with the path back completes the truth. The server still
    // holds the silent process's sessions (and its run locks) until it hears of their end, as it does once a path comes
    // back (the next keep-alive probe is refused): here, when the proxy closes their connections.
    await expectWholePages(w.store, w.sandbox, w.customer);
    await proxy.close();
    const sessions = `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'occupancy-sync (pid ${child.process.pid})'`;
    await waitFor(async () => (await w.store.query<{ n: number }>(sessions))[0]!.n === 0, 'the server to end the silent sessions', 30_000);
    const next = spawnCli(['sync'], { env: childEnv(w.sandbox, w.db.url, w.settings) });
    cleanups.push(() => next.kill('SIGKILL'));
    expect((await next.exit(60_000, 'the next sync to complete')).code, next.stderr()).toBe(0);
    await expectTruth(w.store, w.sandbox, w.customer);
    figures.measured['sync-postgres-silent-ms'] = Math.round(tookMs);
    figures.record({
      key: 'exits/sync-postgres-silent',
      tried: '`sync` on Postgres behind a proxy that goes silent after 3 committed pages (connections kept open, no goodbye answered), DATABASE_CONNECT_TIMEOUT=2s',
      count: 1,
      held:
        'exit 1 within the documented bound (15 s + 2 x DATABASE_CONNECT_TIMEOUT to give the wait up, DATABASE_CONNECT_TIMEOUT + 5 s to leave: 26 s here; ' +
        'was: not before the path came back), one line naming the database and the fix; whole pages only; the next run completes the truth',
    });
  }, 120_000);

  it('sync on SQLite whose API goes silent mid-run, then SIGTERM: exit 0 at once, interrupted, committed pages kept; the next run completes', async (context) => {
    const cleanups = cleanupsOf(context);
    const w = await world(cleanups, 'bh_api', 62, 'sqlite');
    const api = new URL(w.sandbox.url);
    const proxy = await blackHoleProxy({ host: api.hostname, port: Number(api.port) });
    cleanups.push(() => proxy.close());
    const viaProxy = { ...childEnv(w.sandbox, w.db.url, w.settings), API_BASE_URL: w.sandbox.url.replace(`:${api.port}`, `:${proxy.port}`) };
    const child = spawnCli(['sync'], { env: viaProxy });
    cleanups.push(() => child.kill('SIGKILL'));
    await waitFor(async () => (await committed(w.store)).pages >= 3, 'three committed pages', 60_000, { unless: child.exited });
    proxy.blackHole();
    // A request in flight: one sent into the silence, or one sent just before it whose answer the silence dropped.
    await waitFor(() => proxy.swallowed() + proxy.dropped() > 0, 'a request to go into the silence', 30_000, { unless: child.exited });
    const stoppedAt = performance.now();
    const exit = await child.kill('SIGTERM', SYNC_SIGTERM_SILENT_API_MS + SLACK_MS);
    const tookMs = performance.now() - stoppedAt;
    expect(exit, `the exit; ${outputOf(child)}`).toEqual({ code: 0, signal: null });
    expect(tookMs, `the time to exit; ${outputOf(child)}`).toBeLessThan(SYNC_SIGTERM_SILENT_API_MS + SLACK_MS);
    expect(child.stdout()).toMatch(/^sync: 1 customer, 4 streams, .* \(interrupted: the next run resumes from the last committed page\)$/m);

    await expectWholePages(w.store, w.sandbox, w.customer);
    const next = spawnCli(['sync'], { env: childEnv(w.sandbox, w.db.url, w.settings) });
    cleanups.push(() => next.kill('SIGKILL'));
    expect((await next.exit(60_000, 'the next sync to complete')).code, next.stderr()).toBe(0);
    await expectTruth(w.store, w.sandbox, w.customer);
    figures.measured['sync-api-silent-sigterm-ms'] = Math.round(tookMs);
    figures.record({
      key: 'exits/sync-api-silent-sigterm',
      tried: '`sync` on SQLite whose API goes silent (a proxy keeps the connections open) after 3 committed pages, a request in flight, then SIGTERM',
      count: 1,
      held: 'exit 0 within the documented 10 s, the run recorded interrupted; whole pages only; the next run completes the truth',
    });
  }, 120_000);
});

