import type { BucketFigures } from '../time-weight.ts';
import { HOUR_MS, parseIsoDate } from '../zone-offsets.ts';
import { localDays, localHours, startOfLocalDate, workingIntervals, workingMs, type LocalDay, type WorkingCalendar } from '../working-time.ts';

/**
 * The buckets of the time-weighted aggregates (notes: the `occupancy_buckets` contract, docs/reporting.md): the local
 * hours of a building's zone, cut further where its working time starts or ends inside an hour, each with the local
 * day it belongs to. Pure: the same calendar and range give the same buckets, however the range was cut into pieces,
 * which is what lets a commit recompute a few buckets and a rebuild all of them with the same result.
 */

export interface Bucket {
  start: number;
  end: number;
  /** The local date of the day the bucket belongs to. */
  date: string;
  /** Wall-clock hour of the start, 0-23. */
  hour: number;
  /** ISO weekday of `date`. */
  weekday: number;
  working: boolean;
}

/** A row of occupancy_buckets, before it is bound (one dialect's booleans are integers). */
export interface BucketRow extends Omit<BucketFigures, 'start' | 'end'> {
  bucket: Bucket;
}

/** A row of calendar_days. */
export interface CalendarDay extends LocalDay {
  workingMs: number;
  holiday: boolean;
}

/**
 * The buckets that tile the local hours touching [fromMs, toMs): from the hour holding `fromMs` to the one holding
 * `toMs - 1`, in order.
 */
export function bucketsCovering(calendar: WorkingCalendar, fromMs: number, toMs: number): Bucket[] {
  if (!(toMs > fromMs)) return [];
  // A local hour lasts at most an hour: one starting two hours before fromMs is before the one holding it.
  const hours = localHours(calendar.zone, fromMs - 2 * HOUR_MS, toMs).filter((h) => h.end > fromMs);
  if (hours.length === 0) return [];
  const first = hours[0]!.start;
  const last = hours[hours.length - 1]!.end;
  const days = localDays(calendar.zone, first - 3 * 24 * HOUR_MS, last);
  const work = workingIntervals(calendar, first, last);
  const out: Bucket[] = [];
  let d = 0;
  let w = 0;
  for (const h of hours) {
    while (d + 1 < days.length && days[d]!.end <= h.start) d++;
    const day = days[d]!;
    // Cut the hour at every working edge inside it; each piece is wholly working time or not.
    let at = h.start;
    while (at < h.end) {
      while (w < work.length && work[w]![1] <= at) w++;
      const stretch = work[w];
      const inside = stretch !== undefined && stretch[0] <= at;
      const next = Math.min(h.end, stretch === undefined ? h.end : inside ? stretch[1] : stretch[0]);
      out.push({ start: at, end: next, date: day.date, hour: h.hour, weekday: day.weekday, working: inside });
      at = next;
    }
  }
  return out;
}

/** The bounds `timeWeight` takes for `buckets`: their starts, then the end of the last. */
export function boundsOf(buckets: readonly Bucket[]): number[] {
  const bounds = buckets.map((b) => b.start);
  if (buckets.length > 0) bounds.push(buckets[buckets.length - 1]!.end);
  return bounds;
}

/** A bucket holds data when a reading is in it or a hold reaches into it: only those are stored. */
export function holdsData(f: BucketFigures): boolean {
  return f.readings > 0 || f.knownMs > 0 || f.headcountKnownMs > 0;
}

/** The local days of `calendar` from date `first` to date `last` (inclusive), with their working time. */
export function calendarDays(calendar: WorkingCalendar, first: string, last: string): CalendarDay[] {
  if (last < first) return [];
  const from = startOfLocalDate(calendar.zone, first);
  const to = startOfLocalDate(calendar.zone, last);
  return localDays(calendar.zone, from, to + 1).map((day) => ({
    ...day,
    workingMs: workingMs(calendar, day.start, day.end),
    holiday: calendar.holidays.has(parseIsoDate(day.date)!),
  }));
}
