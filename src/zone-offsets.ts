import { CalendarError } from './calendar-error.ts';

/**
 * A time zone as a list of spans of constant UTC offset, found with Intl alone (no time zone library) and cached per
 * zone and UTC month: a run's refresh of a few hours asks for a month or two, not a year, and a cron run pays each
 * reading of Intl again for every zone of its buildings. Within a span the local wall clock is the instant plus a fixed
 * offset, so local hours, days and working time are plain arithmetic there; only the spans' edges (DST changes, a
 * zone's historical changes) need Intl.
 *
 * Offsets are found by reading the zone's offset once a day through the month and searching, to the second, where it
 * changed between two readings. Two changes less than a day apart that return to the same offset would be missed;
 * the time zone database has none in the range reports use. Instants are epoch milliseconds in years 1 to 9999.
 */

export const SECOND_MS = 1_000;
export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

/** 0001-01-01T00:00:00Z and 10000-01-01T00:00:00Z: what Intl formats with a plain four-digit year. */
export const FIRST_INSTANT = -62_135_596_800_000;
export const END_INSTANT = 253_402_300_800_000;

/** A stretch of time in which the zone's offset does not change: the wall clock reads `instant + offsetMs`. */
export interface OffsetSpan {
  start: number;
  end: number;
  offsetMs: number;
}

/** One UTC month of a zone: `starts[i]` is where `offsets[i]` begins; `starts[0]` is the month's first instant. */
interface MonthOffsets {
  starts: number[];
  offsets: number[];
}

interface ZoneCache {
  format: Intl.DateTimeFormat;
  /** By month number: the UTC year times 12 plus the month, 0-11. */
  months: Map<number, MonthOffsets>;
}

/**
 * Months cached across all zones before the cache starts over: bounds memory when callers ask for any month (a
 * hundred zones over twenty years fit; each month is an entry of its own, as a year was).
 */
const MAX_CACHED_MONTHS = 24_000;
let cachedMonths = 0;
const zones = new Map<string, ZoneCache>();

/** The zone's cache, created on first use; a CalendarError naming `field` when Intl does not know the zone. */
function zoneCache(zone: string, field = 'zone'): ZoneCache {
  const hit = zones.get(zone);
  if (hit) return hit;
  let format: Intl.DateTimeFormat;
  try {
    if (typeof zone !== 'string' || zone.trim() === '') throw new RangeError('empty');
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
  } catch (cause) {
    throw new CalendarError(field, zone, 'not a time zone this Node.js knows', 'use an IANA zone name such as Europe/Berlin, America/New_York, Asia/Kolkata or UTC', { cause });
  }
  const cache: ZoneCache = { format, months: new Map() };
  zones.set(zone, cache);
  return cache;
}

/** The zone as given, when Intl knows it; a CalendarError naming `field`, the value and the fix otherwise. */
export function checkZone(zone: string, field = 'zone'): string {
  zoneCache(zone, field);
  return zone;
}

export function checkInstant(ms: number, field: string): void {
  if (!Number.isSafeInteger(ms) || ms < FIRST_INSTANT || ms >= END_INSTANT) {
    throw new CalendarError(field, ms, 'not an instant in epoch milliseconds (an integer in years 1 to 9999)', 'pass Date.getTime() of a real date, or an integer such as Date.UTC(2026, 0, 1)');
  }
}

/** The wall clock's offset at `ms` (whole seconds), read from Intl: the slow path the cache exists to avoid. */
function intlOffset(format: Intl.DateTimeFormat, ms: number): number {
  // Digits only: robust to the separators a future ICU may choose. en-US order: month, day, year, h, m, s.
  const f = format.format(ms).match(/\d+/g)!;
  const wall = daysFromCivil(Number(f[2]), Number(f[0]), Number(f[1])) * DAY_MS + Number(f[3]) * HOUR_MS + Number(f[4]) * MINUTE_MS + Number(f[5]) * SECOND_MS;
  return wall - Math.floor(ms / SECOND_MS) * SECOND_MS;
}

/** Smallest whole second `t` in (lo, hi] with an offset other than `loOffset`, given that `hi` has one. */
function findChange(format: Intl.DateTimeFormat, lo: number, loOffset: number, hi: number): number {
  while (hi - lo > SECOND_MS) {
    const mid = lo + Math.floor((hi - lo) / 2 / SECOND_MS) * SECOND_MS;
    if (intlOffset(format, mid) === loOffset) lo = mid;
    else hi = mid;
  }
  return hi;
}

function monthOffsets(cache: ZoneCache, month: number): MonthOffsets {
  const hit = cache.months.get(month);
  if (hit) return hit;
  const start = monthStart(month);
  const last = monthStart(month + 1) - SECOND_MS;
  const starts = [start];
  const offsets = [intlOffset(cache.format, start)];
  let at = start;
  let offset = offsets[0]!;
  while (at < last) {
    const next = Math.min(at + DAY_MS, last);
    const nextOffset = intlOffset(cache.format, next);
    // More than one change between two readings is followed one change at a time.
    while (nextOffset !== offset) {
      const change = findChange(cache.format, at, offset, next);
      at = change;
      offset = intlOffset(cache.format, change);
      starts.push(change);
      offsets.push(offset);
    }
    at = next;
  }
  if (++cachedMonths > MAX_CACHED_MONTHS) {
    for (const z of zones.values()) z.months.clear();
    cachedMonths = 1;
  }
  const value = { starts, offsets };
  cache.months.set(month, value);
  return value;
}

/** The month number (UTC year times 12 plus the month, 0-11) of an instant. */
function utcMonth(ms: number): number {
  const { year, month } = civilFromDays(Math.floor(ms / DAY_MS));
  return year * 12 + month - 1;
}

/** The first instant of a month number. */
function monthStart(month: number): number {
  const year = Math.floor(month / 12);
  return daysFromCivil(year, month - year * 12 + 1, 1) * DAY_MS;
}

/** Index of the last entry of a sorted list that is <= `ms` (the list's first entry is <= `ms`). */
function lastAtOrBefore(starts: readonly number[], ms: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= ms) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** The zone's offset at `ms`: the local wall clock reads `ms + offsetAt(zone, ms)`. */
export function offsetAt(zone: string, ms: number): number {
  checkInstant(ms, 'instant');
  const m = monthOffsets(zoneCache(zone), utcMonth(ms));
  return m.offsets[lastAtOrBefore(m.starts, ms)]!;
}

/**
 * The spans of constant offset that cover [fromMs, toMs), in order, the first starting at `fromMs` and the last
 * ending at `toMs`; every start after the first is a change of offset. Empty when the range is.
 */
export function offsetSpans(zone: string, fromMs: number, toMs: number): OffsetSpan[] {
  checkInstant(fromMs, 'fromMs');
  checkInstant(toMs, 'toMs');
  const cache = zoneCache(zone);
  const spans: OffsetSpan[] = [];
  if (toMs <= fromMs) return spans;
  const firstMonth = utcMonth(fromMs);
  for (let month = firstMonth, lastMonth = utcMonth(toMs - 1); month <= lastMonth; month++) {
    const m = monthOffsets(cache, month);
    const first = month === firstMonth ? lastAtOrBefore(m.starts, fromMs) : 0;
    for (let i = first; i < m.starts.length; i++) {
      const start = Math.max(m.starts[i]!, fromMs);
      if (start >= toMs) break;
      const offsetMs = m.offsets[i]!;
      const prev = spans[spans.length - 1];
      if (prev && prev.offsetMs === offsetMs) continue;
      if (prev) prev.end = start;
      spans.push({ start, end: toMs, offsetMs });
    }
  }
  return spans;
}

/** Whether the offset changes exactly at `ms` (a DST change, or a zone's historical change). */
export function offsetChangesAt(zone: string, ms: number): boolean {
  return ms - 1 >= FIRST_INSTANT && offsetAt(zone, ms - 1) !== offsetAt(zone, ms);
}

// Calendar arithmetic on day numbers (days since 1970-01-01), proleptic Gregorian: Howard Hinnant's algorithms.

export function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

export function civilFromDays(days: number): { year: number; month: number; day: number } {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  return { year: yoe + era * 400 + (month <= 2 ? 1 : 0), month, day };
}

/** ISO weekday of a day number: Monday 1 ... Sunday 7 (1970-01-01 was a Thursday). */
export function isoWeekday(days: number): number {
  return ((((days + 3) % 7) + 7) % 7) + 1;
}

const dateTexts = new Map<number, string>();

/** `YYYY-MM-DD` of a day number (cached: a year of hours asks for each date 24 times). */
export function isoDate(days: number): string {
  let text = dateTexts.get(days);
  if (text === undefined) {
    const { year, month, day } = civilFromDays(days);
    text = `${String(year).padStart(4, '0')}-${month < 10 ? '0' : ''}${month}-${day < 10 ? '0' : ''}${day}`;
    if (dateTexts.size > 400_000) dateTexts.clear();
    dateTexts.set(days, text);
  }
  return text;
}

/** The day number of a real `YYYY-MM-DD` date, or undefined when the text is not one (2026-02-30, 2026-2-3). */
export function parseIsoDate(text: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) return undefined;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  if (year < 1 || month < 1 || month > 12 || day < 1) return undefined;
  const days = daysFromCivil(year, month, day);
  return civilFromDays(days).day === day ? days : undefined;
}
