import type { BucketFigures } from '../time-weight.ts';
import { HOUR_MS, parseIsoDate } from '../zone-offsets.ts';
import { localDays, localHours, startOfLocalDate, workingIntervals, workingMs, type LocalDay, type WorkingCalendar } from '../working-time.ts';

/**
 * The buckets of the time-weighted aggregates (notes: the `occupancy_buckets` contract, docs/reporting.md): the local
 * hours of a building's zone, cut further where its working time starts or ends inside an hour, each with the local
 * day it belongs to. Pure: the same calendar and range give the same buckets, however the range was cut into pieces,
 * which is what lets a commit recompute a few buckets and a rebuild all of them with the same result.
 */

/** Floor spaces per statement that names them (and whose readings of a slice are held at once). */
export const KEY_CHUNK = 500;

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

/** A floor space's stale range: its buckets touching [fromMs, toMs) are to be recomputed. */
export interface Span {
  key: number;
  fromMs: number;
  toMs: number;
}

/** Spaces recomputed together over one range: the union of their spans. */
export interface SpanGroup {
  keys: number[];
  fromMs: number;
  toMs: number;
}

/**
 * Groups spans so each group is recomputed once over its union: spaces a backfill moved alike share one range (one
 * read of their readings per slice), while a space with a late reading a month back gets a group of its own instead
 * of stretching everyone's. A span joins the group when the union is at most half again the longest span in it
 * (plus an hour, the bucket's grain): the work wasted on others is bounded by that half.
 */
export function groupSpans(spans: readonly Span[]): SpanGroup[] {
  const sorted = [...spans].sort((a, b) => a.fromMs - b.fromMs || a.toMs - b.toMs || a.key - b.key);
  const out: SpanGroup[] = [];
  let group: (SpanGroup & { longest: number; named: Set<number> }) | undefined;
  for (const s of sorted) {
    const length = s.toMs - s.fromMs;
    if (group) {
      const union = Math.max(group.toMs, s.toMs) - group.fromMs;
      if (union <= 1.5 * Math.max(group.longest, length) + HOUR_MS) {
        // A space with two ranges (Ranges) both in the group is in it once: the group's range covers both.
        if (!group.named.has(s.key)) {
          group.keys.push(s.key);
          group.named.add(s.key);
        }
        group.toMs = Math.max(group.toMs, s.toMs);
        group.longest = Math.max(group.longest, length);
        continue;
      }
      out.push({ keys: group.keys, fromMs: group.fromMs, toMs: group.toMs });
    }
    group = { keys: [s.key], fromMs: s.fromMs, toMs: s.toMs, longest: length, named: new Set([s.key]) };
  }
  if (group) out.push({ keys: group.keys, fromMs: group.fromMs, toMs: group.toMs });
  return out;
}

/**
 * [fromMs, toMs) cut into slices of at most `sliceMs`: a refresh reads one slice of a group's readings at a time, so
 * what it holds is bounded whatever the range (a bucket cut by a slice edge is computed whole by both: the same rows).
 */
export function slices(fromMs: number, toMs: number, sliceMs: number): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (let at = fromMs; at < toMs; at += sliceMs) out.push([at, Math.min(toMs, at + sliceMs)]);
  return out;
}

/** The hours that stale ranges [first, last] (epoch ms) touch, summed: about the buckets a refresh recomputes. */
export function hoursOf(ranges: Iterable<readonly [number, number, ...unknown[]]>): number {
  let hours = 0;
  for (const [first, last] of ranges) hours += Math.floor(last / 3_600_000) - Math.floor(first / 3_600_000) + 1;
  return hours;
}

/**
 * A floor space's stale ranges [first, last] (epoch ms), in order and apart by more than RANGE_GAP_MS. A backfill of
 * several windows at once commits a few hours of each window's day between two refreshes: one range from the first
 * window's start to the last's end made each refresh compute every day between them again (docs/performance.md).
 */
export type Ranges = Array<[number, number]>;
/** Ranges closer than this are one: a bucket's grain, so two ranges never cut the same hour in two. */
export const RANGE_GAP_MS = HOUR_MS;
/** At most this many ranges a floor space (its two closest are joined): what a refresh plans for a space is bounded. */
export const MAX_RANGES = 16;

/** Adds [first, last] to `ranges` (Ranges), joining the ranges it reaches. */
export function addRange(ranges: Ranges, first: number, last: number): void {
  const n = ranges.length;
  const tail = ranges[n - 1];
  // Pages mostly arrive in time order: the last range first. One that starts in it, or within the gap after it,
  // widens it in place (it reaches no other: those end more than the gap before the last starts). Each range is its
  // Ranges' own array, never shared.
  if (tail !== undefined && first >= tail[0] && first <= tail[1] + RANGE_GAP_MS) {
    if (last > tail[1]) tail[1] = last;
    return;
  }
  if (tail !== undefined && first > tail[1] + RANGE_GAP_MS) {
    ranges.push([first, last]);
  } else {
    let i = 0;
    while (i < n && ranges[i]![1] + RANGE_GAP_MS < first) i++;
    let a = first;
    let b = last;
    let j = i;
    for (; j < n && ranges[j]![0] <= b + RANGE_GAP_MS; j++) {
      a = Math.min(a, ranges[j]![0]);
      b = Math.max(b, ranges[j]![1]);
    }
    ranges.splice(i, j - i, [a, b]);
  }
  if (ranges.length > MAX_RANGES) {
    let closest = 0;
    for (let i = 1; i + 1 < ranges.length; i++) if (ranges[i + 1]![0] - ranges[i]![1] < ranges[closest + 1]![0] - ranges[closest]![1]) closest = i;
    ranges.splice(closest, 2, [ranges[closest]![0], ranges[closest + 1]![1]]);
  }
}

/** Every range of every floor space (Ranges), for hoursOf. */
export function* allRanges(spans: Iterable<Ranges>): Iterable<[number, number]> {
  for (const ranges of spans) yield* ranges;
}
