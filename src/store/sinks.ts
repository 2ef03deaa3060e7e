import type { PgTable } from 'drizzle-orm/pg-core';
import { getTableColumns, getTableName, pgCore, type Column as DrizzleColumn } from '../../db/schema/drizzle.ts';
import { StoreError } from '../errors.ts';
import { buildings as buildingsTable, occupancy as occupancyView } from '../../db/schema/pg.ts';
import type { Dialect } from '../config.ts';
import type { Executor } from './adapter.ts';
import type { KeyScope } from './key-cache.ts';
import { occupancySink } from './occupancy-sink.ts';
import { canonicalOrNull, canonicalTimestamp } from './timestamps.ts';
import type { IsoUtc, OccupancySource, SinkName, SinkRecords } from './types.ts';

/**
 * The sink registry: how a stream's records become rows. A sink names the relation users read (the documented table
 * or view), the table it writes, which of the written columns are set once per page and which per record, and the
 * ON CONFLICT rule. Buildings are derived from their Drizzle table (db/schema/pg.ts, the one definition of their
 * columns): names, types, validation and key. Occupancy is written into the compact tables behind the `occupancy`
 * view (store/occupancy-sink.ts), per dialect. Each adapter builds its one prepared upsert per sink from this
 * (SQLite: INSERT ... VALUES per row; Postgres: INSERT ... SELECT FROM unnest per page).
 */

export type ColumnType = 'text' | 'timestamptz' | 'int4' | 'uuid' | 'blob';

export interface Column {
  name: string;
  /** The Postgres array element type used to pass the column through unnest. */
  type: ColumnType;
}

/** Values shared by every row of a page. */
export interface PageContext {
  customerId: string;
  at: IsoUtc;
  source: OccupancySource;
}

/**
 * What a sink needs from the database before it writes a page (dictionary keys, the page's arrival row), found or
 * made in the page's transaction. `keys` is the adapter's cache of committed dictionary keys.
 */
export interface PrepareInput {
  tx: Executor;
  keys: KeyScope;
  page: PageContext;
}

export interface SinkDef<R, P = unknown> {
  /** The relation users read (and counts and checks query): the documented table or view. */
  table: string;
  /** The table the upsert writes (the same as `table` unless the readable relation is a view). */
  writeTable: string;
  /** The readable relation's column of each record field (for queries by field). */
  readColumns: Readonly<Record<string, { name: string; type: ColumnType }>>;
  /** Runs once per page before its rows are written; what it returns reaches pageValues and fill. */
  prepare?(input: PrepareInput, records: ReadonlyArray<R>): Promise<P>;
  /** Columns with one value for the whole page (bound once, not per row). */
  pageColumns: readonly Column[];
  pageValues(page: PageContext, prepared: P): unknown[];
  /** Columns with one value per record, in the order `fill` writes them. */
  rowColumns: readonly Column[];
  /** The record fields of rowColumns, in the same order. */
  rowFields: ReadonlyArray<keyof R & string>;
  /** The record fields that, with the page columns, form the table's primary key. */
  key: ReadonlyArray<keyof R & string>;
  /** Indexes of `key` in rowColumns. */
  rowKey: readonly number[];
  /** Validates one record and writes its row values into `out` from `offset` (no allocation on the hot path). */
  fill(record: R, out: unknown[], offset: number, index: number, prepared: P): void;
  /**
   * SQLite only: how the statement turns the bound values into the written columns, when not one to one (the
   * occupancy event id is bound as text and stored as 16 bytes).
   */
  insertColumns?(columns: string[]): string[];
  insertValues?(placeholders: string[]): string[];
  /** The portable ON CONFLICT clause (SQLite and Postgres share the syntax, including `excluded`). */
  onConflict: string;
  /** Rows missing from a complete listing can be marked deleted (the table has last_seen_at and deleted_at). */
  softDelete: boolean;
}

/** One record field, as the table declares it. */
interface Field {
  field: string;
  column: Column;
  notNull: boolean;
  /** Text that must not be empty (identifiers and statuses). */
  nonEmpty: boolean;
}

function columnType(column: DrizzleColumn, table: string): ColumnType {
  const sqlType = column.getSQLType();
  if (sqlType === 'text') return 'text';
  if (sqlType === 'integer') return 'int4';
  if (sqlType.startsWith('timestamp')) return 'timestamptz';
  throw new Error(`${table}.${column.name}: no sink column type for ${sqlType}`);
}

function fieldsOf(table: PgTable, fields: readonly string[], nonEmpty: readonly string[]): Field[] {
  const name = getTableName(table);
  const columns = getTableColumns(table) as Record<string, DrizzleColumn>;
  return fields.map((field) => {
    const column = columns[field];
    if (!column) throw new Error(`${name}: no field ${field} in its Drizzle table`);
    return { field, column: { name: column.name, type: columnType(column, name) }, notNull: column.notNull, nonEmpty: nonEmpty.includes(field) };
  });
}

/** The primary key's fields that records carry (the page columns, such as customer_id, complete it). */
function keyOf(table: PgTable, rowFields: readonly Field[]): string[] {
  const [primaryKey] = pgCore().getTableConfig(table).primaryKeys;
  if (!primaryKey) throw new Error(`${getTableName(table)}: a sink table needs a primary key`);
  const names = new Set(primaryKey.columns.map((c) => c.name));
  return rowFields.filter((f) => names.has(f.column.name)).map((f) => f.field);
}

function invalid(table: string, index: number, field: string, what: string, value: unknown): StoreError {
  return new StoreError(`${table} record ${index}: ${field} must be ${what}, got ${JSON.stringify(value)}`);
}

/** Writes one record's values in column order, each checked against its column's type and nullability. */
function filler<R>(table: string, fields: readonly Field[]): SinkDef<R>['fill'] {
  return (record, out, offset, index) => {
    const r = record as Record<string, unknown>;
    for (let c = 0; c < fields.length; c++) {
      const { field, column, notNull, nonEmpty } = fields[c]!;
      const value = r[field];
      if (!notNull && (value === null || value === undefined)) {
        out[offset + c] = null;
      } else if (column.type === 'timestamptz') {
        out[offset + c] = notNull ? canonicalTimestamp(value, `${table} record ${index}: ${field}`) : canonicalOrNull(value, `${table} record ${index}: ${field}`);
      } else if (column.type === 'int4') {
        if (!Number.isInteger(value)) throw invalid(table, index, field, 'an integer', value);
        out[offset + c] = value;
      } else {
        if (typeof value !== 'string' || (nonEmpty && value.length === 0)) throw invalid(table, index, field, nonEmpty ? 'a non-empty string' : 'a string', value);
        out[offset + c] = value;
      }
    }
  };
}

function defineSink<S extends SinkName>(spec: {
  table: PgTable;
  pageColumns: readonly string[];
  pageValues(page: PageContext): unknown[];
  /** The fields each record carries, in column order. */
  rowFields: ReadonlyArray<keyof SinkRecords[S] & string>;
  nonEmpty: ReadonlyArray<keyof SinkRecords[S] & string>;
  onConflict: string;
}): SinkDef<SinkRecords[S]> {
  const table = getTableName(spec.table);
  const rows = fieldsOf(spec.table, spec.rowFields, spec.nonEmpty);
  const byName = new Map(Object.entries(getTableColumns(spec.table) as Record<string, DrizzleColumn>).map(([, c]) => [c.name, c]));
  const pageColumns = spec.pageColumns.map((name) => {
    const column = byName.get(name);
    if (!column) throw new Error(`${table}: no column ${name}`);
    return { name, type: columnType(column, table) };
  });
  const key = keyOf(spec.table, rows) as Array<keyof SinkRecords[S] & string>;
  return {
    table,
    writeTable: table,
    readColumns: Object.fromEntries(rows.map((f) => [f.field, f.column])),
    pageColumns,
    pageValues: spec.pageValues,
    rowColumns: rows.map((f) => f.column),
    rowFields: spec.rowFields,
    key,
    rowKey: key.map((k) => spec.rowFields.indexOf(k)),
    fill: filler(table, rows),
    onConflict: spec.onConflict,
    softDelete: byName.has('deleted_at') && byName.has('last_seen_at'),
  };
}

/** Buildings: a listed building is (again) alive: refresh its name and last_seen_at, clear deleted_at. */
const buildings = defineSink<'buildings'>({
  table: buildingsTable,
  pageColumns: ['customer_id', 'first_seen_at', 'last_seen_at'],
  pageValues: (page) => [page.customerId, page.at, page.at],
  rowFields: ['id', 'name'],
  nonEmpty: ['id'],
  onConflict: 'ON CONFLICT (customer_id, id) DO UPDATE SET name = excluded.name, last_seen_at = excluded.last_seen_at, deleted_at = NULL',
});

type Sinks = { [S in SinkName]: SinkDef<SinkRecords[S]> };
const SINKS: Record<Dialect, Sinks> = {
  sqlite: { occupancy: occupancySink('sqlite') as SinkDef<SinkRecords['occupancy']>, buildings },
  postgres: { occupancy: occupancySink('postgres') as SinkDef<SinkRecords['occupancy']>, buildings },
};

/** A record type is the table's insert type for the record's fields: a compile error here when the two part. */
type RecordOf<T extends { $inferInsert: object }, K extends keyof T['$inferInsert']> = { [F in K]-?: Exclude<T['$inferInsert'][F], undefined> };
type ViewRecordOf<T extends { $inferSelect: object }, K extends keyof T['$inferSelect']> = { [F in K]-?: T['$inferSelect'][F] };
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const recordTypesMatchTables: [
  Same<SinkRecords['occupancy'], ViewRecordOf<typeof occupancyView, 'floorSpaceId' | 'observedAt' | 'occupancyStatus' | 'headcount' | 'eventId'>>,
  Same<SinkRecords['buildings'], RecordOf<typeof buildingsTable, 'id' | 'name'>>,
  Same<OccupancySource, (typeof occupancyView.$inferSelect)['source']>,
] = [true, true, true];
void recordTypesMatchTables;

export function sinkDef<S extends SinkName>(sink: S, dialect: Dialect = 'postgres'): SinkDef<SinkRecords[S]> {
  const def = SINKS[dialect][sink] as SinkDef<SinkRecords[S]> | undefined;
  if (!def) throw new StoreError(`unknown sink "${String(sink)}"; known sinks: ${Object.keys(SINKS[dialect]).join(', ')}`);
  return def;
}

/** The record fields that identify a row of `sink` (with the customer): a stream's records are keyed by them. */
export function sinkKey<S extends SinkName>(sink: S): ReadonlyArray<keyof SinkRecords[S] & string> {
  return sinkDef(sink).key;
}
