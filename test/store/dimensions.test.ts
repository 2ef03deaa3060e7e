import { describe, expect, it } from 'vitest';
import { StoreError } from '../../src/errors.ts';
import type { FloorSpaceRecord, FloorRecord, Store } from '../../src/store/types.ts';
import { checkpoint, DIALECTS, fresh, readings } from './harness.ts';

/**
 * The dimension tables (issue 38; docs/reporting.md, "Buildings, floors and floor spaces"): buildings with their time
 * zone, floors, and floor_spaces, which is both the readings' dictionary and the floor space dimension. Written through
 * the store's sinks exactly as a stream's pages are, on both dialects.
 */

const C = 'cust-a';
const T1 = '2026-03-01T10:00:00.000Z';
const T2 = '2026-03-01T11:00:00.000Z';
const T3 = '2026-03-01T12:00:00.000Z';

const state = (stream: string) => ({ ...checkpoint(C, null), stream });
const listSpaces = (store: Store, at: string, records: FloorSpaceRecord[]) =>
  store.commitPage({ customerId: C, sink: 'floorSpaces', at, records, checkpoint: state('floor-spaces') });
const listFloors = (store: Store, at: string, records: FloorRecord[]) =>
  store.commitPage({ customerId: C, sink: 'floors', at, records, checkpoint: state('floors') });
const readAt = (store: Store, at: string, floorSpaceId: string, count = 3) =>
  store.commitPage({ customerId: C, sink: 'occupancy', at, records: readings(count, '2026-03-01T09:00:00.000Z', floorSpaceId), checkpoint: checkpoint(C, null) });

const space = (id: string, patch: Partial<FloorSpaceRecord> = {}): FloorSpaceRecord => ({
  id, floorId: 'fl-1', buildingId: 'b-1', name: `Room ${id}`, capacity: 6, spaceType: 'meeting_room', ...patch,
});

const keys = async (store: Store) =>
  (await store.query<{ floor_space_id: string; floor_space_key: number | string }>('SELECT floor_space_id, floor_space_key FROM floor_spaces ORDER BY floor_space_key'))
    .map((r) => [r.floor_space_id, Number(r.floor_space_key)]);

async function refusal(write: Promise<unknown>): Promise<StoreError> {
  const error = await write.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(StoreError);
  return error as StoreError;
}

describe.each(DIALECTS)('dimension tables on %s', (dialect) => {
  it('stores floors and floor spaces with their names beside their ids, unknown values NULL and never invented', async () => {
    const { store } = await fresh(dialect, 'dims');
    await listFloors(store, T1, [
      { id: 'fl-1', buildingId: 'b-1', name: 'Ground', level: 0 },
      { id: 'fl-b', buildingId: 'b-1', name: 'Basement', level: -1 },
      { id: 'fl-x', buildingId: null, name: null, level: null },
      { id: 'fl-y' },
    ]);
    await listSpaces(store, T1, [space('fs-1'), { id: 'fs-2', floorId: null, buildingId: null, name: null, capacity: null, spaceType: null }, { id: 'fs-3', name: 'Phone booth', capacity: 0 }]);
    expect(await store.query('SELECT customer_id, id, building_id, name, level, first_seen_at, last_seen_at, deleted_at FROM floors ORDER BY id')).toEqual([
      { customer_id: C, id: 'fl-1', building_id: 'b-1', name: 'Ground', level: 0, first_seen_at: T1, last_seen_at: T1, deleted_at: null },
      { customer_id: C, id: 'fl-b', building_id: 'b-1', name: 'Basement', level: -1, first_seen_at: T1, last_seen_at: T1, deleted_at: null },
      { customer_id: C, id: 'fl-x', building_id: null, name: null, level: null, first_seen_at: T1, last_seen_at: T1, deleted_at: null },
      { customer_id: C, id: 'fl-y', building_id: null, name: null, level: null, first_seen_at: T1, last_seen_at: T1, deleted_at: null },
    ]);
    expect(await store.query('SELECT customer_id, floor_space_id, name, floor_id, building_id, capacity, space_type, first_seen_at, last_seen_at, deleted_at FROM floor_spaces ORDER BY floor_space_id')).toEqual([
      { customer_id: C, floor_space_id: 'fs-1', name: 'Room fs-1', floor_id: 'fl-1', building_id: 'b-1', capacity: 6, space_type: 'meeting_room', first_seen_at: T1, last_seen_at: T1, deleted_at: null },
      { customer_id: C, floor_space_id: 'fs-2', name: null, floor_id: null, building_id: null, capacity: null, space_type: null, first_seen_at: T1, last_seen_at: T1, deleted_at: null },
      { customer_id: C, floor_space_id: 'fs-3', name: 'Phone booth', floor_id: null, building_id: null, capacity: 0, space_type: null, first_seen_at: T1, last_seen_at: T1, deleted_at: null },
    ]);
  });

  it('keeps a building\'s IANA time zone, NULL when unknown, and overwrites it when the listing changes it', async () => {
    const { store } = await fresh(dialect, 'tz');
    const list = (at: string, records: Array<{ id: string; name: string; timeZone?: string | null }>) =>
      store.commitPage({ customerId: C, sink: 'buildings', at, records, checkpoint: state('buildings') });
    // A half-hour offset, a southern-hemisphere DST zone, a link name and UTC: all zones Intl knows.
    await list(T1, [
      { id: 'b-1', name: 'Harbour Hall', timeZone: 'Europe/London' },
      { id: 'b-2', name: 'Mumbai', timeZone: 'Asia/Kolkata' },
      { id: 'b-3', name: 'Sydney', timeZone: 'Australia/Sydney' },
      { id: 'b-4', name: 'Legacy', timeZone: 'US/Pacific' },
      { id: 'b-5', name: 'Ships', timeZone: 'UTC' },
      { id: 'b-6', name: 'Unknown', timeZone: null },
      { id: 'b-7', name: 'Left out' },
    ]);
    await list(T2, [{ id: 'b-1', name: 'Harbour Hall', timeZone: 'America/St_Johns' }]);
    expect(await store.query('SELECT id, time_zone FROM buildings ORDER BY id')).toEqual([
      { id: 'b-1', time_zone: 'America/St_Johns' },
      { id: 'b-2', time_zone: 'Asia/Kolkata' },
      { id: 'b-3', time_zone: 'Australia/Sydney' },
      { id: 'b-4', time_zone: 'US/Pacific' },
      { id: 'b-5', time_zone: 'UTC' },
      { id: 'b-6', time_zone: null },
      { id: 'b-7', time_zone: null },
    ]);
  });

  it('refuses a time zone Intl does not know, naming the field, the value and the fix, and commits nothing of the page', async () => {
    const { store } = await fresh(dialect, 'tzbad');
    for (const zone of ['Mars/Olympus_Mons', '+05:30', 'GMT+2 (CEST)', '']) {
      const error = await refusal(store.commitPage({
        customerId: C, sink: 'buildings', at: T1, checkpoint: { ...state('buildings'), watermark: T1 },
        records: [{ id: 'b-1', name: 'Fine', timeZone: 'Europe/Paris' }, { id: 'b-2', name: 'Bad', timeZone: zone }],
      }));
      expect(error.message).toBe(
        `buildings record 1: timeZone must be an IANA time zone name Intl knows (e.g. Europe/London), got ${JSON.stringify(zone)}. ` +
          "Fix: map the platform's values to zone names (a value map in the stream's record), or leave the field unmapped (stored NULL)",
      );
      // A value the column cannot hold, coded as the database codes one (the receiver and the engine tell lasting refusals by it).
      expect((error.cause as { code?: string }).code).toMatch(/^22/);
    }
    expect(await store.query('SELECT id FROM buildings')).toEqual([]);
    expect(await store.getState(C, 'buildings')).toBeUndefined();
  });

  it('refuses a negative capacity (the store names the record; the table\'s constraint stands behind it) and commits nothing', async () => {
    const { store } = await fresh(dialect, 'capbad');
    const error = await refusal(listSpaces(store, T1, [space('fs-1'), space('fs-2', { capacity: -1 })]));
    expect(error.message).toBe('floor_spaces record 1: capacity must be a whole number from 0 to 2147483647, got -1');
    const fraction = await refusal(listSpaces(store, T1, [space('fs-1', { capacity: 2.5 })]));
    expect(fraction.message).toContain('capacity must be a whole number from 0 to 2147483647, got 2.5');
    const empty = await refusal(listSpaces(store, T1, [space('')]));
    expect(empty.message).toContain('id must be a non-empty string, got ""');
    expect(await store.query('SELECT floor_space_id FROM floor_spaces')).toEqual([]);
    // The last guard, for whoever writes the table by other means.
    await expect(store.query("INSERT INTO floor_spaces (customer_id, floor_space_id, capacity) VALUES ('c', 'x', -3)")).rejects.toThrow(/floor_spaces_capacity_non_negative/);
  });

  it('a renamed or moved space is overwritten in place (SCD type 1): one row, its key, and its readings now under its new name', async () => {
    const { store } = await fresh(dialect, 'rename');
    await listSpaces(store, T1, [space('fs-1', { name: 'Oak', floorId: 'fl-1', capacity: 6 })]);
    await readAt(store, T1, 'fs-1');
    const before = await keys(store);
    await listSpaces(store, T2, [space('fs-1', { name: 'Maple', floorId: 'fl-2', buildingId: 'b-2', capacity: null, spaceType: 'focus_room' })]);
    expect(await keys(store)).toEqual(before);
    expect(await store.query('SELECT floor_space_id, name, floor_id, building_id, capacity, space_type, first_seen_at, last_seen_at FROM floor_spaces')).toEqual([
      { floor_space_id: 'fs-1', name: 'Maple', floor_id: 'fl-2', building_id: 'b-2', capacity: null, space_type: 'focus_room', first_seen_at: T1, last_seen_at: T2 },
    ]);
    // History is not kept per name: every reading of the space, past ones too, reads under its current name.
    const named = await store.query<{ name: string; n: number | string }>('SELECT s.name, count(*) AS n FROM occupancy o JOIN floor_spaces s USING (customer_id, floor_space_id) GROUP BY s.name');
    expect(named.map((r) => [r.name, Number(r.n)])).toEqual([['Maple', 3]]);
  });

  it('readings and the dimension share one floor_space_key, whichever comes first and whichever process writes', async () => {
    const { store, another } = await fresh(dialect, 'keys');
    // Read first: the reading makes a row that has never been listed.
    await readAt(store, T1, 'fs-read-first');
    expect(await store.query('SELECT floor_space_id, name, first_seen_at, last_seen_at, deleted_at FROM floor_spaces')).toEqual([
      { floor_space_id: 'fs-read-first', name: null, first_seen_at: null, last_seen_at: null, deleted_at: null },
    ]);
    // A second process (its own, empty key cache) lists it, and a space not read yet.
    const other = await another();
    await listSpaces(other, T2, [space('fs-read-first'), space('fs-listed-first')]);
    await readAt(store, T2, 'fs-listed-first');
    await readAt(other, T3, 'fs-read-first', 5);
    expect(await keys(store)).toEqual([['fs-read-first', 1], ['fs-listed-first', 2]]);
    expect(await store.query('SELECT floor_space_id, name, first_seen_at, last_seen_at FROM floor_spaces ORDER BY floor_space_id')).toEqual([
      { floor_space_id: 'fs-listed-first', name: 'Room fs-listed-first', first_seen_at: T2, last_seen_at: T2 },
      { floor_space_id: 'fs-read-first', name: 'Room fs-read-first', first_seen_at: T2, last_seen_at: T2 },
    ]);
    const perSpace = await store.query<{ floor_space_id: string; n: number | string }>('SELECT floor_space_id, count(*) AS n FROM occupancy GROUP BY floor_space_id ORDER BY floor_space_id');
    expect(perSpace.map((r) => [r.floor_space_id, Number(r.n)])).toEqual([['fs-listed-first', 3], ['fs-read-first', 5]]);
  });

  it('listings and readings of known spaces from fresh processes draw no new keys: the keys stay 1..n', async () => {
    const { store, another } = await fresh(dialect, 'seq');
    const ids = Array.from({ length: 20 }, (_, i) => `fs-${String(i).padStart(2, '0')}`);
    await listSpaces(store, T1, ids.map((id) => space(id)));
    for (const at of [T2, T3]) {
      const process = await another();
      await listSpaces(process, at, ids.map((id) => space(id)));
      for (const id of ids.slice(0, 3)) await readAt(process, at, id, 2);
    }
    await readAt(await another(), T3, 'fs-new');
    const made = await keys(store);
    expect(made.map(([, key]) => key)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
    expect(made.at(-1)).toEqual(['fs-new', 21]);
  });

  it('a space or floor missing from a complete listing is soft-deleted and revived when listed again; a space only readings named never is', async () => {
    const { store } = await fresh(dialect, 'soft');
    await readAt(store, T1, 'fs-unlisted');
    await listSpaces(store, T1, [space('fs-1'), space('fs-2')]);
    await listFloors(store, T1, [{ id: 'fl-1', name: 'One' }, { id: 'fl-2', name: 'Two' }]);
    await listSpaces(store, T2, [space('fs-1')]);
    await listFloors(store, T2, [{ id: 'fl-2', name: 'Two' }]);
    expect(await store.markDeleted('floorSpaces', C, T2, '2026-03-01T11:00:05.000Z')).toBe(1);
    expect(await store.markDeleted('floors', C, T2, '2026-03-01T11:00:05.000Z')).toBe(1);
    expect(await store.markDeleted('floorSpaces', C, T2, '2026-03-01T11:00:06.000Z')).toBe(0);
    expect(await store.query('SELECT floor_space_id, deleted_at FROM floor_spaces ORDER BY floor_space_id')).toEqual([
      { floor_space_id: 'fs-1', deleted_at: null },
      { floor_space_id: 'fs-2', deleted_at: '2026-03-01T11:00:05.000Z' },
      { floor_space_id: 'fs-unlisted', deleted_at: null },
    ]);
    expect(await store.query('SELECT id, deleted_at FROM floors ORDER BY id')).toEqual([
      { id: 'fl-1', deleted_at: '2026-03-01T11:00:05.000Z' },
      { id: 'fl-2', deleted_at: null },
    ]);
    // A reading of a deleted space is stored; it does not bring the space back (only a listing says it exists).
    await readAt(store, T3, 'fs-2');
    expect(await store.query("SELECT deleted_at FROM floor_spaces WHERE floor_space_id = 'fs-2'")).toEqual([{ deleted_at: '2026-03-01T11:00:05.000Z' }]);
    await listSpaces(store, T3, [space('fs-1'), space('fs-2', { name: 'Back' })]);
    await listFloors(store, T3, [{ id: 'fl-1' }, { id: 'fl-2' }]);
    expect(await store.query('SELECT floor_space_id, name, first_seen_at, last_seen_at, deleted_at FROM floor_spaces ORDER BY floor_space_id')).toEqual([
      { floor_space_id: 'fs-1', name: 'Room fs-1', first_seen_at: T1, last_seen_at: T3, deleted_at: null },
      { floor_space_id: 'fs-2', name: 'Back', first_seen_at: T1, last_seen_at: T3, deleted_at: null },
      { floor_space_id: 'fs-unlisted', name: null, first_seen_at: null, last_seen_at: null, deleted_at: null },
    ]);
    expect(await store.query('SELECT id, deleted_at FROM floors ORDER BY id')).toEqual([{ id: 'fl-1', deleted_at: null }, { id: 'fl-2', deleted_at: null }]);
  });

  it('a listing that repeats a space keeps the last of its records, as every sink does', async () => {
    const { store } = await fresh(dialect, 'dups');
    await listSpaces(store, T1, [space('fs-1', { name: 'First' }), space('fs-2'), space('fs-1', { name: 'Last', capacity: 9 })]);
    expect(await store.query('SELECT floor_space_id, name, capacity FROM floor_spaces ORDER BY floor_space_id')).toEqual([
      { floor_space_id: 'fs-1', name: 'Last', capacity: 9 },
      { floor_space_id: 'fs-2', name: 'Room fs-2', capacity: 6 },
    ]);
  });

  it('customers keep their own spaces: the same id under two customers is two rows with two keys', async () => {
    const { store } = await fresh(dialect, 'cust');
    await listSpaces(store, T1, [space('fs-1', { name: 'A' })]);
    await store.commitPage({ customerId: 'cust-b', sink: 'floorSpaces', at: T1, records: [space('fs-1', { name: 'B' })], checkpoint: { ...checkpoint('cust-b', null), stateKey: 'floor-spaces' } });
    expect(await store.query('SELECT customer_id, name FROM floor_spaces ORDER BY customer_id')).toEqual([
      { customer_id: C, name: 'A' },
      { customer_id: 'cust-b', name: 'B' },
    ]);
    expect(new Set((await keys(store)).map(([, key]) => key)).size).toBe(2);
  });
});
