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

/**
 * `column IN (values)` for a list of texts bound as one value, as keyIn binds keys: a Postgres text array literal, a
 * JSON array on SQLite. The lists are ids a page or listing names (every floor space of a portfolio on a run's first
 * page): a parameter per id cost a statement text per list and drizzle a fragment per id, three to six times the read
 * (docs/performance.md).
 */
export function textIn(dialect: Dialect, column: SQL, values: readonly string[]): SQL {
  return dialect === 'postgres'
    ? sql`${column} = ANY(${textArray(values)}::text[])`
    : sql`${column} IN (SELECT value FROM json_each(${JSON.stringify(checkedTexts(values))}))`;
}

/**
 * A Postgres array literal of texts: every element double-quoted with its backslashes and double quotes escaped, so
 * none reads as NULL, a separator or a nested array, whatever it holds.
 */
export function textArray(values: readonly string[]): string {
  return `{${checkedTexts(values).map((v) => `"${v.replace(/[\\"]/g, '\\$&')}"`).join(',')}}`;
}

function checkedTexts(values: readonly string[]): readonly string[] {
  for (const v of values) {
    // Stored texts were checked on their way in (no lone surrogate, no NUL: records.ts storableText): anything else
    // is a bug here, not input to quote.
    if (typeof v !== 'string' || !v.isWellFormed() || v.includes('\u0000')) throw new TypeError(`textIn: ${JSON.stringify(v)} is not a storable text`);
  }
  return values;
}
