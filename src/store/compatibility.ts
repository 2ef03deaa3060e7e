import type { Dialect } from '../config.ts';
import type { TableColumnType } from './types.ts';

/**
 * What differs between SQLite and Postgres, as data (pg-boss keeps the same as COMPATIBILITY_FLAGS): the neutral core
 * (store.ts, migrator.ts, the sinks) reads these and is written once; the rooms (sqlite/, postgres/) only drive their
 * database. The occupancy tables' layouts, which differ by design, are data too (occupancy-layout.ts).
 */
export interface CompatibilityFlags {
  /** The dialect's folder under db/migrations/ and its file under db/views/. */
  files: 'sqlite' | 'pg';
  /** The type drizzle-kit gives created_at in its bookkeeping table on this dialect. */
  migrationTimeType: 'numeric' | 'bigint';
  /**
   * A view is replaced in place (`CREATE OR REPLACE VIEW`: grants and views built on it survive). Without it (SQLite,
   * where a view keeps no grants and dependants are resolved when queried) it is dropped and made again.
   */
  replaceViews: boolean;
  /** Whether a table exists: `ok` is true or false; $1 is its name as written in SQL (quoted, schema-qualified). */
  tableExists: string;
  /** The SQL type of a declared table's column of each store type (docs/tables.md, "Types"). */
  declaredTypes: Readonly<Record<TableColumnType, string>>;
  /**
   * How a boolean is bound, [false, true]: SQLite has no boolean type and its driver binds none (0, 1); postgres.js
   * sends a list of booleans typed as one boolean, not an array, so Postgres gets their text (f, t).
   */
  boundBooleans: readonly [unknown, unknown];
}

export const COMPATIBILITY_FLAGS: Readonly<Record<Dialect, CompatibilityFlags>> = {
  sqlite: {
    files: 'sqlite',
    migrationTimeType: 'numeric',
    replaceViews: false,
    tableExists: `SELECT count(*) > 0 AS ok FROM sqlite_master WHERE type = 'table' AND '"' || name || '"' = $1`,
    // Timestamps as the canonical ISO text every other SQLite table keeps (fixed width: it sorts and compares).
    declaredTypes: { text: 'text', integer: 'integer', bigint: 'integer', double: 'real', boolean: 'integer', timestamp: 'text' },
    boundBooleans: [0, 1],
  },
  postgres: {
    files: 'pg',
    migrationTimeType: 'bigint',
    replaceViews: true,
    tableExists: 'SELECT to_regclass($1) IS NOT NULL AS ok',
    declaredTypes: { text: 'text', integer: 'integer', bigint: 'bigint', double: 'double precision', boolean: 'boolean', timestamp: 'timestamp with time zone' },
    boundBooleans: ['f', 't'],
  },
};
