import type { Dialect } from '../config.ts';
import type { Executor, PageContext } from './adapter.ts';
import type { KeyScope } from './key-cache.ts';

export type { PageContext } from './adapter.ts';

/**
 * What a sink is (the sink registry, sinks.ts, builds one per sink; occupancy-sink.ts the occupancy one): the columns
 * it writes, once per page or per record, and how. Its own file so the sinks, the occupancy sink and its layouts, and
 * the adapter share these types without importing each other.
 */

/** How a bound value travels: the Postgres array element type of unnest; `int8` of a timestamp means epoch ms. */
export type ColumnType = 'text' | 'timestamptz' | 'int4' | 'int8' | 'uuid' | 'float8' | 'bool';

export interface Column {
  name: string;
  type: ColumnType;
}

/**
 * A written column made from bound values by SQL, where the table does not store a value as bound. `sql` names each
 * bound column it reads as `:name`, each once and in bound order (SQLite binds positionally).
 */
export interface ComputedColumn {
  column: string;
  sql: string;
}

/**
 * What a sink needs from the database before it writes a page (dictionary keys, the page's arrival row), found or
 * made in the page's transaction. `keys` is the room's cache of committed dictionary keys.
 */
export interface PrepareInput {
  tx: Executor;
  dialect: Dialect;
  keys: KeyScope;
  page: PageContext;
}

export interface SinkDef<R, P = unknown> {
  /** The relation users read (and counts and checks query): the documented table or view. */
  table: string;
  /** The table the upsert writes (the same as `table` unless the readable relation is a view). */
  writeTable: string;
  /** Runs once per page before its rows are written; what it returns reaches pageValues and fill. */
  prepare?(input: PrepareInput, records: ReadonlyArray<R>): Promise<P>;
  /** The floor space key of each floor space id the page's records name, from what prepare found (readings only). */
  floorSpaceKeys?(prepared: P): ReadonlyMap<string, number>;
  /** Per floor space key, the first and last instant (canonical text) of the page's records, as fill wrote them (readings only). */
  readingSpans?(prepared: P): ReadonlyMap<number, readonly [string, string]>;
  /** Columns with one value for the whole page (bound once, not per row). */
  pageColumns: readonly Column[];
  pageValues(page: PageContext, prepared: P): unknown[];
  /** Columns with one value per record, in the order `fill` writes them. */
  rowColumns: readonly Column[];
  /** Written columns computed from bound ones (they replace the bound columns they read). */
  computed: readonly ComputedColumn[];
  /** The record fields, in the order of the relation's columns. */
  rowFields: ReadonlyArray<keyof R & string>;
  /** The record fields that, with the page columns, form the table's primary key. */
  key: ReadonlyArray<keyof R & string>;
  /** Indexes in rowColumns of the values that identify a row within a page (Postgres collapses repeats by them). */
  rowKey: readonly number[];
  /** Validates one record and writes its row values into `out` from `offset` (no allocation on the hot path). */
  fill(record: R, out: unknown[], offset: number, index: number, prepared: P): void;
  /** The portable ON CONFLICT clause (SQLite and Postgres share the syntax, including `excluded`). */
  onConflict: string;
  /** Rows missing from a complete listing can be marked deleted (the table has last_seen_at and deleted_at). */
  softDelete: boolean;
}

