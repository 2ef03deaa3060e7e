import { sql, type SQL } from '../../db/schema/drizzle.ts';
import type { Dialect } from '../config.ts';

/**
 * `column IN (keys)` for a list of integer keys bound as one value: a Postgres int4 array (`= ANY`), a JSON array on
 * SQLite (`json_each`). One statement text whatever the number of keys, so each dialect prepares it once; a list of
 * one parameter per key cost the refresh a new text (a new prepared statement on Postgres) and drizzle's building of
 * hundreds of fragments per statement (docs/performance.md, issue 40).
 */
export function keyIn(dialect: Dialect, column: SQL, keys: readonly number[]): SQL {
  for (const k of keys) {
    // The keys are the store's own (dictionary keys): anything else is a bug, not input to quote.
    if (!Number.isSafeInteger(k)) throw new TypeError(`keyIn: ${String(k)} is not an integer key`);
  }
  return dialect === 'postgres'
    ? sql`${column} = ANY(${`{${keys.join(',')}}`}::int4[])`
    : sql`${column} IN (SELECT value FROM json_each(${JSON.stringify(keys)}))`;
}
