import { UsageError } from './errors.ts';

/**
 * Instants as text. Every timestamp that enters occupancy-sync (API records, webhook deliveries, command-line flags,
 * stored rows) is read here, strictly: an ISO 8601 date-time with a zone, whose calendar fields exist. `Date.parse`
 * alone is not enough: it rolls `2026-02-30` over into March and reads a zone-less time as local time.
 */

/** Canonical text form: `YYYY-MM-DDTHH:MM:SS.sssZ`, fixed width, so text order is time order. */
export type IsoUtc = string;

/**
 * Exactly what `toIsoUtc` returns, for fields that exist in every month: a match needs no parsing at all. Days
 * 29-31 and anything out of range take the strict path. The hot path of the sync, the store and the receiver.
 */
export const CANONICAL_FAST = /^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1\d|2[0-8])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/;

const ISO_WITH_ZONE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(?:(Z)|([+-])(\d{2}):?(\d{2}))$/i;

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/**
 * Epoch milliseconds of an ISO 8601 date-time with a zone (`Z`, `±HH:MM` or `±HHMM`), or undefined when the text is
 * not one or names a date or time that does not exist (month 13, 30 February, 24:00, offset +25:00). Fractions
 * beyond milliseconds are cut, never rounded, so an instant never moves into the next millisecond.
 */
export function parseIsoInstant(text: string): number | undefined {
  const m = ISO_WITH_ZONE.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac, z, sign, oh, om] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = s === undefined ? 0 : Number(s);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offset = 0;
  if (!z) {
    const offH = Number(oh);
    const offM = Number(om);
    if (offH > 23 || offM > 59) return undefined;
    offset = (sign === '-' ? -1 : 1) * (offH * 60 + offM) * 60_000;
  }
  const ms = frac === undefined ? 0 : Number(frac.slice(1, 4).padEnd(3, '0'));
  const utc = Date.UTC(year, month - 1, day, hour, minute, second, ms);
  // Date.UTC maps years 0-99 to 1900-1999.
  const fixed = year < 100 ? new Date(utc).setUTCFullYear(year) : utc;
  const result = fixed - offset;
  return Number.isFinite(result) ? result : undefined;
}

/**
 * The canonical text of an instant given as epoch milliseconds, a Date, or ISO text with a zone (read strictly, as
 * parseIsoInstant does); a RangeError for a value that is no instant.
 */
export function toIsoUtc(value: number | Date | string): IsoUtc {
  if (typeof value === 'string') {
    const canonical = canonicalIso(value);
    if (canonical === undefined) throw new RangeError(`not a valid ISO 8601 timestamp with a zone: ${JSON.stringify(value)}`);
    return canonical;
  }
  const ms = value instanceof Date ? value.getTime() : value;
  if (!Number.isFinite(ms)) throw new RangeError(`not a valid timestamp: ${String(value)}`);
  return new Date(ms).toISOString();
}

/** Epoch milliseconds of a stored instant (canonical text), null for none: the engine plans in milliseconds. */
export function epochMsOrNull(iso: IsoUtc | null | undefined): number | null {
  if (!iso) return null;
  const ms = parseIsoInstant(iso);
  if (ms === undefined) throw new RangeError(`not a valid ISO 8601 timestamp with a zone: ${JSON.stringify(iso)}`);
  return ms;
}

/** The canonical text of epoch milliseconds, null for none: how the engine's instants go back to the store. */
export function isoUtcOrNull(ms: number | null): IsoUtc | null {
  return ms === null ? null : toIsoUtc(ms);
}

/** The canonical form of ISO text with a zone, or undefined when it is not one (see parseIsoInstant). */
export function canonicalIso(text: string): IsoUtc | undefined {
  if (CANONICAL_FAST.test(text)) return text;
  const ms = parseIsoInstant(text);
  return ms === undefined ? undefined : toIsoUtc(ms);
}

/*
 * Command-line values, parsed strictly: a flag that does not mean exactly one thing is a usage error (exit 64) that
 * quotes what was typed and says what would work, never a silent reinterpretation.
 */

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const AGO = /^(\d+)(h|d|w)$/;
const AGO_UNIT_MS: Record<string, number> = { h: 3_600_000, d: 86_400_000, w: 604_800_000 };
const HOUR = 3_600_000;

/**
 * A command-line instant: `2026-01-01` (midnight UTC), an ISO 8601 date-time with a zone (`2026-01-01T06:00:00Z`,
 * `2026-01-01T08:00+02:00`), a time before now in whole hours, days or weeks (`36h`, `7d`, `2w`), or `now`. The relative forms
 * are rounded down to the hour (`now` is this hour's start, as `0h`), so that the same flag means the same instant
 * all that hour: a backfill run again resumes instead of refusing another range. A date that does not exist
 * (2026-02-30), a date-time without a zone, or an instant outside the years readings can have is refused.
 */
export function parseInstant(flag: string, value: string, now = Date.now()): number {
  const text = value.trim();
  const ago = AGO.exec(text === 'now' ? '0h' : text);
  if (ago) return inReadingYears(flag, value, Math.floor((now - Number(ago[1]) * AGO_UNIT_MS[ago[2]!]!) / HOUR) * HOUR);
  const ms = DATE_ONLY.test(text) ? parseIsoInstant(`${text}T00:00:00Z`) : parseIsoInstant(text);
  if (ms !== undefined) return inReadingYears(flag, value, ms);
  let problem = 'not an ISO 8601 date or date-time with a zone, a time ago such as 36h or 7d, nor now';
  if (DATE_ONLY.test(text) || /^\d{4}-\d{2}-\d{2}T/.test(text)) {
    if (/T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(text)) problem = 'a time needs a zone (add Z for UTC)';
    else problem = 'no such date or time';
  }
  throw new UsageError(`${flag} ${JSON.stringify(value)}: ${problem}. Fix: use e.g. 2026-01-01, 2026-01-01T06:00:00Z, 7d (seven days ago) or now`);
}

/**
 * The instants a reading may have, as canonical text (which sorts as its instant). The aggregates compute every hour
 * from a space's first reading to its last: one reading of a clock gone wrong (year 9999, year 1) either left the
 * calendar's years or made a refresh of millions of hours, and stopped every refresh of its customer. No occupancy
 * sensor measured before 1970 or will after 2199; such a time is a broken clock or a wrong field, refused by name
 * (the store, the receiver, the time flags).
 */
export const FIRST_READING = '1970-01-01T00:00:00.000Z';
export const FIRST_READING_MS = Date.parse(FIRST_READING);
export const END_READING = '2200-01-01T00:00:00.000Z';
export const END_READING_MS = Date.parse(END_READING);

/** A time flag's instant, refused by name outside the years readings can have (FIRST_READING to END_READING). */
function inReadingYears(flag: string, value: string, ms: number): number {
  if (ms >= FIRST_READING_MS && ms < END_READING_MS) return ms;
  throw new UsageError(`${flag} ${JSON.stringify(value)}: outside the years readings can have (1970 to 2199). Fix: use e.g. 2026-01-01, 7d (seven days ago) or now`);
}
