import { describe, expect, it } from 'vitest';
import { parseWorkingTime } from '../../src/config-working-time.ts';
import type { AggregateSettings, Store } from '../../src/store/index.ts';
import { loadMigrations } from '../../src/store/migrations.ts';
import { dumpAggregates } from '../sync/aggregate-dump.ts';
import { DIALECTS, fresh } from './harness.ts';
import { waitFor } from '../support/wait.ts';

/**
 * The floor-level hourly rollup (occupancy_floor_hours) that floor_hours and building_hour_sums read: their rows equal
 * the buckets summed here in TypeScript per floor (NULL apart from '') and per building at each space's current
 * building, floor and capacity, after a listing changes a capacity, moves a space to another floor and another
 * building, and after late deliveries; a rebuild gives the rows kept; migration 0018 fills it from the buckets an
 * upgraded database holds.
 */

const C = 'c1';
const MIN = 60_000;
const SETTINGS: AggregateSettings = { workingTime: parseWorkingTime('default:\n  zone: Europe/Berlin\n  days: [1, 2, 3, 4, 5]\n  start: "08:00"\n  end: "18:00"\n', 'w.yaml'), maxHoldMs: 45 * MIN };
const BUILDINGS = [
  { id: 'b1', name: 'Harbour Hall', timeZone: 'Europe/Berlin' },
  { id: 'b2', name: 'Lotus Tower', timeZone: 'Asia/Kolkata' },
];
const SPACES = [
  { id: 's1', buildingId: 'b1', floorId: 'f1', name: 's1', capacity: 4 },
  { id: 's2', buildingId: 'b1', floorId: 'f1', name: 's2', capacity: 6 },
  { id: 's3', buildingId: 'b1', floorId: 'f2', name: 's3', capacity: null },
  { id: 's4', buildingId: 'b1', floorId: null, name: 's4', capacity: 3 },
  { id: 's5', buildingId: 'b1', floorId: null, name: 's5', capacity: 0 },
  { id: 's7', buildingId: 'b1', floorId: null, name: 's7', capacity: 5 },
  { id: 's6', buildingId: 'b2', floorId: 'f9', name: 's6', capacity: 2 },
];
const checkpoint = { customerId: C, stateKey: 'x', watermark: null, windowStart: null, windowEnd: null, pageCursor: null, rangeStart: null, rangeEnd: null };
const AT = '2026-11-01T00:00:00.000Z';

async function commit(store: Store, sink: 'occupancy' | 'buildings' | 'floorSpaces', records: unknown[]): Promise<void> {
  await store.commitPage({ customerId: C, sink, records: records as never, at: AT, checkpoint: { ...checkpoint, stateKey: sink } });
}

/** Two days of seeded readings per space, every 5 to 40 minutes. */
function readings(tag: string, seed: number): Array<Record<string, unknown>> {
  let s = seed;
  const next = () => ((s = (Math.imul(s, 1_103_515_245) + 12_345) & 0x7fffffff) / 0x80000000);
  const out: Array<Record<string, unknown>> = [];
  for (const { id } of SPACES) {
    for (let at = Date.parse('2026-03-02T00:00:00.000Z') + Math.floor(next() * 30) * MIN; at < Date.parse('2026-03-04T00:00:00.000Z'); at += (5 + Math.floor(next() * 36)) * MIN) {
      const headcount = next() < 0.1 ? null : Math.floor(next() * 7);
      out.push({ floorSpaceId: id, observedAt: new Date(at).toISOString(), occupancyStatus: next() < 0.5 ? 'CurrentlyOccupied' : 'Unoccupied', headcount, eventId: `${tag}-${id}-${at}` });
    }
  }
  return out;
}

type Row = Record<string, unknown>;
const num = (v: unknown) => (v === null ? null : Number(v));
const add = (a: number | null, b: number | null) => (b === null ? a : (a ?? 0) + b);
const max = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.max(a, b));
const instant = (v: unknown) => new Date(v as string).getTime();

/** floor_hours and building_hours (their summed figures, per row) against the buckets summed here. */
async function expectViewsOfBuckets(store: Store): Promise<void> {
  const buckets = await store.query<Row>(`
    SELECT f.customer_id AS c, COALESCE(f.building_id, '') AS b, f.floor_id AS fl, f.capacity AS cap, o.start_ms AS t, o.known_ms AS k,
           o.occupied_ms AS o, o.headcount_ms AS hm, o.headcount_known_ms AS hk, o.readings AS n, o.peak_headcount AS p
      FROM occupancy_buckets o JOIN floor_spaces f ON f.floor_space_key = o.floor_space_key`);
  const floors = new Map<string, Array<number | null>>();
  const buildings = new Map<string, Array<number | null>>();
  for (const r of buckets) {
    const cap = num(r.cap);
    const figures = [num(r.k), num(r.o), num(r.hm), num(r.hk), cap ? cap * Number(r.hk) : null, cap ? num(r.hm) : null, num(r.n)];
    const peaks = [num(r.p), cap && r.p !== null ? Number(r.p) / cap : null];
    for (const [map, key] of [[floors, JSON.stringify([r.c, r.b, r.fl, Number(r.t)])], [buildings, JSON.stringify([r.c, r.b, Number(r.t)])]] as const) {
      const e = map.get(key) ?? [0, 0, 0, 0, null, null, 0, null, null];
      figures.forEach((v, i) => (e[i] = add(e[i]!, v)));
      peaks.forEach((v, i) => (e[7 + i] = max(e[7 + i]!, v)));
      map.set(key, e);
    }
  }
  const FIGURES = `known_seconds, occupied_seconds, headcount_seconds, headcount_known_seconds, capacity_seconds, capacity_headcount_seconds, readings, peak_headcount, peak_utilization`;
  const figuresOf = (r: Row) => [...['known_seconds', 'occupied_seconds', 'headcount_seconds', 'headcount_known_seconds', 'capacity_seconds', 'capacity_headcount_seconds'].map((c) => (r[c] === null ? null : Math.round(Number(r[c]) * 1000))), num(r.readings), num(r.peak_headcount), num(r.peak_utilization)];
  const floorRows = await store.query<Row>(`SELECT customer_id, building_id, floor_id, starts_at, ${FIGURES} FROM floor_hours`);
  const buildingRows = await store.query<Row>(`SELECT customer_id, building_id, starts_at, ${FIGURES} FROM building_hours`);
  const sorted = (m: Map<string, unknown>) => [...m.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
  expect(floorRows.length).toBeGreaterThan(100);
  expect(sorted(new Map(floorRows.map((r) => [JSON.stringify([r.customer_id, r.building_id, r.floor_id, instant(r.starts_at)]), figuresOf(r)])))).toEqual(sorted(floors));
  expect(sorted(new Map(buildingRows.map((r) => [JSON.stringify([r.customer_id, r.building_id, instant(r.starts_at)]), figuresOf(r)])))).toEqual(sorted(buildings));
}

async function portfolio(store: Store): Promise<void> {
  await commit(store, 'buildings', BUILDINGS);
  await commit(store, 'floorSpaces', SPACES);
  await store.reconcileAggregates(C, SETTINGS);
  await commit(store, 'occupancy', readings('p', 7));
  await store.refreshAggregates(C);
}

describe.each(DIALECTS)('the floor-level hourly rollup (%s)', (dialect) => {
  it('floor_hours and building_hours equal the buckets summed per floor and building, after a capacity change, a floor move, a building move and late deliveries; a rebuild gives the rows kept', { timeout: 60_000 }, async () => {
    const { store } = await fresh(dialect, 'floor-rollup');
    await portfolio(store);
    await expectViewsOfBuckets(store);
    const [s1, s2, , s4] = SPACES;
    // A capacity change and a floor move in one page, then a move to another building (another zone: buckets made again).
    await commit(store, 'floorSpaces', [{ ...s2, capacity: 3 }, { ...s1, floorId: 'f2' }]);
    await expectViewsOfBuckets(store);
    await commit(store, 'floorSpaces', [{ ...s4, buildingId: 'b2', floorId: 'f9' }]);
    await expectViewsOfBuckets(store);
    const late = readings('wh', 11).filter((_, i) => i % 9 === 0);
    for (let i = 0; i < late.length; i += 5) {
      const result = await store.storeDelivery({ id: `d-${i}`, customerId: C, type: 'OccupancyChanged', createdAt: AT, sentAt: AT, receivedAt: AT, body: '{}' }, late.slice(i, i + 5) as never);
      expect(result).toBe('stored');
    }
    await waitFor(async () => (await store.pendingAggregates(C)).length === 0, "the store's refresh of the late deliveries", 10_000);
    await expectViewsOfBuckets(store);
    const kept = await dumpAggregates(store);
    await store.rebuildAggregates({ customerId: C }, SETTINGS);
    expect(await dumpAggregates(store)).toEqual(kept);
    // A '' floor beside a NULL one in the same building (another writer's spelling): two floors, rebuilt as such.
    await store.query(`UPDATE floor_spaces SET floor_id = '' WHERE floor_space_id = 's5'`);
    await store.rebuildAggregates({ customerId: C }, SETTINGS);
    const floors = await store.query<Row>(`SELECT DISTINCT floor_id FROM occupancy_floor_hours WHERE building_id = 'b1' AND floor_key = ''`);
    expect(floors.map((r) => r.floor_id).sort()).toEqual(['', null]);
    await expectViewsOfBuckets(store);
  });

  it('migration 0018 fills the rollup from the buckets an upgraded database holds: every row of it and of the hour views kept', { timeout: 60_000 }, async () => {
    const { store, another } = await fresh(dialect, 'floor-rollup-upgrade');
    await portfolio(store);
    const views = async (s: Store) => [
      await s.query('SELECT * FROM floor_hours ORDER BY customer_id, building_id, floor_id, starts_at'),
      await s.query('SELECT * FROM building_hours ORDER BY customer_id, building_id, starts_at'),
    ];
    const before = { dump: await dumpAggregates(store), views: await views(store) };
    expect(before.views[0]!.length).toBeGreaterThan(100);
    // The database as the version before it left it: no rollup, the migration not applied (the views come with the upgrade).
    const added = loadMigrations(dialect).find((m) => m.name.endsWith('_occupancy_floor_hours'))!;
    await store.query(dialect === 'postgres' ? 'DROP TABLE occupancy_floor_hours CASCADE' : 'DROP TABLE occupancy_floor_hours');
    await store.query(`DELETE FROM __drizzle_migrations WHERE created_at >= ${added.folderMillis}`);
    await store.query('DELETE FROM __repeatable_migrations');
    const upgraded = await another();
    await upgraded.migrate();
    expect(await dumpAggregates(upgraded)).toEqual(before.dump);
    expect(await views(upgraded)).toEqual(before.views);
    await expectViewsOfBuckets(upgraded);
  });
});
