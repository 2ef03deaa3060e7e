import { describe, expect, it } from 'vitest';
import { parseWorkingTime } from '../../src/config-working-time.ts';
import type { AggregateSettings, Store } from '../../src/store/index.ts';
import { DIALECTS, fresh } from './harness.ts';

/**
 * A reconcile records the calendars of all a customer's new buildings in one transaction and rebuilds, each in its
 * own, a building whose calendar changed or that has buckets and no calendar recorded; a listing reads where its
 * spaces are after the upsert only for those stored before it. Each proven against the path it replaced: a calendar
 * recorded building by building, buckets computed from the start with the calendar they end up with.
 */

const C = 'c1';
const MIN = 60_000;
const OLD = parseWorkingTime('default:\n  zone: America/St_Johns\n  days: [1, 2, 3, 4, 5]\n  start: "08:00"\n  end: "18:00"\n', 'old.yaml');
const NEW = parseWorkingTime(
  'default:\n  zone: America/St_Johns\n  days: [1, 2, 3, 4, 5]\n  start: "08:00"\n  end: "18:00"\n' +
    'buildings:\n  - building: b-ber\n    start: "09:00"\n    end: "17:00"\n  - building: b-kol\n    start: "07:00"\n    end: "19:00"\n',
  'new.yaml',
);
const SETTINGS: AggregateSettings = { workingTime: OLD, maxHoldMs: 45 * MIN };
const CHANGED: AggregateSettings = { workingTime: NEW, maxHoldMs: 45 * MIN };
const checkpoint = { customerId: C, stateKey: '', watermark: null, windowStart: null, windowEnd: null, pageCursor: null, rangeStart: null, rangeEnd: null };

async function commit(store: Store, sink: 'occupancy' | 'buildings' | 'floorSpaces', records: unknown[]): Promise<void> {
  await store.commitPage({ customerId: C, sink, records: records as never, at: '2026-11-01T00:00:00.000Z', checkpoint: { ...checkpoint, stateKey: sink } });
}

/** 520 buildings (past one insert's 500 rows), every third with no zone of its own, two spaces each, and a space in none. */
async function manyBuildings(store: Store): Promise<void> {
  const buildings = Array.from({ length: 520 }, (_, i) => ({ id: `b${String(i).padStart(3, '0')}`, name: `Building ${i}`, timeZone: i % 3 === 0 ? null : i % 3 === 1 ? 'Europe/Berlin' : 'Asia/Kolkata' }));
  await commit(store, 'buildings', buildings);
  const spaces = buildings.flatMap((b) => [1, 2].map((n) => ({ id: `${b.id}-s${n}`, buildingId: b.id, floorId: `${b.id}-f1`, name: `${b.id}-s${n}`, capacity: 4, spaceType: 'desk' })));
  for (let i = 0; i < spaces.length; i += 400) await commit(store, 'floorSpaces', spaces.slice(i, i + 400));
  await commit(store, 'floorSpaces', [{ id: 'loose', buildingId: null, floorId: null, name: 'loose', capacity: null, spaceType: 'desk' }]);
}

const calendars = (store: Store) => store.query<Record<string, unknown>>('SELECT customer_id, building_id, time_zone, calendar, max_hold_ms, computed_at FROM aggregate_calendars ORDER BY customer_id, building_id');

/** Every bucket, by floor space id and start, as text. */
async function buckets(store: Store): Promise<string[]> {
  const rows = await store.query<Record<string, unknown>>(`
    SELECT f.floor_space_id, b.start_ms, b.end_ms, b.local_date, b.local_hour, b.weekday, b.working, b.known_ms, b.occupied_ms,
           b.headcount_ms, b.headcount_known_ms, b.peak_headcount, b.readings
      FROM occupancy_buckets b JOIN floor_spaces f ON f.floor_space_key = b.floor_space_key ORDER BY f.floor_space_id, b.start_ms`);
  return rows.map((row) => Object.values(row).map((v) => (typeof v === 'boolean' ? Number(v) : String(v))).join(' '));
}

/** Readings every 7 minutes over two weekdays, for each space: hours 7 to 19 local in every zone used here. */
function readingsOf(spaces: string[]): unknown[] {
  const out: unknown[] = [];
  const from = Date.parse('2026-03-03T00:00:00.000Z');
  for (const space of spaces) {
    for (let at = from, i = 0; at < from + 2 * 24 * 60 * MIN; at += 7 * MIN, i++) {
      out.push({ floorSpaceId: space, observedAt: new Date(at).toISOString(), occupancyStatus: i % 3 === 0 ? 'Unoccupied' : 'CurrentlyOccupied', headcount: i % 4, eventId: `${space}-${i}` });
    }
  }
  return out;
}

/** A poll page of their readings, and the refresh that computes its buckets. */
async function readIn(store: Store, spaces: string[]): Promise<void> {
  await commit(store, 'occupancy', readingsOf(spaces));
  expect((await store.refreshAggregates(C)).spaces).toBe(spaces.length);
}

const TWO = [
  { id: 'b-ber', name: 'Harbour Hall', timeZone: 'Europe/Berlin' },
  { id: 'b-kol', name: 'Lotus Tower', timeZone: 'Asia/Kolkata' },
];
const space = (id: string, building: string) => ({ id, buildingId: building, floorId: `${building}-1`, name: id, capacity: 6, spaceType: 'meeting_room' });

describe.each(DIALECTS)('reconciling many buildings at once (%s)', (dialect) => {
  it('records the calendars of 521 new buildings in one reconcile, row for row as recording each building alone does', { timeout: 60_000 }, async () => {
    const batched = await fresh(dialect, 'reconcile-batched');
    const alone = await fresh(dialect, 'reconcile-alone');
    await manyBuildings(batched.store);
    await manyBuildings(alone.store);
    expect(await batched.store.reconcileAggregates(C, SETTINGS)).toEqual([]);
    // `aggregates rebuild` of one building records its calendar by itself (nothing to rebuild: no buckets).
    const ids = (await alone.store.query<{ b: string }>("SELECT DISTINCT COALESCE(building_id, '') AS b FROM floor_spaces ORDER BY b")).map((r) => r.b);
    for (const id of ids) await alone.store.rebuildAggregates({ customerId: C, buildingId: id }, SETTINGS);
    const rows = await calendars(batched.store);
    expect(rows).toHaveLength(521);
    expect(rows).toEqual(await calendars(alone.store));
    const canonical = '{"days":[1,2,3,4,5],"start":"08:00","end":"18:00","holidays":[]}';
    const row = (building: string, zone: string) => ({ customer_id: C, building_id: building, time_zone: zone, calendar: canonical, max_hold_ms: 2_700_000, computed_at: '2026-03-01T12:00:00.000Z' });
    const byId = new Map(rows.map((r) => [r.building_id, { ...r, max_hold_ms: Number(r.max_hold_ms), computed_at: String(r.computed_at) }]));
    expect([byId.get(''), byId.get('b000'), byId.get('b001'), byId.get('b518'), byId.get('b519')]).toEqual([
      row('', 'America/St_Johns'),
      row('b000', 'America/St_Johns'),
      row('b001', 'Europe/Berlin'),
      row('b518', 'Asia/Kolkata'),
      row('b519', 'America/St_Johns'),
    ]);
    expect(await batched.store.reconcileAggregates(C, SETTINGS)).toEqual([]);
    expect(await calendars(batched.store)).toEqual(rows);
  });

  it('beside new buildings, rebuilds and reports a building whose calendar changed, and rebuilds unreported one with buckets and no calendar recorded', { timeout: 60_000 }, async () => {
    const { store } = await fresh(dialect, 'reconcile-changed');
    await commit(store, 'buildings', TWO);
    await commit(store, 'floorSpaces', [space('s1', 'b-ber'), space('s3', 'b-kol')]);
    expect(await store.reconcileAggregates(C, SETTINGS)).toEqual([]);
    await readIn(store, ['s1', 's3']);
    await commit(store, 'buildings', [...TWO, ...Array.from({ length: 25 }, (_, i) => ({ id: `n${i}`, name: `New ${i}`, timeZone: 'Europe/Berlin' }))]);
    await commit(store, 'floorSpaces', Array.from({ length: 25 }, (_, i) => space(`n${i}-s`, `n${i}`)));
    // Buckets whose calendar row is gone (a database restored in part): the reconcile cannot just record the new one.
    await store.query("DELETE FROM aggregate_calendars WHERE building_id = 'b-kol'");
    const rebuilt = await store.reconcileAggregates(C, CHANGED);
    expect(rebuilt.map((b) => [b.buildingId, b.change, b.spaces])).toEqual([
      ['b-ber', 'calendar {"days":[1,2,3,4,5],"start":"08:00","end":"18:00","holidays":[]} -> {"days":[1,2,3,4,5],"start":"09:00","end":"17:00","holidays":[]}', 1],
    ]);
    expect((await calendars(store)).map((r) => [r.building_id, r.calendar])).toEqual([
      ['b-ber', '{"days":[1,2,3,4,5],"start":"09:00","end":"17:00","holidays":[]}'],
      ['b-kol', '{"days":[1,2,3,4,5],"start":"07:00","end":"19:00","holidays":[]}'],
      ...Array.from({ length: 25 }, (_, i) => [`n${i}`, '{"days":[1,2,3,4,5],"start":"08:00","end":"18:00","holidays":[]}']).sort(([a], [b]) => (a! < b! ? -1 : 1)),
    ]);
    // Both computed again: the buckets equal those of a store configured so from the start.
    const fromStart = await fresh(dialect, 'reconcile-from-start');
    await commit(fromStart.store, 'buildings', TWO);
    await commit(fromStart.store, 'floorSpaces', [space('s1', 'b-ber'), space('s3', 'b-kol')]);
    await fromStart.store.reconcileAggregates(C, CHANGED);
    await readIn(fromStart.store, ['s1', 's3']);
    const expected = await buckets(fromStart.store);
    expect(expected.length).toBeGreaterThan(90);
    const before = await fresh(dialect, 'reconcile-before');
    await commit(before.store, 'buildings', TWO);
    await commit(before.store, 'floorSpaces', [space('s1', 'b-ber'), space('s3', 'b-kol')]);
    await before.store.reconcileAggregates(C, SETTINGS);
    await readIn(before.store, ['s1', 's3']);
    // The working hours differ for both buildings: a building left as it was would show it.
    const old = await buckets(before.store);
    expect(old.filter((r) => r.startsWith('s1 ')).length).toBeGreaterThan(0);
    expect(old.filter((r) => r.startsWith('s1 '))).not.toEqual(expected.filter((r) => r.startsWith('s1 ')));
    expect(old.filter((r) => r.startsWith('s3 '))).not.toEqual(expected.filter((r) => r.startsWith('s3 ')));
    expect(await buckets(store)).toEqual(expected);
    expect(await store.reconcileAggregates(C, CHANGED)).toEqual([]);
  });

  it('finds buildings whose ids quote, separate or read as NULL in a list (each list is bound as one value)', { timeout: 60_000 }, async () => {
    const odd = ['a"b', 'c,d', '{e}', 'f\\g', 'NULL', 'h i', ''];
    const named = odd.filter((id) => id !== '').map((id, i) => ({ id, name: `Odd ${i}`, timeZone: i % 2 ? 'Asia/Kolkata' : 'Europe/Berlin' }));
    const spaces = odd.map((id, i) => ({ ...space(`odd-${i}`, id), buildingId: id === '' ? null : id }));
    const later = parseWorkingTime('default:\n  zone: America/St_Johns\n  days: [1, 2, 3, 4, 5]\n  start: "07:30"\n  end: "16:00"\n', 'later.yaml');
    const LATER: AggregateSettings = { workingTime: later, maxHoldMs: 45 * MIN };
    const setUp = async (name: string, settings: AggregateSettings) => {
      const { store } = await fresh(dialect, name);
      await commit(store, 'buildings', named);
      await commit(store, 'floorSpaces', spaces);
      expect(await store.reconcileAggregates(C, settings)).toEqual([]);
      await readIn(store, spaces.map((s) => s.id));
      return store;
    };
    const store = await setUp('reconcile-odd', SETTINGS);
    // Each building's own zone: the buildings were read by their ids (one missed would take the default zone).
    expect(Object.fromEntries((await calendars(store)).map((r) => [r.building_id, r.time_zone]))).toEqual({
      ...Object.fromEntries(named.map((b) => [b.id, b.timeZone])),
      '': 'America/St_Johns',
    });
    // Calendars lost, buckets kept: only a read that finds each building's buckets rebuilds it with the new hours.
    await store.query('DELETE FROM aggregate_calendars');
    expect(await store.reconcileAggregates(C, LATER)).toEqual([]);
    const fromStart = await setUp('reconcile-odd-from-start', LATER);
    const expected = await buckets(fromStart);
    expect(new Set(expected.map((r) => r.split(' ')[0]))).toEqual(new Set(spaces.map((s) => s.id)));
    expect(await buckets(store)).toEqual(expected);
  });

  it('a listing page of new spaces beside one moved to another building recomputes the moved one', { timeout: 60_000 }, async () => {
    const { store } = await fresh(dialect, 'listing-moved');
    await commit(store, 'buildings', TWO);
    await commit(store, 'floorSpaces', [space('s1', 'b-ber')]);
    await store.reconcileAggregates(C, SETTINGS);
    await readIn(store, ['s1']);
    const inBerlin = await buckets(store);
    // A page of new spaces alone moves nothing.
    await commit(store, 'floorSpaces', [space('s7', 'b-kol'), space('s8', 'b-ber')]);
    expect(await buckets(store)).toEqual(inBerlin);
    await commit(store, 'floorSpaces', [space('s9', 'b-ber'), space('s1', 'b-kol'), space('s10', 'b-kol')]);
    const there = await fresh(dialect, 'listing-there');
    await commit(there.store, 'buildings', TWO);
    await commit(there.store, 'floorSpaces', [space('s1', 'b-kol')]);
    await there.store.reconcileAggregates(C, SETTINGS);
    await readIn(there.store, ['s1']);
    const expected = await buckets(there.store);
    expect(expected).not.toEqual(inBerlin);
    expect(await buckets(store)).toEqual(expected);
  });
});
