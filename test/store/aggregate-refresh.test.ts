import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import { streams as allStreams } from '../../jobs/index.ts';
import { aggregateSettings, reconcileAfterRun, reconcileAggregates } from '../../src/app/aggregates.ts';
import { FakeClock } from '../../src/clock.ts';
import { DEFAULT_WORKING_TIME } from '../../src/config-working-time.ts';
import { LOCK_SPACE } from '../../src/store/aggregate-calendars.ts';
import { REFRESH_AFTER_MS, REFRESH_INTERVAL_MS } from '../../src/store/run-refresh.ts';
import { memoryLogger, silentLogger } from '../../src/logger.ts';
import type { OccupancyRecord, Store } from '../../src/store/types.ts';
import type { SyncReport } from '../../src/sync/engine.ts';
import { DIALECTS, freshDatabase, openTestStore, PG_BASE_URL, type TestDatabase } from '../support/databases.ts';
import { waitFor } from '../support/wait.ts';
import { dumpAggregates } from '../sync/aggregate-dump.ts';

/**
 * The deferred aggregates (docs/reporting.md, "When the aggregates are current"): poll pages record what they made
 * stale and a refresh recomputes it. A run's end refreshes every customer of it, a failed stream's included; a
 * refresh racing a page that widens a space's range leaves the widened range pending, and the next refresh makes
 * the aggregates equal to a rebuild.
 */

const SETTINGS = aggregateSettings({ workingTime: DEFAULT_WORKING_TIME }, allStreams);
const T0 = Date.parse('2026-03-02T08:00:00.000Z');
const MIN = 60_000;

function readings(space: string, from: number, count: number): OccupancyRecord[] {
  return Array.from({ length: count }, (_, i) => ({ floorSpaceId: space, observedAt: new Date(from + i * 5 * MIN).toISOString(), occupancyStatus: i % 3 === 0 ? 'Unoccupied' : 'CurrentlyOccupied', headcount: i % 4, eventId: null }));
}

function page(customerId: string, records: OccupancyRecord[], runId?: number) {
  const checkpoint = { customerId, stateKey: 'occupancy', watermark: null, windowStart: null, windowEnd: null, pageCursor: null, rangeStart: null, rangeEnd: null };
  return { customerId, sink: 'occupancy' as const, records, at: '2026-03-10T00:00:00.000Z', checkpoint, ...(runId !== undefined && { runId }) };
}

async function buckets(store: Store, customerId: string): Promise<number> {
  const [row] = await store.query<{ n: unknown }>(
    'SELECT count(*) AS n FROM occupancy_buckets b JOIN floor_spaces f ON f.floor_space_key = b.floor_space_key WHERE f.customer_id = $1',
    [customerId],
  );
  return Number(row?.n ?? 0);
}

async function pageRows(store: Store): Promise<number> {
  const [row] = await store.query<{ n: unknown }>('SELECT count(*) AS n FROM aggregate_page_invalidations');
  return Number(row?.n ?? 0);
}

describe.each(DIALECTS)('refreshing the deferred aggregates (%s)', (dialect) => {
  let db: TestDatabase | undefined;
  const stores: Store[] = [];
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
    await db?.drop();
  });

  it("a run's end refreshes each customer of it, one whose stream failed included; a customer whose refresh fails is one warning", { timeout: 30_000 }, async () => {
    db = await freshDatabase(dialect, 'agg-after-run', { migrate: true });
    const store = await openTestStore(db);
    stores.push(store);
    await store.commitPage(page('c1', readings('s1', T0, 30)));
    await store.commitPage(page('c2', readings('s2', T0, 30)));
    expect((await store.pendingAggregates()).map((p) => [p.customerId, p.floorSpaces])).toEqual([['c1', 1], ['c2', 1]]);
    expect(await buckets(store, 'c1')).toBe(0);

    const outcome = (customerId: string, status: 'failed' | 'succeeded') => ({ customerId, stream: 'occupancy', stateKey: 'occupancy', mode: 'incremental', status, pages: 1, records: 30 });
    const report = { outcomes: [outcome('c2', 'succeeded'), outcome('c1', 'failed')], startedAt: 0, finishedAt: 0 } as unknown as SyncReport;
    const { logger, records } = memoryLogger();
    await reconcileAfterRun(
      report,
      (customers) => (customers[0]!.id === 'c2' ? Promise.reject(new Error('database went away')) : reconcileAggregates({ store, config: { workingTime: DEFAULT_WORKING_TIME }, streams: allStreams, customers, logger: silentLogger })),
      logger,
    );
    // c1's stream failed after its page committed: that page is data, and its buckets are current now.
    expect((await store.pendingAggregates()).map((p) => p.customerId)).toEqual(['c2']);
    expect(await buckets(store, 'c1')).toBeGreaterThan(0);
    const warnings = records().filter((r) => r.level === 40).map((r) => r.msg);
    expect(warnings).toEqual(['the aggregates of customer c2 were not brought up to date after the run (the next run does it first): database went away']);
  });

  it('one refresh folds every page left, more than one fold takes at once (100), and the result equals a rebuild', { timeout: 60_000 }, async () => {
    db = await freshDatabase(dialect, 'agg-fold-bound', { migrate: true });
    // A clock that stands still: no refresh starts beside the 101 commits, however long a loaded machine takes for them
    // (on the system clock, one did past a second on Postgres and folded the first pages before the count below).
    const store = await openTestStore(db, { clock: new FakeClock(Date.parse('2026-03-10T00:00:00.000Z')) });
    stores.push(store);
    await store.reconcileAggregates('c1', SETTINGS);
    // 101 pages of one reading each, a space's readings spread over pages as a late stream delivers them.
    for (let i = 0; i < 101; i++) await store.commitPage(page('c1', readings(`s${i % 7}`, T0 + i * 5 * MIN, 1)));
    const [pending] = await store.pendingAggregates('c1');
    expect([pending?.floorSpaces, pending?.from, pending?.through]).toEqual([7, new Date(T0).toISOString(), new Date(T0 + 100 * 5 * MIN).toISOString()]);
    const done = await store.refreshAggregates('c1');
    expect([done.spaces, done.left]).toEqual([7, 0]);
    expect(await store.pendingAggregates()).toEqual([]);
    const kept = await dumpAggregates(store);
    await store.rebuildAggregates({ customerId: 'c1' }, SETTINGS);
    expect(await dumpAggregates(store)).toEqual(kept);
  });

  it('a long run refreshes beside its commits: at 15 s of pages whatever they hold, on Postgres after 1 s once they span two hours a floor space (the injected clock)', { timeout: 30_000 }, async () => {
    db = await freshDatabase(dialect, 'agg-interval', { migrate: true });
    const clock = new FakeClock(Date.parse('2026-03-10T00:00:00.000Z'));
    const store = await openTestStore(db, { clock });
    stores.push(store);
    // An hour of two spaces (12 readings each): less than two hours a space, so only the 15 s bound refreshes it.
    await store.commitPage(page('c1', readings('s1', T0, 12)));
    clock.advance(REFRESH_INTERVAL_MS - 1);
    await store.commitPage(page('c1', readings('s2', T0, 12)));
    expect((await store.pendingAggregates('c1'))[0]?.floorSpaces).toBe(2);
    clock.advance(1);
    // This commit finds the oldest page 15 s old: a refresh starts beside the run and takes all three pages. Each
    // space's hour is the bucket its last reading is in, which the run may still be writing: the refresh leaves it
    // pending, as one page row of the three spaces' ranges.
    await store.commitPage(page('c1', readings('s3', T0, 12)));
    await waitFor(async () => (await pageRows(store)) === 1, 'the refresh beside the run', 10_000);
    expect(await buckets(store, 'c1')).toBe(0);
    expect(await store.pendingAggregates('c1')).toMatchObject([{ floorSpaces: 3, from: new Date(T0).toISOString(), through: new Date(T0 + 55 * MIN).toISOString() }]);
    // The count starts again at the next page: on Postgres three hours of one space are due a second after it, not
    // before; on SQLite (no refresh overlaps its commits) only at 15 s.
    await store.commitPage(page('c1', readings('s1', T0 + 60 * MIN, 36)));
    clock.advance(REFRESH_AFTER_MS - 1);
    await store.commitPage(page('c1', readings('s1', T0 + 4 * 60 * MIN, 1)));
    expect(await pageRows(store)).toBe(3);
    clock.advance(1);
    let last = T0 + 5 * 60 * MIN;
    await store.commitPage(page('c1', readings('s1', last, 1)));
    if (dialect === 'sqlite') {
      expect(await pageRows(store)).toBe(4);
      clock.advance(REFRESH_INTERVAL_MS - REFRESH_AFTER_MS);
      last = T0 + 6 * 60 * MIN;
      await store.commitPage(page('c1', readings('s1', last, 1)));
    }
    await waitFor(async () => (await buckets(store, 'c1')) > 0, 'the refresh beside the run of three hours a space', 10_000);
    // s1's buckets up to the hour of its last reading, not that hour: it and s2's and s3's hours stay pending.
    const [span] = await store.query<{ a: unknown; z: unknown }>('SELECT min(start_ms) AS a, max(start_ms) AS z FROM occupancy_buckets');
    expect([Number(span!.a), Number(span!.z)]).toEqual([T0, last - 60 * MIN]);
    // Nor is their day summed yet: the refresh of that last hour sums it, these buckets included.
    expect(await store.query('SELECT local_date FROM occupancy_days')).toEqual([]);
    expect((await store.pendingAggregates('c1'))[0]?.floorSpaces).toBe(3);
    expect((await store.refreshAggregates('c1')).left).toBe(0);
    expect(await store.pendingAggregates('c1')).toEqual([]);
    expect(await store.query('SELECT DISTINCT local_date FROM occupancy_days')).toEqual([{ local_date: '2026-03-02' }]);
    const kept = await dumpAggregates(store);
    await store.rebuildAggregates({ customerId: 'c1' }, SETTINGS);
    expect(await dumpAggregates(store)).toEqual(kept);
  });

  it.runIf(dialect === 'postgres')("a refresh beside the run holds up none of its commits; the run's end and closing the store wait for it", { timeout: 30_000 }, async () => {
    db = await freshDatabase(dialect, 'agg-beside', { migrate: true });
    const schema = db.schema!;
    const clock = new FakeClock(Date.parse('2026-03-10T00:00:00.000Z'));
    const store = await openTestStore(db, { clock });
    await store.commitPage(page('c1', readings('s1', T0, 36)));
    const admin = postgres(PG_BASE_URL, { max: 2, onnotice: () => {} });
    const held = await admin.reserve();
    let closed = false;
    try {
      // The lock of the spaces of no known building, as another process's refresh of them holds it.
      await held`BEGIN`;
      await held.unsafe(`SELECT pg_advisory_xact_lock(${LOCK_SPACE}::int4, hashtext('${schema}:' || '["c1",""]'))`);
      clock.advance(REFRESH_AFTER_MS);
      await store.commitPage(page('c1', readings('s1', T0 + 3 * 60 * MIN, 1)));
      await waitFor(async () => Number((await admin.unsafe(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%pg_advisory_xact_lock%' AND pid <> ${Number((await held`SELECT pg_backend_pid() AS p`)[0]!.p)}`))[0]!.n) > 0, 'the refresh beside the run waiting for the lock', 10_000);
      // The run goes on: its next pages commit while the refresh waits.
      await store.commitPage(page('c1', readings('s2', T0, 12)));
      await store.commitPage(page('c1', readings('s3', T0, 12)));
      // Closing waits for the refresh: had it closed the database under it, s1's range would still be pending below.
      const closing = store.close().then(() => (closed = true));
      await held`COMMIT`;
      await closing;
    } finally {
      held.release();
      await admin.end();
      if (!closed) await store.close();
    }
    // The refresh beside the run took the first two pages and left s1's last hour; the last two pages wait for the
    // next refresh.
    const reopened = await openTestStore(db);
    stores.push(reopened);
    expect((await reopened.pendingAggregates('c1'))[0]?.floorSpaces).toBe(3);
    expect(await buckets(reopened, 'c1')).toBeGreaterThan(0);
    expect((await reopened.refreshAggregates('c1')).left).toBe(0);
    const kept = await dumpAggregates(reopened);
    await reopened.rebuildAggregates({ customerId: 'c1' }, SETTINGS);
    expect(await dumpAggregates(reopened)).toEqual(kept);
  });

  it('a webhook delivery records its range as a page does, and the store refreshes it on its own within a second; the result equals a rebuild', { timeout: 30_000 }, async () => {
    db = await freshDatabase(dialect, 'agg-delivery', { migrate: true });
    const store = await openTestStore(db);
    stores.push(store);
    await store.reconcileAggregates('c1', SETTINGS);
    await store.commitPage(page('c1', readings('s1', T0, 48)));
    const at = '2026-03-10T00:00:00.000Z';
    const late = readings('s2', T0 + 2 * 60 * MIN + 2 * MIN, 3);
    expect(await store.storeDelivery({ id: 'd1', customerId: 'c1', type: 'OccupancyChanged', createdAt: at, sentAt: at, receivedAt: at, body: '{}' }, late)).toBe('stored');
    // Nobody calls refresh: the delivery's commit started the store's own, which takes the poll page's range too.
    await waitFor(async () => (await store.pendingAggregates()).length === 0, "the store's refresh after the delivery", 10_000);
    const spaces = await store.query<{ id: string }>('SELECT DISTINCT f.floor_space_id AS id FROM occupancy_buckets b JOIN floor_spaces f ON f.floor_space_key = b.floor_space_key ORDER BY 1');
    expect(spaces.map((r) => r.id)).toEqual(['s1', 's2']);
    const kept = await dumpAggregates(store);
    await store.rebuildAggregates({ customerId: 'c1' }, SETTINGS);
    expect(await dumpAggregates(store)).toEqual(kept);
  });

  it("a delivery's range stays pending until the refresh is due, and closing the store refreshes it: a receiver stopped cleanly leaves nothing pending", { timeout: 30_000 }, async () => {
    db = await freshDatabase(dialect, 'agg-delivery-close', { migrate: true });
    const store = await openTestStore(db, { deliveryRefreshMs: 3_600_000 });
    await store.reconcileAggregates('c1', SETTINGS);
    const at = '2026-03-10T00:00:00.000Z';
    expect(await store.storeDelivery({ id: 'd1', customerId: 'c1', type: 'OccupancyChanged', createdAt: at, sentAt: at, receivedAt: at, body: '{}' }, readings('s1', T0, 4))).toBe('stored');
    // A retry of the same delivery stores nothing and makes nothing stale.
    expect(await store.storeDelivery({ id: 'd1', customerId: 'c1', type: 'OccupancyChanged', createdAt: at, sentAt: at, receivedAt: at, body: '{}' }, readings('s1', T0, 4))).toBe('duplicate');
    const [pending] = await store.pendingAggregates();
    expect([pending?.customerId, pending?.floorSpaces, pending?.from, pending?.through]).toEqual(['c1', 1, new Date(T0).toISOString(), new Date(T0 + 15 * MIN).toISOString()]);
    expect(await buckets(store, 'c1')).toBe(0);
    await store.close();
    const again = await openTestStore(db);
    stores.push(again);
    expect(await again.pendingAggregates()).toEqual([]);
    expect(await buckets(again, 'c1')).toBeGreaterThan(0);
    const kept = await dumpAggregates(again);
    await again.rebuildAggregates({ customerId: 'c1' }, SETTINGS);
    expect(await dumpAggregates(again)).toEqual(kept);
  });

  it.runIf(dialect === 'postgres')('a page that commits while a refresh runs is none of that refresh: its range stays pending for the next', { timeout: 30_000 }, async () => {
    db = await freshDatabase(dialect, 'agg-race-page', { migrate: true });
    const schema = db.schema!;
    const a = await openTestStore(db);
    const b = await openTestStore(db);
    stores.push(a, b);
    await a.reconcileAggregates('c1', SETTINGS);
    const runId = await a.startRun({ customerId: 'c1', stateKey: 'occupancy', mode: 'incremental', startedAt: '2026-03-10T00:00:00.000Z' });
    await a.commitPage(page('c1', readings('s1', T0, 12), runId));

    // Another connection holds the run's row: the widening page stops there, its readings and invalidation uncommitted.
    const admin = postgres(PG_BASE_URL, { max: 2, onnotice: () => {} });
    const held = await admin.reserve();
    try {
      await held`BEGIN`;
      await held.unsafe(`SELECT id FROM "${schema}".sync_runs WHERE id = ${runId} FOR UPDATE`);
      const widening = b.commitPage(page('c1', readings('s1', T0 + 24 * 60 * MIN, 12), runId));
      await waitFor(async () => Number((await admin.unsafe(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE sync_runs%'`))[0]!.n) > 0, 'the widening page waiting for the run row', 10_000);
      const done = await a.refreshAggregates('c1');
      expect([done.spaces, done.left]).toEqual([1, 0]);
      await held`COMMIT`;
      await widening;
    } finally {
      held.release();
      await admin.end();
    }
    const [pending] = await a.pendingAggregates('c1');
    expect([pending?.floorSpaces, pending?.from, pending?.through]).toEqual([1, new Date(T0 + 24 * 60 * MIN).toISOString(), new Date(T0 + 24 * 60 * MIN + 11 * 5 * MIN).toISOString()]);
    expect((await a.refreshAggregates('c1')).left).toBe(0);
    expect(await a.pendingAggregates()).toEqual([]);
    const kept = await dumpAggregates(a);
    await a.rebuildAggregates({ customerId: 'c1' }, SETTINGS);
    expect(await dumpAggregates(a)).toEqual(kept);
  });

  it.runIf(dialect === 'postgres')('a refresh racing a fold that widens the range it read deletes nothing of it: the widened range stays pending', { timeout: 30_000 }, async () => {
    db = await freshDatabase(dialect, 'agg-race', { migrate: true });
    const schema = db.schema!;
    const a = await openTestStore(db);
    stores.push(a);
    await a.reconcileAggregates('c1', SETTINGS);
    await a.commitPage(page('c1', readings('s1', T0, 12)));
    await a.commitPage(page('c1', readings('s1', T0 + 24 * 60 * MIN, 12)));
    const admin = postgres(PG_BASE_URL, { max: 2, onnotice: () => {} });
    const held = await admin.reserve();
    const first = T0 + 11 * 5 * MIN;
    const widened = T0 + 24 * 60 * MIN + 11 * 5 * MIN;
    try {
      // What a fold of the first page leaves: its range, folded once; the second page's is folded below, mid-refresh.
      await admin.unsafe(`DELETE FROM "${schema}".aggregate_page_invalidations`);
      await admin.unsafe(`INSERT INTO "${schema}".aggregate_invalidations SELECT floor_space_key, customer_id, ${T0}, ${first}, 1, now() FROM "${schema}".floor_spaces WHERE floor_space_id = 's1'`);
      await held`BEGIN`;
      await held.unsafe(`SELECT floor_space_key FROM "${schema}".aggregate_invalidations FOR UPDATE`);
      // The refresh reads revision 1, recomputes, then waits for the row's lock to delete it.
      const refresh = a.refreshAggregates('c1');
      await waitFor(async () => Number((await admin.unsafe(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%'`))[0]!.n) > 0, 'the refresh waiting to delete the invalidation', 10_000);
      // Another process's fold of the second page widens the row meanwhile (the fold's upsert: max, revision + 1).
      await held.unsafe(`UPDATE "${schema}".aggregate_invalidations SET last_ms = GREATEST(last_ms, ${widened}), revision = revision + 1`);
      await held`COMMIT`;
      const done = await refresh;
      expect([done.spaces, done.left]).toEqual([1, 1]);
    } finally {
      held.release();
      await admin.end();
    }
    const [after] = await a.query<{ r: unknown; l: unknown }>('SELECT revision AS r, last_ms AS l FROM aggregate_invalidations');
    expect([Number(after!.r), Number(after!.l)]).toEqual([2, widened]);
    // The next refresh does it; then the kept aggregates equal a rebuild.
    expect((await a.refreshAggregates('c1')).left).toBe(0);
    expect(await a.pendingAggregates()).toEqual([]);
    const kept = await dumpAggregates(a);
    await a.rebuildAggregates({ customerId: 'c1' }, SETTINGS);
    expect(await dumpAggregates(a)).toEqual(kept);
  });
});
