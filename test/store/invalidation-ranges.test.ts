import { afterEach, describe, expect, it } from 'vitest';
import { aggregateSettings } from '../../src/app/aggregates.ts';
import { DEFAULT_WORKING_TIME } from '../../src/config-working-time.ts';
import { streams as allStreams } from '../../jobs/index.ts';
import { foldRanges } from '../../src/store/aggregate-page-invalidations.ts';
import { addRange, groupSpans, MAX_RANGES, RANGE_GAP_MS, type Ranges } from '../../src/store/aggregate-plan.ts';
import { REFRESH_AFTER_MS, RunRefresh } from '../../src/store/run-refresh.ts';
import type { OccupancyRecord, Store } from '../../src/store/types.ts';
import { DIALECTS, freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { execRaw, migrateAsReleased } from '../support/legacy-database.ts';
import { dumpAggregates } from '../sync/aggregate-dump.ts';
import { checkpoint } from './harness.ts';

/**
 * A floor space's stale ranges stay apart (aggregate-plan.ts Ranges): a backfill of several windows at once commits a
 * few hours of each window's day between two refreshes, and a refresh recomputes those hours, not every day from the
 * first window to the last (which a single [first, last] a space made it do, each refresh again).
 */

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T0 = Date.parse('2026-03-02T00:00:00.000Z');

describe('a floor space\'s stale ranges', () => {
  const ranges = (...pairs: Array<[number, number]>): Ranges => {
    const out: Ranges = [];
    for (const [a, b] of pairs) addRange(out, a, b);
    return out;
  };

  it('keeps ranges more than an hour apart, in order, and joins those that overlap or come within an hour', () => {
    expect(ranges([T0, T0 + HOUR], [T0 + DAY, T0 + DAY + HOUR])).toEqual([[T0, T0 + HOUR], [T0 + DAY, T0 + DAY + HOUR]]);
    // Out of order: inserted where it belongs.
    expect(ranges([T0 + DAY, T0 + DAY + HOUR], [T0, T0 + HOUR])).toEqual([[T0, T0 + HOUR], [T0 + DAY, T0 + DAY + HOUR]]);
    // A page right after the last (five minutes on): one range.
    expect(ranges([T0, T0 + HOUR], [T0 + HOUR + 5 * 60_000, T0 + 2 * HOUR])).toEqual([[T0, T0 + 2 * HOUR]]);
    // Exactly the gap apart joins; a millisecond more does not.
    expect(ranges([T0, T0], [T0 + RANGE_GAP_MS, T0 + RANGE_GAP_MS])).toEqual([[T0, T0 + RANGE_GAP_MS]]);
    expect(ranges([T0, T0], [T0 + RANGE_GAP_MS + 1, T0 + RANGE_GAP_MS + 1])).toHaveLength(2);
    // One range that reaches three joins them all, and keeps the widest ends.
    expect(ranges([T0, T0 + HOUR], [T0 + 3 * HOUR, T0 + 4 * HOUR], [T0 + 6 * HOUR, T0 + 7 * HOUR], [T0 + HOUR / 2, T0 + 6 * HOUR])).toEqual([[T0, T0 + 7 * HOUR]]);
    // Inside one: unchanged.
    expect(ranges([T0, T0 + 5 * HOUR], [T0 + HOUR, T0 + 2 * HOUR])).toEqual([[T0, T0 + 5 * HOUR]]);
    // Starting inside the last and going past it: the last widened, the one before untouched.
    expect(ranges([T0, T0 + HOUR], [T0 + DAY, T0 + DAY + HOUR], [T0 + DAY + HOUR / 2, T0 + DAY + 3 * HOUR])).toEqual([[T0, T0 + HOUR], [T0 + DAY, T0 + DAY + 3 * HOUR]]);
    // Starting before the last and inside the one before it: both joined.
    expect(ranges([T0, T0 + HOUR], [T0 + DAY, T0 + DAY + HOUR], [T0 + HOUR / 2, T0 + DAY])).toEqual([[T0, T0 + DAY + HOUR]]);
  });

  it(`holds at most ${MAX_RANGES} ranges a space, joining the two closest`, () => {
    const out: Ranges = [];
    for (let i = 0; i < MAX_RANGES; i++) addRange(out, T0 + i * DAY, T0 + i * DAY);
    // Day 3 and a point 3 hours after it are the closest pair once it is added.
    addRange(out, T0 + 3 * DAY + 3 * HOUR, T0 + 3 * DAY + 3 * HOUR);
    expect(out).toHaveLength(MAX_RANGES);
    expect(out[3]).toEqual([T0 + 3 * DAY, T0 + 3 * DAY + 3 * HOUR]);
    for (let i = 1; i < out.length; i++) expect(out[i]![0]).toBeGreaterThan(out[i - 1]![1]);
  });

  it('folds pages\' span groups per key, each window\'s apart, and names each key a group names', () => {
    const into = new Map<number, Ranges>();
    const named: number[] = [];
    foldRanges(into, [[T0, T0 + HOUR, 1, 2], [T0 + 2 * DAY, T0 + 2 * DAY + HOUR, 1]], (k) => named.push(k));
    foldRanges(into, [[T0 + HOUR + 60_000, T0 + 2 * HOUR, 1, 2]], (k) => named.push(k));
    expect([...into]).toEqual([
      [1, [[T0, T0 + 2 * HOUR], [T0 + 2 * DAY, T0 + 2 * DAY + HOUR]]],
      [2, [[T0, T0 + 2 * HOUR]]],
    ]);
    expect(named).toEqual([1, 2, 1, 1, 2]);
  });

  it('a group of spans names a space once, over a range covering each of its spans in it', () => {
    const groups = groupSpans([
      { key: 1, fromMs: T0, toMs: T0 + 10 * HOUR },
      { key: 1, fromMs: T0 + 11 * HOUR, toMs: T0 + 12 * HOUR },
      { key: 2, fromMs: T0, toMs: T0 + 10 * HOUR },
    ]);
    expect(groups).toEqual([{ keys: [1, 2], fromMs: T0, toMs: T0 + 12 * HOUR }]);
  });

  it('a run\'s refresh counts the hours of each window, not the days between them', async () => {
    const started: string[] = [];
    const runs = new RunRefresh({ refresh: async (c) => void started.push(c), failed: () => {}, overlaps: true, maxHoldMs: () => 3 * HOUR });
    // Two windows two days apart, an hour of each: two hours (six are due for a three-hour hold), not 50.
    runs.committed('c1', [[T0, T0 + 30 * 60_000, 1], [T0 + 2 * DAY, T0 + 2 * DAY + 30 * 60_000, 1]], 0);
    runs.committed('c1', [], REFRESH_AFTER_MS);
    runs.committed('c1', [[T0 + 30 * 60_000, T0 + 30 * 60_000, 1]], REFRESH_AFTER_MS);
    expect(started).toEqual([]);
    // Four hours more of each window: ten in all.
    runs.committed('c1', [[T0 + HOUR, T0 + 4 * HOUR, 1], [T0 + 2 * DAY + HOUR, T0 + 2 * DAY + 4 * HOUR, 1]], REFRESH_AFTER_MS);
    expect(started).toEqual(['c1']);
    await runs.settled();
  });
});

const SETTINGS = aggregateSettings({ workingTime: DEFAULT_WORKING_TIME }, allStreams);
const AT = '2026-03-10T09:00:00.000Z';
const SPACES = ['fs-1', 'fs-2', 'fs-3'];

/** Every 5 minutes from `fromMs` for `hours`, for each space. */
function ticks(fromMs: number, hours: number): OccupancyRecord[] {
  const out: OccupancyRecord[] = [];
  for (const s of SPACES) {
    for (let at = fromMs; at < fromMs + hours * HOUR; at += 5 * 60_000) {
      out.push({ floorSpaceId: s, observedAt: new Date(at).toISOString(), occupancyStatus: at % (3 * HOUR) < HOUR ? 'CurrentlyOccupied' : 'CurrentlyUnoccupied', headcount: 1, eventId: null });
    }
  }
  return out;
}

describe.each(DIALECTS)('a backfill of windows days apart (%s)', (dialect) => {
  let db: TestDatabase | undefined;
  let store: Store | undefined;
  afterEach(async () => {
    await store?.close();
    await db?.drop();
    store = undefined;
    db = undefined;
  });

  const commit = (records: OccupancyRecord[]) => store!.commitPage({ customerId: 'c1', sink: 'occupancy', at: AT, checkpoint: checkpoint('c1', null), records });
  const count = async (sql: string) => Number((await store!.query<{ n: unknown }>(sql))[0]!.n);

  for (const path of ['in the claim\'s transaction', 'folded first'] as const) {
    it(`a refresh recomputes the hours of each window, not the day already refreshed between them, ${path}; the kept aggregates equal a rebuild`, async () => {
      db = await freshDatabase(dialect, 'invalidation-ranges');
      store = await openTestStore(db);
      await store.reconcileAggregates('c1', SETTINGS);
      // Day 3 loaded and refreshed: 3 spaces x 24 hours of buckets (and the hold past its end).
      await commit(ticks(T0 + 2 * DAY, 24));
      const middle = await store.refreshAggregates('c1', SETTINGS);
      expect(middle.buckets).toBeGreaterThanOrEqual(3 * 24);
      // Then a few hours of day 1 and of day 5, as two windows in flight commit them.
      await commit(ticks(T0 + 8 * HOUR, 2));
      await commit(ticks(T0 + 4 * DAY + 8 * HOUR, 2));
      if (path === 'folded first') {
        // What a refresh that folded an earlier page and then failed leaves (a row of another floor space): the next
        // refresh folds its pages' rows too, a row per space and range, before it recomputes.
        await commit(ticks(T0 + 6 * DAY, 1).filter((r) => r.floorSpaceId === 'fs-1').map((r) => ({ ...r, floorSpaceId: 'fs-9' })));
        await store.query('DELETE FROM aggregate_page_invalidations WHERE id = (SELECT max(id) FROM aggregate_page_invalidations)');
        await store.query(`INSERT INTO aggregate_invalidations (floor_space_key, customer_id, first_ms, last_ms, revision, invalidated_at)
          SELECT floor_space_key, customer_id, ${T0 + 6 * DAY}, ${T0 + 6 * DAY + HOUR - 5 * 60_000}, 1, '${AT}' FROM floor_spaces WHERE floor_space_id = 'fs-9'`);
      }
      const bucketsBefore = await dumpAggregates(store);
      const done = await store.refreshAggregates('c1', SETTINGS);
      expect(done.left).toBe(0);
      expect(await store.pendingAggregates()).toEqual([]);
      expect(await count('SELECT count(*) AS n FROM aggregate_invalidations')).toBe(0);
      // Two hours of each window, and the 15 minutes the 5-minute sensors hold past each window's end: 3 buckets a
      // space and window (and fs-9's hour); a range from day 1 to day 5 would have written day 3's 72 again.
      expect(done.buckets).toBe(3 * 2 * 3 + (path === 'folded first' ? 2 : 0));
      const kept = await dumpAggregates(store);
      expect(kept.length).toBeGreaterThan(bucketsBefore.length);
      await store.rebuildAggregates({ customerId: 'c1' }, SETTINGS);
      expect(await dumpAggregates(store)).toEqual(kept);
    });
  }

  it('a pending row of the version before (one a floor space) is kept by the migration and refreshed', async () => {
    db = await freshDatabase(dialect, 'invalidation-ranges-migrated');
    await migrateAsReleased(db, '0021_floor_spaces_floor_idx');
    await execRaw(db, [
      `INSERT INTO floor_spaces (customer_id, floor_space_id) VALUES ${SPACES.map((s) => `('c1', '${s}')`).join(', ')}`,
      `INSERT INTO aggregate_invalidations (floor_space_key, customer_id, first_ms, last_ms, revision, invalidated_at)
         SELECT floor_space_key, customer_id, ${T0}, ${T0 + 2 * HOUR - 5 * 60_000}, 1, '${AT}' FROM floor_spaces`,
    ]);
    store = await openTestStore(db);
    expect((await store.pendingAggregates()).map((p) => [p.floorSpaces, p.from, p.since])).toEqual([[3, new Date(T0).toISOString(), AT]]);
    // The table's key is now the floor space and where its range starts.
    await expect(store.query(`INSERT INTO aggregate_invalidations (floor_space_key, customer_id, first_ms, last_ms, revision, invalidated_at)
      SELECT floor_space_key, customer_id, ${T0}, ${T0}, 1, '${AT}' FROM floor_spaces WHERE floor_space_id = 'fs-1'`)).rejects.toThrow();
    await store.reconcileAggregates('c1', SETTINGS);
    // The readings those rows name, and no page row of them: the migrated rows alone make the refresh compute them.
    await commit(ticks(T0, 2));
    await store.query('DELETE FROM aggregate_page_invalidations');
    expect(await store.refreshAggregates('c1', SETTINGS)).toEqual({ customerId: 'c1', spaces: 3, buckets: 3 * 3, left: 0 });
    const kept = await dumpAggregates(store);
    await store.rebuildAggregates({ customerId: 'c1' }, SETTINGS);
    expect(await dumpAggregates(store)).toEqual(kept);
  });
});
