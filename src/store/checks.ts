import { StoreError } from '../errors.ts';

/**
 * What the store accepts in a record's value, the same on both dialects: an integer column takes exactly what
 * Postgres's `integer` holds, so SQLite (whose integers are 64-bit) refuses what Postgres would. The range is a 32-bit
 * signed integer's, GraphQL's `Int` too: record declarations (`count`) and `check` use these bounds.
 */
export const INT4_MIN = -2147483648;
export const INT4_MAX = 2147483647;
export const INT4_RULE = `an integer from ${INT4_MIN} to ${INT4_MAX}`;

export function isInt4(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= INT4_MIN && (value as number) <= INT4_MAX;
}

/**
 * A value the store refuses, coded as Postgres codes a value a column cannot hold (SQLSTATE class 22, data
 * exception): whoever tells lasting refusals from passing ones by that code (the webhook receiver answers 422, not
 * 503) treats the store's own refusal as the database's, on both dialects.
 */
class ValueRefused extends Error {
  readonly code = '22000';
}

/** The one message for a record value the store refuses: which record, which field, what it must be, what it was. */
export function invalid(table: string, index: number, field: string, what: string, value: unknown): StoreError {
  const message = `${table} record ${index}: ${field} must be ${what}, got ${JSON.stringify(value) ?? String(value)}`;
  return new StoreError(message, { cause: new ValueRefused(message) });
}
