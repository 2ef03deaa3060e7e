import { StoreError } from '../errors.ts';
import { CANONICAL_FAST, parseIsoInstant, toIsoUtc, type IsoUtc } from '../time.ts';

export { CANONICAL_FAST };

/**
 * Timestamps cross the store boundary in one canonical form, `YYYY-MM-DDTHH:MM:SS.sssZ`. SQLite stores that text
 * (fixed width, so text order is time order); Postgres stores timestamptz and hands it back in the same form.
 */
/** The last canonical text seen by canonicalTimestamp. */
let lastCanonical = '';

/**
 * The canonical form of a timestamp given as ISO text with any offset, a Date or epoch ms. On the hot path the value
 * is usually canonical already: one regex test and no Date allocation.
 */
export function canonicalTimestamp(value: unknown, field: string): IsoUtc {
  if (typeof value === 'string') {
    // Rows come tick by tick: most repeat the time of the row before (a string compare, not the regex).
    if (value === lastCanonical) return value;
    if (CANONICAL_FAST.test(value)) return (lastCanonical = value);
    const ms = parseIsoInstant(value.trim());
    if (ms !== undefined) return toIsoUtc(ms);
    // Bare dates and zone-less date-times would be read as local time: refuse them instead of guessing.
    const problem = /(Z|[+-]\d\d:?\d\d)$/i.test(value.trim()) ? 'is not a valid timestamp' : 'has no UTC offset; use ISO 8601 with Z or ±HH:MM';
    throw new StoreError(`${field}: ${JSON.stringify(value)} ${problem}`);
  }
  if ((typeof value === 'number' && Number.isFinite(value)) || (value instanceof Date && Number.isFinite(value.getTime()))) {
    return toIsoUtc(value);
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
