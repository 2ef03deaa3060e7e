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

/** A count (a headcount, a capacity): what the columns' `>= 0` constraints hold, checked before the database says so. */
export const COUNT_RULE = `a whole number from 0 to ${INT4_MAX}`;

export function isCount(value: unknown): value is number {
  return isInt4(value) && value >= 0;
}

const ZONES = new Map<string, boolean>();

/**
 * An IANA time zone name that Intl knows (`Europe/London`, `Asia/Kolkata`, `UTC`): what the reports convert local
 * hours with. Offsets (`+05:30`) are not zone names: they know no daylight saving time.
 */
export function isTimeZone(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  let known = ZONES.get(value);
  if (known === undefined) {
    known = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(value) && accepted(value);
    if (ZONES.size < 10_000) ZONES.set(value, known);
  }
  return known;
}

function accepted(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

export const TIME_ZONE_RULE = 'an IANA time zone name Intl knows (e.g. Europe/London)';
export const TIME_ZONE_FIX = "map the platform's values to zone names (a value map in the stream's record), or leave the field unmapped (stored NULL)";

/**
 * A value the store refuses, coded as Postgres codes a value a column cannot hold (SQLSTATE class 22, data
 * exception): whoever tells lasting refusals from passing ones by that code (the webhook receiver answers 422, not
 * 503) treats the store's own refusal as the database's, on both dialects.
 */
class ValueRefused extends Error {
  readonly code = '22000';
}

/** The one message for a record value the store refuses: which record, which field, what it must be, what it was. */
export function invalid(table: string, index: number, field: string, what: string, value: unknown, fix?: string): StoreError {
  const message = `${table} record ${index}: ${field} must be ${what}, got ${JSON.stringify(value) ?? String(value)}${fix ? `. Fix: ${fix}` : ''}`;
  return new StoreError(message, { cause: new ValueRefused(message) });
}
