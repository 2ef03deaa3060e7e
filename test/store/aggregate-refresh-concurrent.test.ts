import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import { streams as allStreams } from '../../jobs/index.ts';
import { aggregateSettings } from '../../src/app/aggregates.ts';
import { DEFAULT_WORKING_TIME } from '../../src/config-working-time.ts';
import { LOCK_SPACE } from '../../src/store/aggregate-calendars.ts';
import { buildingGroups, concurrencyFor, SPACES_PER_TRANSACTION } from '../../src/store/aggregate-invalidations.ts';
import { hoursOf } from '../../src/store/aggregate-plan.ts';
import type { FloorSpaceRecord, OccupancyRecord, Store } from '../../src/store/types.ts';
import { freshDatabase, openTestStore, PG_BASE_URL, type TestDatabase } from '../support/databases.ts';
import { waitFor } from '../support/wait.ts';
import { dumpAggregates } from '../sync/aggregate-dump.ts';

/**
 * A large refresh on Postgres runs as transactions of whole buildings side by side (aggregate-invalidations.ts,
 * docs/performance.md): each under its own buildings' locks, so one waiting for a building leaves the others to
 * commit; the result equals a rebuild. SQLite, and a small refresh, stay one transaction at a time.
 */

const SETTINGS = aggregateSettings({ workingTime: DEFAULT_WORKING_TIME }, allStreams);
const HOUR = 3_600_000;
const T0 = Date.parse('2026-03-02T00:00:00.000Z');

describe('how a refresh is cut into transactions', () => {
  it('counts the hours each stale range touches, both ends included', () => {
    expect(hoursOf([])).toBe(0);
    expect(hoursOf([[T0, T0]])).toBe(1);
    expect(hoursOf([[T0 + 59 * 60_000, T0 + 61 * 60_000]])).toBe(2);
    expect(hoursOf([[T0, T0 + 24 * HOUR - 1], [T0, T0 + 2 * HOUR, 'since']])).toBe(24 + 3);
  });

  it('runs one transaction on SQLite whatever the size, and on Postgres one per 5,000 hours up to four', () => {
    expect([0, 9_999, 1e9].map((h) => concurrencyFor('sqlite', h))).toEqual([1, 1, 1]);
    expect([0, 4_999, 9_999, 10_000, 19_999, 20_000, 1e9].map((h) => concurrencyFor('postgres', h))).toEqual([1, 1, 1, 2, 3, 4, 4]);
  });

  it('groups whole buildings, closing a group before the building that would take it past the size; a building too large for one transaction is cut into groups of its own', () => {
    const keys = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);
    const big = SPACES_PER_TRANSACTION + 10;
    const groups = buildingGroups(new Map([['a', keys(0, 30)], ['b', keys(100, 30)], ['c', keys(200, 50)], ['d', keys(1_000, big)], ['e', keys(300, 10)]]), 60);
    expect(groups.map((g) => [...g].map(([b, k]) => `${b}:${k.length}`))).toEqual([['a:30', 'b:30'], [`d:${SPACES_PER_TRANSACTION}`], ['d:10'], ['c:50', 'e:10']]);
    // Every key once, in its own building's group.
    expect(groups.flatMap((g) => [...g.values()].flat()).sort((x, y) => x - y)).toEqual([...keys(0, 30), ...keys(100, 30), ...keys(200, 50), ...keys(300, 10), ...keys(1_000, big)].sort((x, y) => x - y));
  });
});

describe('a large refresh on Postgres', () => {
  let db: TestDatabase | undefined;
  const stores: Store[] = [];
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
    await db?.drop();
  });

  it("runs its groups of buildings side by side: a building locked elsewhere holds up its own group only; the result equals a rebuild", { timeout: 60_000 }, async () => {
    db = await freshDatabase('postgres', 'agg-concurrent', { migrate: true });
    const schema = db.schema!;
    const store = await openTestStore(db);
    stores.push(store);
    const checkpoint = { customerId: 'c1', stateKey: 'floor_spaces', watermark: null, windowStart: null, windowEnd: null, pageCursor: null, rangeStart: null, rangeEnd: null };
    // Four buildings of 25 floor spaces, a reading an hour for 101 hours: 10,100 hours to recompute, two transactions.
    const spaces: FloorSpaceRecord[] = Array.from({ length: 100 }, (_, i) => ({ id: `s${i}`, buildingId: `b${Math.floor(i / 25)}`, floorId: `b${Math.floor(i / 25)}-f${i % 3}`, capacity: 4, name: null, spaceType: null }));
    await store.reconcileAggregates('c1', SETTINGS);
    await store.commitPage({ customerId: 'c1', sink: 'floorSpaces', at: new Date(T0).toISOString(), checkpoint, records: spaces });
    await store.reconcileAggregates('c1', SETTINGS);
    const readings: OccupancyRecord[] = [];
    for (let h = 0; h <= 100; h++) {
      spaces.forEach((s, i) => readings.push({ floorSpaceId: s.id, observedAt: new Date(T0 + h * HOUR + i * 1_000).toISOString(), occupancyStatus: (h + i) % 3 === 0 ? 'Unoccupied' : 'CurrentlyOccupied', headcount: (h + i) % 5, eventId: null }));
    }
    for (let i = 0; i < readings.length; i += 2_000) {
      await store.commitPage({ customerId: 'c1', sink: 'occupancy', at: new Date(T0).toISOString(), checkpoint: { ...checkpoint, stateKey: 'occupancy' }, records: readings.slice(i, i + 2_000) });
    }

    const admin = postgres(PG_BASE_URL, { max: 2, onnotice: () => {} });
    const held = await admin.reserve();
    try {
      // Building b0's lock, as another process's refresh of it holds it: the group of b0 and b1 waits for it.
      await held`BEGIN`;
      await held.unsafe(`SELECT pg_advisory_xact_lock(${LOCK_SPACE}::int4, hashtext('${schema}:' || '["c1","b0"]'))`);
      const refresh = store.refreshAggregates('c1');
      // The other group (b2, b3) commits meanwhile: only b0's and b1's 50 floor spaces stay pending.
      await waitFor(async () => (await store.pendingAggregates('c1'))[0]?.floorSpaces === 50, "the group of b2 and b3 committed while b0's lock is held elsewhere", 20_000);
      await held`COMMIT`;
      const done = await refresh;
      expect([done.spaces, done.left]).toEqual([100, 0]);
    } finally {
      held.release();
      await admin.end();
    }
    expect(await store.pendingAggregates()).toEqual([]);
    const kept = await dumpAggregates(store);
    await store.rebuildAggregates({ customerId: 'c1' }, SETTINGS);
    expect(await dumpAggregates(store)).toEqual(kept);
  });

  it('a floor space a listing moves to another building while the refresh waits for a lock is computed in the building it is in once locked', { timeout: 60_000 }, async () => {
    db = await freshDatabase('postgres', 'agg-moved-while-waiting', { migrate: true });
    const schema = db.schema!;
    const store = await openTestStore(db);
    const lister = await openTestStore(db);
    stores.push(store, lister);
    const admin = postgres(PG_BASE_URL, { max: 2, onnotice: () => {} });
    try {
      // A building whose lock a refresh of it and of 'b-utc' takes first (locks go in hash order): held elsewhere, the
      // refresh waits on it before taking b-utc's, which the listing then takes, moving s1 out of b-utc and committing.
      const lockKey = async (building: string) => Number((await admin.unsafe(`SELECT hashtext('${schema}:' || '["c1","${building}"]') AS k`))[0]!.k);
      let first = '';
      for (let i = 0; first === ''; i++) if ((await lockKey(`b-first-${i}`)) < (await lockKey('b-utc'))) first = `b-first-${i}`;
      const at = new Date(T0).toISOString();
      const checkpoint = (stateKey: string) => ({ customerId: 'c1', stateKey, watermark: null, windowStart: null, windowEnd: null, pageCursor: null, rangeStart: null, rangeEnd: null });
      const commit = (on: Store, sink: 'buildings' | 'floorSpaces' | 'occupancy', records: unknown[]) => on.commitPage({ customerId: 'c1', sink, at, checkpoint: checkpoint(sink), records: records as never });
      await commit(store, 'buildings', [
        { id: first, name: 'First', timeZone: 'UTC' },
        { id: 'b-utc', name: 'Harbour Hall', timeZone: 'UTC' },
        { id: 'b-kol', name: 'Lotus Tower', timeZone: 'Asia/Kolkata' },
      ]);
      const listing = (s1: string): FloorSpaceRecord[] => [
        { id: 's0', buildingId: first, floorId: 'f0', capacity: 4, name: null, spaceType: null },
        { id: 's1', buildingId: s1, floorId: 'f1', capacity: 4, name: null, spaceType: null },
      ];
      await commit(store, 'floorSpaces', listing('b-utc'));
      await store.reconcileAggregates('c1', SETTINGS);
      const readings = (from: number, to: number): OccupancyRecord[] =>
        ['s0', 's1'].flatMap((space) => Array.from({ length: to - from }, (_, i) => ({ floorSpaceId: space, observedAt: new Date(T0 + (from + i) * 20 * 60_000).toISOString(), occupancyStatus: (from + i) % 3 === 0 ? 'Unoccupied' : 'CurrentlyOccupied', headcount: (from + i) % 4, eventId: null })));
      await commit(store, 'occupancy', readings(0, 12));
      await store.refreshAggregates('c1', SETTINGS);
      await commit(store, 'occupancy', readings(12, 24));

      const held = await admin.reserve();
      try {
        await held`BEGIN`;
        await held.unsafe(`SELECT pg_advisory_xact_lock(${LOCK_SPACE}::int4, hashtext('${schema}:' || '["c1","${first}"]'))`);
        const holder = Number((await held`SELECT pg_backend_pid() AS p`)[0]!.p);
        const refresh = store.refreshAggregates('c1', SETTINGS);
        await waitFor(async () => Number((await admin.unsafe(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%pg_advisory_xact_lock%' AND pid <> ${holder}`))[0]!.n) > 0, 'the refresh waiting for the lock', 10_000);
        // The listing moves s1 to Lotus Tower and recomputes its buckets there (b-utc's lock and b-kol's are free).
        await commit(lister, 'floorSpaces', listing('b-kol'));
        await held`COMMIT`;
        await refresh;
      } finally {
        held.release();
      }
    } finally {
      await admin.end();
    }
    expect(await store.pendingAggregates()).toEqual([]);
    const zones = await store.query<{ z: string }>("SELECT DISTINCT c.time_zone AS z FROM occupancy_buckets b JOIN floor_spaces f ON f.floor_space_key = b.floor_space_key JOIN aggregate_calendars c ON c.building_id = f.building_id WHERE f.floor_space_id = 's1'");
    expect(zones.map((z) => z.z)).toEqual(['Asia/Kolkata']);
    const kept = await dumpAggregates(store);
    await store.rebuildAggregates({ customerId: 'c1' }, SETTINGS);
    expect(await dumpAggregates(store)).toEqual(kept);
  });
});
