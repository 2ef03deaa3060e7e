import { CalendarError } from './calendar-error.ts';
import {
  DAY_MS,
  FIRST_INSTANT,
  HOUR_MS,
  MINUTE_MS,
  checkInstant,
  checkZone,
  isoDate,
  isoWeekday,
  offsetChangesAt,
  offsetSpans,
  parseIsoDate,
} from './zone-offsets.ts';

/**
 * Local hours, local days and working time of a zone, for reports that answer in a building's own time. Pure: no
 * clock, no I/O; the zone's offsets come from Intl (src/zone-offsets.ts, cached per zone and month).
 *
 * The rules (docs/reporting.md, "Time-weighted figures (definitions)"):
 * - A local hour starts at every instant the wall clock reads `HH:00:00` and at every change of the zone's offset.
 *   A day when DST starts has 23 hours, one when it ends 25 (two with the same local hour, told apart by their UTC
 *   start); in a zone with a half-hour offset hours start at half past the UTC hour.
 * - A local day runs from the first instant its date is shown to the first instant of the next date: local midnight,
 *   or, on a day whose midnight the clocks skip, the change of offset. Where the clocks go back across midnight (St.
 *   John's before 2011) the date shown again belongs to the day that had begun: dates never repeat.
 * - Working time is the time during which the wall clock shows a time in [start, end) on a working day that is not a
 *   holiday: elapsed time, so 08:00-18:00 is 10 hours on the DST days too; a start the clocks skip (02:30 on a
 *   spring-forward day in Europe) begins when the clock jumps (03:00), and a stretch of wall time the clocks repeat
 *   counts both times it is lived through.
 */

export { CalendarError } from './calendar-error.ts';

/** A local hour, keyed by the instant it starts; `end` is where the next one starts. */
export interface LocalHour {
  start: number;
  end: number;
  /** Local date of the start, `YYYY-MM-DD`. */
  date: string;
  /** Local hour of the start, 0-23. */
  hour: number;
  /** ISO weekday of the local date: Monday 1 ... Sunday 7. */
  weekday: number;
}

/** A local day, keyed by the instant it starts; `end` is where the next one starts (23, 24 or 25 hours later). */
export interface LocalDay {
  start: number;
  end: number;
  date: string;
  weekday: number;
}

/** Where a period of the zone's hours or days start: every multiple of `unitMs` on the wall clock. */
type Unit = typeof HOUR_MS | typeof DAY_MS;

/**
 * Hour or day starts from about `fromMs` (callers drop earlier ones) to the first one after `toMs`, with each one's
 * wall clock reading.
 */
function boundaries(zone: string, fromMs: number, toMs: number, unit: Unit): Array<{ at: number; wall: number }> {
  const found: Array<{ at: number; wall: number }> = [];
  const push = (at: number, wall: number) => {
    if (found.length === 0 || found[found.length - 1]!.at !== at) found.push({ at, wall });
  };
  // A date starts once, at its first instant, even where the clocks go back across midnight (St. John's did, at
  // 00:01, until 2011): looking back two days finds the dates already shown.
  const lookFrom = unit === DAY_MS ? Math.max(FIRST_INSTANT, fromMs - 2 * DAY_MS) : fromMs;
  // A period lasts at most a unit plus the largest change of offset (a 25-hour day): two units find the end of the last.
  const spans = offsetSpans(zone, lookFrom, toMs + 2 * unit + 1);
  let lastDate = -Infinity;
  spans.forEach((span, i) => {
    const o = span.offsetMs;
    if (unit === HOUR_MS) {
      if (i > 0 || offsetChangesAt(zone, span.start)) push(span.start, span.start + o);
    } else if (i > 0) {
      // A change of offset starts a day when it skips midnight into a date not shown before.
      const date = Math.floor((span.start + o) / DAY_MS);
      if (date > lastDate) {
        push(span.start, span.start + o);
        lastDate = date;
      }
    }
    const rem = (((span.start + o) % unit) + unit) % unit;
    for (let at = rem === 0 ? span.start : span.start + unit - rem; at < span.end; at += unit) {
      if (unit === DAY_MS) {
        const date = Math.floor((at + o) / DAY_MS);
        if (date <= lastDate) continue;
        lastDate = date;
      }
      push(at, at + o);
    }
    if (unit === DAY_MS) lastDate = Math.max(lastDate, Math.floor((span.end - 1 + o) / DAY_MS));
  });
  return found;
}

function checkRange(fromMs: number, toMs: number): void {
  checkInstant(fromMs, 'fromMs');
  checkInstant(toMs, 'toMs');
  if (toMs < fromMs) throw new CalendarError('toMs', toMs, `before fromMs ${fromMs}`, 'pass a range with fromMs <= toMs');
}

/**
 * The local hours of `zone` that start in [fromMs, toMs), in order. With `fromMs` and `toMs` on hour starts (local
 * midnights, say) they tile the range exactly: `[h[0].start, ..., h[n-1].start, h[n-1].end]` are the bounds to
 * hand to `timeWeight`.
 */
export function localHours(zone: string, fromMs: number, toMs: number): LocalHour[] {
  checkZone(zone);
  checkRange(fromMs, toMs);
  const b = boundaries(zone, fromMs, toMs, HOUR_MS);
  const hours: LocalHour[] = [];
  for (let i = 0; i + 1 < b.length && b[i]!.at < toMs; i++) {
    const { at, wall } = b[i]!;
    if (at < fromMs) continue;
    const days = Math.floor(wall / DAY_MS);
    hours.push({ start: at, end: b[i + 1]!.at, date: isoDate(days), hour: Math.floor((wall - days * DAY_MS) / HOUR_MS), weekday: isoWeekday(days) });
  }
  return hours;
}

/** The local days of `zone` that start in [fromMs, toMs), in order. */
export function localDays(zone: string, fromMs: number, toMs: number): LocalDay[] {
  checkZone(zone);
  checkRange(fromMs, toMs);
  const b = boundaries(zone, fromMs, toMs, DAY_MS);
  const days: LocalDay[] = [];
  for (let i = 0; i + 1 < b.length && b[i]!.at < toMs; i++) {
    const { at, wall } = b[i]!;
    if (at < fromMs) continue;
    const d = Math.floor(wall / DAY_MS);
    days.push({ start: at, end: b[i + 1]!.at, date: isoDate(d), weekday: isoWeekday(d) });
  }
  return days;
}

/**
 * The instant local date `date` (`YYYY-MM-DD`) starts in `zone`: its midnight, or, when the clocks skip midnight
 * that day, the change of offset that skips it. What a report turns `--from 2026-03-01` into for a building.
 */
export function startOfLocalDate(zone: string, date: string): number {
  checkZone(zone);
  const day = parseIsoDate(date);
  if (day === undefined) throw new CalendarError('date', date, 'not a real date in the form YYYY-MM-DD', 'write the date as 2026-03-29');
  const wall = day * DAY_MS;
  // Offsets lie within a day of UTC: the local date starts within two days either side of its UTC midnight.
  for (const span of offsetSpans(zone, wall - 2 * DAY_MS, wall + 2 * DAY_MS)) {
    const wallStart = span.start + span.offsetMs;
    const wallEnd = span.end + span.offsetMs;
    if (wall >= wallStart && wall < wallEnd) return wall - span.offsetMs;
    if (wallStart > wall && wallStart < wall + DAY_MS) return span.start;
  }
  throw new CalendarError('date', date, `never starts in ${zone}`, 'pick a date the zone lives through');
}

/** A working calendar as configured: the zone, the ISO weekdays worked, the local working hours and holidays. */
export interface WorkingCalendarInput {
  zone: string;
  /** ISO weekdays, Monday 1 ... Sunday 7. */
  days: readonly number[];
  /** Local wall-clock time the working day starts, `HH:MM`. */
  start: string;
  /** Local wall-clock time it ends, `HH:MM` after `start` on the same day, or `24:00`. */
  end: string;
  /** Local dates (`YYYY-MM-DD`) that are not worked. */
  holidays?: readonly string[];
}

/** A validated calendar, ready to use (made only by `workingCalendar`). */
export interface WorkingCalendar {
  readonly zone: string;
  readonly days: ReadonlySet<number>;
  /** Milliseconds after local midnight. */
  readonly startMs: number;
  readonly endMs: number;
  /** Day numbers (days since 1970-01-01 in local dates). */
  readonly holidays: ReadonlySet<number>;
}

const HH_MM = /^([01]\d|2[0-3]):([0-5]\d)$/;

function parseTime(text: unknown, field: 'start' | 'end', label: string | undefined): number {
  if (field === 'end' && text === '24:00') return DAY_MS;
  const m = typeof text === 'string' ? HH_MM.exec(text) : null;
  if (!m) {
    throw new CalendarError(field, text, 'not a time of day in the form HH:MM (00:00 to 23:59)', field === 'end' ? 'write it as 18:00, or 24:00 for the end of the day' : 'write it as 08:00 or 08:30', { label });
  }
  return Number(m[1]) * HOUR_MS + Number(m[2]) * MINUTE_MS;
}

/**
 * Validates a configured calendar once. Every error is a CalendarError naming the field, the value and the fix;
 * `label` says where the calendar came from (`WORKING_HOURS`, `building Harbour Hall`). A working day ends after it
 * starts on the same day: overnight shifts are not supported (a night's hours are two calendars' worth of ranges).
 */
export function workingCalendar(input: WorkingCalendarInput, options?: { label?: string }): WorkingCalendar {
  const label = options?.label;
  if (typeof input?.zone !== 'string') throw new CalendarError('zone', input?.zone, 'missing', 'give the IANA zone of the building, such as Europe/Berlin', { label });
  try {
    checkZone(input.zone);
  } catch (error) {
    if (error instanceof CalendarError) throw new CalendarError('zone', input.zone, 'not a time zone this Node.js knows', 'use an IANA zone name such as Europe/Berlin, America/New_York, Asia/Kolkata or UTC', { label, cause: error });
    throw error;
  }
  if (!Array.isArray(input.days) || input.days.length === 0) {
    throw new CalendarError('days', input.days, 'no working days', 'list ISO weekdays, Monday 1 to Sunday 7, such as [1, 2, 3, 4, 5]', { label });
  }
  for (const day of input.days) {
    if (!Number.isInteger(day) || day < 1 || day > 7) {
      throw new CalendarError('days', input.days, `${String(day)} is not an ISO weekday`, 'use 1 (Monday) to 7 (Sunday), such as [1, 2, 3, 4, 5]', { label });
    }
  }
  const startMs = parseTime(input.start, 'start', label);
  const endMs = parseTime(input.end, 'end', label);
  if (endMs <= startMs) {
    throw new CalendarError('end', input.end, `not after start ${input.start}`, 'give an end later the same day (24:00 for midnight); overnight shifts are not supported', { label });
  }
  const holidays = new Set<number>();
  (input.holidays ?? []).forEach((text, i) => {
    const day = typeof text === 'string' ? parseIsoDate(text) : undefined;
    if (day === undefined) throw new CalendarError(`holidays[${i}]`, text, 'not a real date in the form YYYY-MM-DD', 'write a local date such as 2026-12-25', { label });
    holidays.add(day);
  });
  return { zone: input.zone, days: new Set(input.days), startMs, endMs, holidays };
}

/** Calls `each(start, end)` for every stretch of working time in [fromMs, toMs), in order (touching ones apart). */
function forEachWorking(calendar: WorkingCalendar, fromMs: number, toMs: number, each: (start: number, end: number) => void): void {
  checkRange(fromMs, toMs);
  for (const span of offsetSpans(calendar.zone, fromMs, toMs)) {
    const o = span.offsetMs;
    const wallFrom = span.start + o;
    const wallTo = span.end + o;
    for (let day = Math.floor(wallFrom / DAY_MS), last = Math.floor((wallTo - 1) / DAY_MS); day <= last; day++) {
      if (!calendar.days.has(isoWeekday(day)) || calendar.holidays.has(day)) continue;
      const start = Math.max(day * DAY_MS + calendar.startMs, wallFrom);
      const end = Math.min(day * DAY_MS + calendar.endMs, wallTo);
      if (end > start) each(start - o, end - o);
    }
  }
}

/** Working milliseconds in [fromMs, toMs): an exact integer. */
export function workingMs(calendar: WorkingCalendar, fromMs: number, toMs: number): number {
  let total = 0;
  forEachWorking(calendar, fromMs, toMs, (start, end) => {
    total += end - start;
  });
  return total;
}

/**
 * The working time in [fromMs, toMs) as disjoint [start, end) instants, in order, touching stretches joined. Their
 * edges cut a report's buckets where working time starts or ends inside an hour (a calendar starting 08:30, or a
 * zone whose offset is not whole hours against the calendar's), so each piece is wholly working time or not.
 */
export function workingIntervals(calendar: WorkingCalendar, fromMs: number, toMs: number): Array<[start: number, end: number]> {
  const found: Array<[number, number]> = [];
  forEachWorking(calendar, fromMs, toMs, (start, end) => {
    const last = found[found.length - 1];
    if (last && last[1] === start) last[1] = end;
    else found.push([start, end]);
  });
  return found;
}
