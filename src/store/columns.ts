import type { PgTable, PgView } from 'drizzle-orm/pg-core';
import { getTableColumns, getTableName, pgCore, type Column as DrizzleColumn } from '../../db/schema/drizzle.ts';
import { buildings, floorSpaces, floors, occupancy } from '../../db/schema/pg.ts';
import type { SinkName, SinkRecords } from './types.ts';

/**
 * The columns of each sink as a record sees them, derived from the one definition of the relation users read (its
 * Drizzle table or view, db/schema/pg.ts): which fields a record carries, their SQL names, types and nullability, the
 * key and whether rows can be soft-deleted. The store's sink registry (sinks.ts) and the engine's stream definitions
 * both take them from here, so a column is declared once. Light on purpose: it loads the schema, not the store.
 */

export type SinkColumnType = 'text' | 'integer' | 'timestamp';

export interface SinkColumn<F extends string = string> {
  /** The record field, e.g. `floorSpaceId`. */
  field: F;
  /** The column users read, e.g. `floor_space_id`. */
  column: string;
  type: SinkColumnType;
  nullable: boolean;
  /** Part of the sink's key: with the customer, these fields identify a row. */
  key: boolean;
}

export interface SinkShape<S extends SinkName = SinkName> {
  /** The relation users read: the documented table or view. */
  relation: string;
  /** The fields each record carries, in the relation's column order. */
  columns: ReadonlyArray<SinkColumn<keyof SinkRecords[S] & string>>;
  /** Rows missing from a complete listing can be marked deleted (the relation keeps last_seen_at and deleted_at). */
  softDelete: boolean;
}

interface SinkSource {
  relation: PgTable | PgView;
  /**
   * The relation's fields a record does not carry: the page sets them (customer, times) or the store derives them
   * (arrival, soft delete). Every other column is a record field.
   */
  notInRecords: readonly string[];
  /** The key's record fields, for a view or a table whose primary key is a store-made key (else the primary key). */
  key?: readonly string[];
}

/** Adding a sink: its table (or view) and what records do not carry. */
const SOURCES = {
  buildings: { relation: buildings, notInRecords: ['customerId', 'firstSeenAt', 'lastSeenAt', 'deletedAt'] },
  floors: { relation: floors, notInRecords: ['customerId', 'firstSeenAt', 'lastSeenAt', 'deletedAt'] },
  // The readings' dictionary is the dimension: its key column is the store's, its primary key that key.
  floorSpaces: { relation: floorSpaces, notInRecords: ['floorSpaceKey', 'customerId', 'firstSeenAt', 'lastSeenAt', 'deletedAt'], key: ['id'] },
  occupancy: {
    relation: occupancy,
    notInRecords: ['customerId', 'source', 'ingestedAt', 'polledAt', 'deliveredAt'],
    key: ['floorSpaceId', 'observedAt'],
  },
} as const satisfies { [S in SinkName]: SinkSource };

/** The fields of a sink's relation that its records do not carry (sinks.ts checks the record types with it). */
export type NotInRecords<S extends SinkName> = (typeof SOURCES)[S]['notInRecords'][number];

export const SINK_NAMES = Object.keys(SOURCES) as SinkName[];

function typeOf(column: DrizzleColumn, where: string): SinkColumnType {
  const sqlType = column.getSQLType();
  if (sqlType === 'text') return 'text';
  if (sqlType === 'integer') return 'integer';
  if (sqlType.startsWith('timestamp')) return 'timestamp';
  throw new Error(`${where}.${column.name}: no record type for ${sqlType}`);
}

function isView(relation: PgTable | PgView): relation is PgView {
  return pgCore().isPgView(relation);
}

/** A shape before its fields are typed by its sink. */
interface Derived {
  relation: string;
  columns: SinkColumn[];
  softDelete: boolean;
}

function derive(sink: SinkName): Derived {
  const { relation, notInRecords, key } = SOURCES[sink] as SinkSource;
  const view = isView(relation);
  const name = view ? pgCore().getViewConfig(relation).name : getTableName(relation);
  const all = (view ? pgCore().getViewConfig(relation).selectedFields : getTableColumns(relation)) as Record<string, DrizzleColumn>;
  const keyColumns = key
    ? new Set(key.map((field) => all[field]?.name))
    : new Set(pgCore().getTableConfig(relation as PgTable).primaryKeys[0]?.columns.map((c) => c.name));
  if (keyColumns.size === 0) throw new Error(`${name}: a sink needs a key (a primary key, or key in store/columns.ts)`);
  for (const field of [...notInRecords, ...(key ?? [])]) if (!all[field]) throw new Error(`${name}: no field ${field} in its Drizzle definition`);
  const columns = Object.entries(all)
    .filter(([field]) => !notInRecords.includes(field))
    .map(([field, column]) => ({ field, column: column.name, type: typeOf(column, name), nullable: !column.notNull, key: keyColumns.has(column.name) }));
  const names = new Set(Object.values(all).map((c) => c.name));
  return { relation: name, columns, softDelete: names.has('deleted_at') && names.has('last_seen_at') };
}

const SHAPES = new Map<SinkName, Derived>();

/**
 * The record fields of `sink` with their columns, types, nullability and key, and whether its rows can be
 * soft-deleted: everything a stream definition needs to map API records onto the sink.
 *
 * @example
 * sinkColumns('buildings').columns.map((c) => c.column) // ['id', 'name', 'time_zone']
 */
export function sinkColumns<S extends SinkName>(sink: S): SinkShape<S> {
  if (!(sink in SOURCES)) throw new Error(`unknown sink "${String(sink)}"; known sinks: ${SINK_NAMES.join(', ')}`);
  let shape = SHAPES.get(sink);
  if (!shape) SHAPES.set(sink, (shape = derive(sink)));
  return shape as unknown as SinkShape<S>;
}

/** The record fields that identify a row of `sink` (with the customer): a stream's records are keyed by them. */
export function sinkKey<S extends SinkName>(sink: S): ReadonlyArray<keyof SinkRecords[S] & string> {
  return sinkColumns(sink).columns.filter((c) => c.key).map((c) => c.field);
}
