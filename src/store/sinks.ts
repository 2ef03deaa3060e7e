import type { PgTable } from 'drizzle-orm/pg-core';
import { getTableColumns, getTableName, type Column as DrizzleColumn } from '../../db/schema/drizzle.ts';
import { StoreError } from '../errors.ts';
import { buildings as buildingsTable, floorSpaces as floorSpacesTable, floors as floorsTable, occupancy as occupancyView } from '../../db/schema/pg.ts';
import type { Dialect } from '../config.ts';
import { COUNT_RULE, INT4_RULE, invalid, isCount, isInt4, isTimeZone, TIME_ZONE_FIX, TIME_ZONE_RULE } from './checks.ts';
import { sinkColumns, SINK_NAMES, type NotInRecords, type SinkColumn } from './columns.ts';
import { floorSpaceKeys, occupancySink } from './occupancy-sink.ts';
import type { Column, ColumnType, PageContext, PrepareInput, SinkDef } from './sink-def.ts';
import { canonicalTimestamp } from './timestamps.ts';
import type { DeclaredSink, Upserted } from './adapter.ts';
import type { FloorSpaceRecord, OccupancySource, SinkName, SinkRecords } from './types.ts';

export { sinkKey } from './columns.ts';
export type { Column, ColumnType, ComputedColumn, PageContext, PrepareInput, SinkDef } from './sink-def.ts';

/**
 * The sink registry: how a stream's records become rows. A sink names the relation users read (the documented table
 * or view), the table it writes, which of the written columns are set once per page and which per record, and the
 * ON CONFLICT rule. The record fields, their columns, types, nullability and key come from the relation's Drizzle
 * definition (columns.ts); buildings write that very table, occupancy the compact tables behind the `occupancy` view
 * (occupancy-sink.ts, one sink over each dialect's layout). Each room builds its one prepared upsert per sink from
 * this (SQLite: INSERT ... VALUES per row; Postgres: INSERT ... SELECT FROM unnest per page).
 */

/** What each record column's type becomes as a bound value. */
const BOUND: Record<SinkColumn['type'], ColumnType> = { text: 'text', integer: 'int4', timestamp: 'timestamptz' };

/** A value rule beyond the column's type (a capacity is a count, a time zone a zone Intl knows). */
interface ValueRule {
  test(value: unknown): boolean;
  what: string;
  fix?: string;
}

/** Writes one record's values in column order, each checked against its column's type, nullability and rule. */
function filler<R>(
  table: string,
  columns: readonly SinkColumn[],
  nonEmpty: readonly string[],
  rules: Readonly<Record<string, ValueRule>> = {},
): SinkDef<R>['fill'] {
  const fields = columns.map((c) => ({ ...c, nonEmpty: nonEmpty.includes(c.field), rule: rules[c.field] }));
  return (record, out, offset, index) => {
    const r = record as Record<string, unknown>;
    for (let c = 0; c < fields.length; c++) {
      const { field, type, nullable, nonEmpty, rule } = fields[c]!;
      const value = r[field];
      if (nullable && (value === null || value === undefined)) {
        out[offset + c] = null;
      } else if (type === 'timestamp') {
        out[offset + c] = canonicalTimestamp(value, `${table} record ${index}: ${field}`);
      } else if (type === 'integer') {
        if (rule ? !rule.test(value) : !isInt4(value)) throw invalid(table, index, field, rule?.what ?? INT4_RULE, value, rule?.fix);
        out[offset + c] = value;
      } else {
        if (typeof value !== 'string' || (nonEmpty && value.length === 0)) throw invalid(table, index, field, nonEmpty ? 'a non-empty string' : 'a string', value);
        if (rule && !rule.test(value)) throw invalid(table, index, field, rule.what, value, rule.fix);
        out[offset + c] = value;
      }
    }
  };
}

/** A sink that writes the very table users read, every column taken from its Drizzle table. */
function tableSink<S extends SinkName>(
  sink: S,
  spec: {
    table: PgTable;
    /** The written columns set once per page, by name. */
    pageColumns: readonly string[];
    pageValues(page: PageContext): unknown[];
    /** Text fields that must not be empty when given (identifiers). */
    nonEmpty: ReadonlyArray<keyof SinkRecords[S] & string>;
    rules?: Partial<Record<keyof SinkRecords[S] & string, ValueRule>>;
    onConflict: string;
  },
): SinkDef<SinkRecords[S]> {
  const table = getTableName(spec.table);
  const shape = sinkColumns(sink);
  const byName = new Map(Object.values(getTableColumns(spec.table) as Record<string, DrizzleColumn>).map((c) => [c.name, c]));
  const pageColumns = spec.pageColumns.map((name): Column => {
    const column = byName.get(name);
    if (!column) throw new Error(`${table}: no column ${name}`);
    return { name, type: column.getSQLType().startsWith('timestamp') ? 'timestamptz' : column.getSQLType() === 'integer' ? 'int4' : 'text' };
  });
  const fields = shape.columns.map((c) => c.field);
  const key = shape.columns.filter((c) => c.key).map((c) => c.field);
  return {
    table,
    writeTable: table,
    pageColumns,
    pageValues: spec.pageValues,
    rowColumns: shape.columns.map((c) => ({ name: c.column, type: BOUND[c.type] })),
    computed: [],
    rowFields: fields,
    key,
    rowKey: key.map((k) => fields.indexOf(k)),
    fill: filler(table, shape.columns, spec.nonEmpty, spec.rules as Record<string, ValueRule> | undefined),
    onConflict: spec.onConflict,
    softDelete: shape.softDelete,
  };
}

const COUNT: ValueRule = { test: isCount, what: COUNT_RULE };
const TIME_ZONE: ValueRule = { test: isTimeZone, what: TIME_ZONE_RULE, fix: TIME_ZONE_FIX };

/**
 * The dimensions (docs/reporting.md): a listed row is (again) alive: every column takes what the listing says (a
 * renamed or moved building, floor or space is overwritten, SCD type 1), last_seen_at moves on, deleted_at is cleared.
 */
const buildings = tableSink('buildings', {
  table: buildingsTable,
  pageColumns: ['customer_id', 'first_seen_at', 'last_seen_at'],
  pageValues: (page) => [page.customerId, page.at, page.at],
  nonEmpty: ['id'],
  rules: { timeZone: TIME_ZONE },
  onConflict:
    'ON CONFLICT (customer_id, id) DO UPDATE SET name = excluded.name, time_zone = excluded.time_zone, last_seen_at = excluded.last_seen_at, deleted_at = NULL',
});

const floors = tableSink('floors', {
  table: floorsTable,
  pageColumns: ['customer_id', 'first_seen_at', 'last_seen_at'],
  pageValues: (page) => [page.customerId, page.at, page.at],
  nonEmpty: ['id', 'buildingId'],
  onConflict:
    'ON CONFLICT (customer_id, id) DO UPDATE SET building_id = excluded.building_id, name = excluded.name, level = excluded.level, ' +
    'last_seen_at = excluded.last_seen_at, deleted_at = NULL',
});

/**
 * Floor spaces: the readings' dictionary is the dimension, so a listed space keeps (or first gets) the key its
 * readings use. The page first finds or makes each space's key as readings do (occupancy-sink.ts, the same key
 * cache), then upserts with that key given: a listing that meets known spaces draws nothing from the key's sequence.
 * A row a reading made has never been listed (NULL first_seen_at): its first listing sets it.
 */
function floorSpacesSink(): SinkDef<FloorSpaceRecord, Map<string, number>> {
  const base = tableSink('floorSpaces', {
    table: floorSpacesTable,
    pageColumns: ['customer_id', 'first_seen_at', 'last_seen_at'],
    pageValues: (page) => [page.customerId, page.at, page.at],
    nonEmpty: ['id', 'floorId', 'buildingId'],
    rules: { capacity: COUNT },
    onConflict:
      'ON CONFLICT (customer_id, floor_space_id) DO UPDATE SET name = excluded.name, floor_id = excluded.floor_id, ' +
      'building_id = excluded.building_id, capacity = excluded.capacity, space_type = excluded.space_type, ' +
      'first_seen_at = COALESCE(floor_spaces.first_seen_at, excluded.first_seen_at), last_seen_at = excluded.last_seen_at, deleted_at = NULL',
  });
  return {
    ...base,
    prepare: (input, records) => floorSpaceKeys(input, records, (r) => r.id),
    rowColumns: [{ name: 'floor_space_key', type: 'int4' }, ...base.rowColumns],
    rowKey: base.rowKey.map((k) => k + 1),
    fill(record, out, offset, index, keys) {
      base.fill(record, out, offset + 1, index, undefined);
      const key = keys.get(record.id);
      if (key === undefined) throw invalid('floor_spaces', index, 'id', 'a non-empty string', record.id);
      out[offset] = key;
    },
  };
}
const floorSpaces = floorSpacesSink();

type Sinks = { [S in SinkName]: SinkDef<SinkRecords[S]> };
const SINKS: Record<Dialect, Sinks> = {
  sqlite: { occupancy: occupancySink('sqlite') as SinkDef<SinkRecords['occupancy']>, buildings, floors, floorSpaces: floorSpaces as SinkDef<FloorSpaceRecord> },
  postgres: { occupancy: occupancySink('postgres') as SinkDef<SinkRecords['occupancy']>, buildings, floors, floorSpaces: floorSpaces as SinkDef<FloorSpaceRecord> },
};

/**
 * A record type (types.ts, written out so the package's types carry no Drizzle types) is the relation's type without
 * the fields records do not carry (columns.ts): a compile error here when the two part.
 */
type TableRecord<T extends { $inferInsert: object }, Drop, I = T['$inferInsert']> = {
  [F in Exclude<keyof I, Drop> as null extends I[F] ? never : F]-?: Exclude<I[F], undefined>;
} & {
  // A nullable column's field may be left out (stored NULL), so a column added later breaks no caller.
  [F in Exclude<keyof I, Drop> as null extends I[F] ? F : never]?: Exclude<I[F], undefined>;
};
type ViewRecord<T extends { $inferSelect: object }, Drop> = { [F in Exclude<keyof T['$inferSelect'], Drop>]-?: T['$inferSelect'][F] };
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const recordTypesMatchTables: [
  Same<SinkRecords['occupancy'], ViewRecord<typeof occupancyView, NotInRecords<'occupancy'>>>,
  Same<SinkRecords['buildings'], TableRecord<typeof buildingsTable, NotInRecords<'buildings'>>>,
  Same<SinkRecords['floors'], TableRecord<typeof floorsTable, NotInRecords<'floors'>>>,
  Same<SinkRecords['floorSpaces'], TableRecord<typeof floorSpacesTable, NotInRecords<'floorSpaces'>>>,
  Same<OccupancySource, (typeof occupancyView.$inferSelect)['source']>,
] = [true, true, true, true, true];
void recordTypesMatchTables;

/**
 * Where every upsert starts, on either dialect: the sink as that dialect writes it, and what it made ready for the
 * page in the page's transaction (dictionary keys, the arrival); undefined for an empty page (nothing to write).
 */
export async function preparePage(
  sink: SinkName | DeclaredSink,
  dialect: Dialect,
  input: Omit<PrepareInput, 'dialect'>,
  records: ReadonlyArray<unknown>,
): Promise<{ def: SinkDef<unknown>; prepared: unknown } | undefined> {
  if (records.length === 0) return undefined;
  const def = (typeof sink === 'string' ? sinkDef(sink, dialect) : sink) as unknown as SinkDef<unknown>;
  return { def, prepared: def.prepare ? await def.prepare({ ...input, dialect }, records) : undefined };
}

/** What an upsert tells the page's other statements (Executor.upsert). */
export function upserted(def: SinkDef<unknown>, prepared: unknown): Upserted {
  return {
    ...(def.floorSpaceKeys ? { floorSpaceKeys: def.floorSpaceKeys(prepared) } : {}),
    ...(def.readingSpans ? { readingSpans: def.readingSpans(prepared) } : {}),
  };
}

/** One value per sink definition, made on first use (each room's upsert text; a declared table's sink is one too). */
export function perSink<T>(make: (def: SinkDef<unknown>) => T): (def: SinkDef<unknown>) => T {
  const made = new WeakMap<SinkDef<unknown>, T>();
  return (def) => {
    if (!made.has(def)) made.set(def, make(def));
    return made.get(def)!;
  };
}

export function sinkDef<S extends SinkName>(sink: S, dialect: Dialect = 'postgres'): SinkDef<SinkRecords[S]> {
  const def = SINKS[dialect][sink] as SinkDef<SinkRecords[S]> | undefined;
  if (!def) throw new StoreError(`unknown sink "${String(sink)}"; known sinks: ${SINK_NAMES.join(', ')}`);
  return def;
}
