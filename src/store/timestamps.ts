import { StoreError } from '../errors.ts';
import { toIsoUtc, type IsoUtc } from './types.ts';

/**
 * Timestamps cross the store boundary in one canonical form, `YYYY-MM-DDTHH:MM:SS.sssZ`. SQLite stores that text
 * (fixed width, so text order is time order); Postgres stores timestamptz and hands it back in the same form.
 */
/**
 * Exactly what toIsoUtc() returns, for fields that exist in every month: a match needs no Date round trip. Days
 * 29-31, and anything out of range (month 13, hour 25), take the slow path, where Date decides. The one definition of
 * the hot path for the store, the sync and the webhook receiver, so none of them accepts what another would refuse.
 */
export const CANONICAL_FAST = /^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1\d|2[0-8])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/;

/**
 * The canonical form of a timestamp given as ISO text with any offset, a Date or epoch ms. On the hot path the value
 * is usually canonical already: one regex test and no Date allocation.
 */
export function canonicalTimestamp(value: unknown, field: string): IsoUtc {
  if (typeof value === 'string' && CANONICAL_FAST.test(value)) return value;
  if (typeof value === 'string' || typeof value === 'number' || value instanceof Date) {
    // Bare dates and zone-less date-times would be read as local time by Date: refuse them instead of guessing.
    if (typeof value === 'string' && !/(Z|[+-]\d\d:?\d\d)$/i.test(value.trim())) {
      throw new StoreError(`${field}: "${value}" has no UTC offset; use ISO 8601 with Z or ±HH:MM`);
    }
    try {
      return toIsoUtc(value);
    } catch (error) {
      throw new StoreError(`${field}: ${JSON.stringify(value)} is not a valid timestamp`, { cause: error });
    }
  }
  throw new StoreError(`${field}: expected an ISO 8601 timestamp, got ${value === null ? 'null' : typeof value}`);
}

/** Like canonicalTimestamp, for nullable columns. */
export function canonicalOrNull(value: unknown, field: string): IsoUtc | null {
  return value === null || value === undefined ? null : canonicalTimestamp(value, field);
}

const PG_UTC_TEXT = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?(?:\+00(?::?00)?)?$/;

/**
 * Parser for Postgres timestamptz/timestamp text. Sessions run with TimeZone=UTC, so the text is
 * `2026-01-01 00:00:00.123+00`; it is rearranged into the canonical form without a Date round trip. Anything else
 * (another session time zone, infinity) falls back to Date parsing or is returned as it came.
 */
export function parsePgTimestamp(text: string): string {
  const m = PG_UTC_TEXT.exec(text);
  if (m) return `${m[1]}T${m[2]}.${(m[3] ?? '').padEnd(3, '0').slice(0, 3)}Z`;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? text : new Date(ms).toISOString();
}
