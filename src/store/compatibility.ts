import type { Dialect } from '../config.ts';

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
}

export const COMPATIBILITY_FLAGS: Readonly<Record<Dialect, CompatibilityFlags>> = {
  sqlite: {
    files: 'sqlite',
    migrationTimeType: 'numeric',
    replaceViews: false,
    tableExists: `SELECT count(*) > 0 AS ok FROM sqlite_master WHERE type = 'table' AND '"' || name || '"' = $1`,
  },
  postgres: {
    files: 'pg',
    migrationTimeType: 'bigint',
    replaceViews: true,
    tableExists: 'SELECT to_regclass($1) IS NOT NULL AS ok',
  },
};
