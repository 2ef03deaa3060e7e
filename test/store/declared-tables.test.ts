import { describe, expect, it } from 'vitest';
import { TableChangeError } from '../../src/errors.ts';
import { exitCodeFor } from '../../src/errors.ts';
import { columnOfField } from '../../src/store/declared-tables.ts';
import type { DeclaredTable, Store, TableColumnType } from '../../src/store/types.ts';
import { DIALECTS, fresh } from './harness.ts';

/**
 * Declared tables (issue 38; docs/tables.md): a stream's own table, created and evolved from its declaration by the
 * migrator on both dialects, each step recorded; a column the declaration adds is added (old rows NULL), a column it
 * drops stays (NULL in rows written after), a type change is refused with exactly one line naming the fix.
 */

const C = 'cust-a';
const T1 = '2026-03-01T10:00:00.000Z';
const T2 = '2026-03-01T11:00:00.000Z';

function table(name: string, fields: Record<string, TableColumnType>, key = ['id']): DeclaredTable {
  return { name, key, columns: Object.entries(fields).map(([field, type]) => ({ field, column: columnOfField(field), type })) };
}

const DESKS = table('desks', { id: 'text', name: 'text', capacity: 'integer', bookable: 'boolean', installedAt: 'timestamp' });

const list = (store: Store, t: DeclaredTable, at: string, records: Array<Record<string, unknown>>) =>
  store.commitPage({
    customerId: C,
    sink: 'table',
    table: t,
    at,
    records,
    checkpoint: { customerId: C, stateKey: t.name, watermark: null, windowStart: null, windowEnd: null, pageCursor: null, rangeStart: null, rangeEnd: null },
  });

// A test store on Postgres has a schema of its own, where its bookkeeping is too.
const steps = (store: Store) =>
  store.query<{ table_name: string; step: number | string; change: string; checksum: string }>('SELECT table_name, step, change, checksum FROM "__declared_tables" ORDER BY table_name, step');

async function refusal(write: Promise<unknown>): Promise<TableChangeError> {
  const error = await write.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(TableChangeError);
  return error as TableChangeError;
}

describe.each(DIALECTS)('declared tables on %s', (dialect) => {
  it('creates the table from its declaration, records the step, and upserts by customer and key', async () => {
    const { store } = await fresh(dialect, 'decl');
    expect(await store.declareTables([DESKS])).toEqual([
      { table: 'api_desks', step: 1, change: 'created api_desks (id, name, capacity, bookable, installed_at)' },
    ]);
    await list(store, DESKS, T1, [
      { id: 'd-1', name: 'Window', capacity: 2, bookable: true, installedAt: '2025-01-02T03:04:05+01:00' },
      { id: 'd-2', name: 'Corner', capacity: null, bookable: false, installedAt: null },
    ]);
    await list(store, DESKS, T2, [{ id: 'd-1', name: 'Window seat', capacity: 3, bookable: false, installedAt: null }]);
    const rows = await store.query<Record<string, unknown>>('SELECT * FROM api_desks ORDER BY id');
    expect(rows.map((r) => ({ ...r, bookable: r.bookable === null ? null : Boolean(r.bookable) }))).toEqual([
      { customer_id: C, id: 'd-1', name: 'Window seat', capacity: 3, bookable: false, installed_at: null, first_seen_at: T1, last_seen_at: T2, deleted_at: null },
      { customer_id: C, id: 'd-2', name: 'Corner', capacity: null, bookable: false, installed_at: null, first_seen_at: T1, last_seen_at: T1, deleted_at: null },
    ]);
    // Declared again, unchanged: nothing to do, and nothing recorded twice.
    expect(await store.declareTables([DESKS])).toEqual([]);
    const recorded = await steps(store);
    expect(recorded.map((r) => [r.table_name, Number(r.step), r.change])).toEqual([['api_desks', 1, 'created api_desks (id, name, capacity, bookable, installed_at)']]);
    expect(recorded[0]!.checksum).toMatch(/^[0-9a-f]{64}$/);
  });

  it('adds a column when the declaration adds a field: rows stored before hold NULL, rows written after the value', async () => {
    const { store, another } = await fresh(dialect, 'decl-add');
    await store.declareTables([DESKS]);
    await list(store, DESKS, T1, [{ id: 'd-1', name: 'Window', capacity: 2, bookable: true, installedAt: null }]);
    const grown = table('desks', { id: 'text', name: 'text', capacity: 'integer', bookable: 'boolean', installedAt: 'timestamp', floorSpaceId: 'text', seats: 'bigint' });
    // Another process (the next cron run) with the new definitions.
    const next = await another();
    expect(await next.declareTables([grown])).toEqual([
      { table: 'api_desks', step: 2, change: 'added column floor_space_id (text) to api_desks' },
      { table: 'api_desks', step: 3, change: 'added column seats (bigint) to api_desks' },
    ]);
    await list(next, grown, T2, [{ id: 'd-2', name: 'Corner', capacity: 1, bookable: false, installedAt: null, floorSpaceId: 'fs-9', seats: 9_000_000_000 }]);
    const rows = await next.query<{ id: string; floor_space_id: string | null; seats: unknown }>('SELECT id, floor_space_id, seats FROM api_desks ORDER BY id');
    expect(rows.map((r) => ({ ...r, seats: r.seats === null ? null : Number(r.seats) }))).toEqual([
      { id: 'd-1', floor_space_id: null, seats: null },
      { id: 'd-2', floor_space_id: 'fs-9', seats: 9_000_000_000 },
    ]);
    expect((await steps(next)).map((r) => Number(r.step))).toEqual([1, 2, 3]);
  });

  it('keeps a column whose field the declaration drops: what was stored stays, rows written after hold NULL', async () => {
    const { store } = await fresh(dialect, 'decl-drop');
    await store.declareTables([DESKS]);
    await list(store, DESKS, T1, [
      { id: 'd-1', name: 'Window', capacity: 2, bookable: true, installedAt: null },
      { id: 'd-2', name: 'Corner', capacity: 4, bookable: true, installedAt: null },
    ]);
    const shrunk = table('desks', { id: 'text', name: 'text', bookable: 'boolean', installedAt: 'timestamp' });
    expect(await store.declareTables([shrunk])).toEqual([]);
    await list(store, shrunk, T2, [{ id: 'd-1', name: 'Window', bookable: true, installedAt: null }, { id: 'd-3', name: 'New', bookable: false, installedAt: null }]);
    expect(await store.query('SELECT id, capacity FROM api_desks ORDER BY id')).toEqual([
      { id: 'd-1', capacity: null },
      { id: 'd-2', capacity: 4 },
      { id: 'd-3', capacity: null },
    ]);
    // The field comes back with its old type: the column is used again, with no step.
    expect(await store.declareTables([DESKS])).toEqual([]);
  });

  it('refuses a type change with exactly one line naming the table, field, old and new types and the fix; nothing applied', async () => {
    const { store } = await fresh(dialect, 'decl-type');
    await store.declareTables([DESKS]);
    await list(store, DESKS, T1, [{ id: 'd-1', name: 'Window', capacity: 2, bookable: true, installedAt: null }]);
    // capacity becomes text, and a new field is declared beside it: neither is applied.
    const changed = table('desks', { id: 'text', name: 'text', capacity: 'text', bookable: 'boolean', installedAt: 'timestamp', floor: 'text' });
    const error = await refusal(store.declareTables([changed]));
    expect(error.message.split('\n')).toHaveLength(1);
    expect(error.message).toMatch(/^table api_desks: field capacity \(column capacity\) is stored as integer and is now declared text; .*Fix: map the new type under a new field name .*DROP TABLE api_desks/);
    expect(exitCodeFor(error)).toBe(78);
    expect(await store.query('SELECT id, capacity FROM api_desks')).toEqual([{ id: 'd-1', capacity: 2 }]);
    expect((await steps(store)).map((r) => Number(r.step))).toEqual([1]);
    // The fix: the table dropped by hand is created again with the new declaration, its history going on.
    await dropTable(store);
    expect(await store.declareTables([changed])).toEqual([
      { table: 'api_desks', step: 2, change: 'created api_desks (id, name, capacity, bookable, installed_at, floor)' },
    ]);
    await list(store, changed, T2, [{ id: 'd-1', name: 'Window', capacity: 'two', bookable: true, installedAt: null, floor: '3' }]);
    expect(await store.query('SELECT id, capacity, floor FROM api_desks')).toEqual([{ id: 'd-1', capacity: 'two', floor: '3' }]);
  });

  it('names the stream to reset in the fix when the declaration says which stream reads the table', async () => {
    const { store } = await fresh(dialect, 'decl-fix');
    const readings = { ...table('sensor_readings', { sensorId: 'text', observedAt: 'timestamp', value: 'double' }, ['sensorId', 'observedAt']), stream: { name: 'sensor-readings', incremental: true } };
    await store.declareTables([readings, { ...DESKS, stream: { name: 'desks', incremental: false } }]);
    const changed = { ...readings, columns: readings.columns.map((c) => (c.field === 'value' ? { ...c, type: 'bigint' as const } : c)) };
    const error = await refusal(store.declareTables([changed, { ...DESKS, stream: { name: 'desks', incremental: false } }]));
    expect(error.message).toMatch(/^table api_sensor_readings: field value \(column value\) is stored as double and is now declared bigint; .*DROP TABLE api_sensor_readings, then `occupancy-sync state reset --stream sensor-readings --yes`; the next sync creates it and reads it again$/);
    const rekeyed = await refusal(store.declareTables([{ ...DESKS, key: ['name'], stream: { name: 'desks', incremental: false } }]));
    expect(rekeyed.message).toMatch(/or rebuild it: DROP TABLE api_desks; the next sync creates it and reads it again$/);
  });

  it('two processes declaring one table at once apply its steps once', async () => {
    const { store, another } = await fresh(dialect, 'decl-race');
    const other = await another();
    const results = await Promise.all([store.declareTables([DESKS]), other.declareTables([DESKS])]);
    expect(results.flat()).toEqual([{ table: 'api_desks', step: 1, change: 'created api_desks (id, name, capacity, bookable, installed_at)' }]);
    const grown = table('desks', { id: 'text', name: 'text', capacity: 'integer', bookable: 'boolean', installedAt: 'timestamp', seats: 'integer' });
    const again = await Promise.all([store.declareTables([grown]), other.declareTables([grown])]);
    expect(again.flat().map((s) => s.step)).toEqual([2]);
    expect((await steps(store)).map((r) => Number(r.step))).toEqual([1, 2]);
    await list(other, grown, T1, [{ id: 'd-1', name: 'A', capacity: 1, bookable: true, installedAt: null, seats: 3 }]);
    expect(await store.query('SELECT id, seats FROM api_desks')).toEqual([{ id: 'd-1', seats: 3 }]);
  });

  it('refuses a changed key, and a table of that name it did not create', async () => {
    const { store } = await fresh(dialect, 'decl-key');
    await store.declareTables([DESKS]);
    const rekeyed = { ...DESKS, key: ['id', 'name'] };
    const error = await refusal(store.declareTables([rekeyed]));
    expect(error.message).toMatch(/^table api_desks: the key was \[id\] and is now declared \[id, name\]; .*Fix: declare the table under a new name/);
    await writeSql(store, 'CREATE TABLE api_sensors (id text)');
    const foreign = await refusal(store.declareTables([table('sensors', { id: 'text' })]));
    expect(foreign.message).toMatch(/^table api_sensors \(stream table sensors\) exists but was not created by occupancy-sync/);
  });

  it('soft-deletes rows a complete listing lacks, and counts rows in a window, as for the built-in sinks', async () => {
    const { store } = await fresh(dialect, 'decl-soft');
    const readings = table('sensor_readings', { sensorId: 'text', observedAt: 'timestamp', value: 'double' }, ['sensorId', 'observedAt']);
    await store.declareTables([DESKS, readings]);
    await list(store, DESKS, T1, [{ id: 'd-1', name: 'A', capacity: 1, bookable: true, installedAt: null }, { id: 'd-2', name: 'B', capacity: 1, bookable: true, installedAt: null }]);
    await list(store, DESKS, T2, [{ id: 'd-1', name: 'A', capacity: 1, bookable: true, installedAt: null }]);
    expect(await store.markDeleted(DESKS, C, T2, T2)).toBe(1);
    expect(await store.query('SELECT id, deleted_at FROM api_desks ORDER BY id')).toEqual([{ id: 'd-1', deleted_at: null }, { id: 'd-2', deleted_at: T2 }]);
    expect(await store.listedValues(DESKS, 'id', C)).toEqual(['d-1']);
    await list(store, readings, T1, [
      { sensorId: 's-1', observedAt: '2026-03-01T09:00:00.000Z', value: 21.5 },
      { sensorId: 's-1', observedAt: '2026-03-01T09:05:00.000Z', value: 21.75 },
      { sensorId: 's-1', observedAt: '2026-03-01T09:05:00.000Z', value: 22 },
    ]);
    expect(await store.countInWindow(readings, 'observedAt', C, '2026-03-01T09:00:00.000Z', '2026-03-01T09:05:00.000Z')).toBe(1);
    expect(await store.query('SELECT sensor_id, observed_at, value FROM api_sensor_readings ORDER BY observed_at')).toEqual([
      { sensor_id: 's-1', observed_at: '2026-03-01T09:00:00.000Z', value: 21.5 },
      { sensor_id: 's-1', observed_at: '2026-03-01T09:05:00.000Z', value: 22 },
    ]);
  });

  it('refuses a page for a table not declared in this store', async () => {
    const { store } = await fresh(dialect, 'decl-none');
    await expect(list(store, DESKS, T1, [{ id: 'd-1' }])).rejects.toThrow(/the table api_desks was not declared with this declaration in this store/);
  });
});

/** DDL through the store's read-only query door is refused on purpose; tests reach the database directly. */
async function writeSql(store: Store, statement: string): Promise<void> {
  await (store as unknown as { query(sql: string): Promise<unknown> }).query(statement);
}

async function dropTable(store: Store): Promise<void> {
  await writeSql(store, 'DROP TABLE IF EXISTS api_desks');
}
