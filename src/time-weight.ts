import { OccupancySyncError } from './errors.ts';
import { showValue } from './calendar-error.ts';

/**
 * Time-weighted figures of one floor space, per bucket of time: the pure core the reporting views and the hourly
 * aggregates stand on. The model is Timescale Toolkit's `time_weight('LOCF')`: each reading's state is carried
 * forward until the space's next reading, at most `maxHoldMs`; after that, and before the first reading known, the
 * time is unknown, not vacant. A state that crosses a bucket boundary counts in both buckets.
 *
 * The contract (docs/reporting.md, "Time-weighted figures (definitions)") in short:
 * - Reading `i` holds [at_i, min(at_{i+1}, at_i + maxHoldMs)). Its status counts where it is known (`occupied`
 *   true or false); its headcount where it is not null. A reading with an unknown status still ends the hold of the
 *   one before it: the space changed to a state nobody can read.
 * - Two readings at the same instant: the later one in input order holds; the earlier one holds for no time, though
 *   it counts in `readings` (the store keys readings by space and instant, so stored data has none).
 * - Every figure in milliseconds is an exact integer (sums of differences of integer instants; headcounts are
 *   integers), so sums over hours, days, floors and buildings are exact in any order and a rebuilt aggregate equals a
 *   maintained one bit for bit. Ratios are made from the sums, last.
 *
 * Pure: no clock, no I/O; O(log n) to find the range in the readings, then O(readings in range + buckets).
 */

/** A reading of one floor space. */
export interface Reading {
  /** Epoch milliseconds of the observation (an integer). */
  at: number;
  /** true occupied, false vacant, null when the status is unknown (or not mapped to either). */
  occupied: boolean | null;
  /** People counted, a non-negative integer; null when the sensor sent none (presence-only sensors). */
  headcount: number | null;
}

/** The figures of one bucket [start, end). */
export interface BucketFigures {
  start: number;
  end: number;
  /** Time with a known status held (occupied or vacant). Vacant time is `knownMs - occupiedMs`. */
  knownMs: number;
  /** Time with status occupied held. */
  occupiedMs: number;
  /** Integral of the held headcount over `headcountKnownMs`, in person-milliseconds. */
  headcountMs: number;
  /** Time with a headcount held. Average headcount is `headcountMs / headcountKnownMs`. */
  headcountKnownMs: number;
  /** Largest headcount held for some time in the bucket; null when no headcount is held in it. */
  peakHeadcount: number | null;
  /** Readings whose `at` is in [start, end), holding or not. */
  readings: number;
}

/** Input that breaks the contract above; `field` and `value` name it, the message says the fix. */
export class TimeWeightError extends OccupancySyncError {
  readonly field: string;
  readonly value: unknown;
  constructor(field: string, value: unknown, problem: string, fix: string) {
    super('TIME_WEIGHT', `${field} ${showValue(value)}: ${problem}. Fix: ${fix}`);
    this.field = field;
    this.value = value;
  }
}

/** How a stream's sensors report (declared per stream): a sample every interval, or an event on each change. */
export type Sampling = 'interval' | 'change';

/** An interval sensor's reading holds for this many intervals: one or two missed samples are not a gap. */
export const INTERVAL_HOLD_MULTIPLE = 3;
/** The interval assumed for an interval sensor that declares none: the common vendor heartbeat. */
export const DEFAULT_SAMPLING_INTERVAL_MS = 5 * 60_000;
/**
 * A change-only sensor's reading holds a day: long enough to carry a state across a night without a change, short
 * enough that a sensor that died is unknown by the next working day rather than reported in its last state for ever.
 */
export const CHANGE_ONLY_MAX_HOLD_MS = 24 * 3_600_000;

/** The default `maxHoldMs` of a stream from its declared sampling (a stream may set its own). */
export function defaultMaxHold(sampling: Sampling, intervalMs?: number): number {
  if (sampling === 'change') return CHANGE_ONLY_MAX_HOLD_MS;
  if (sampling !== 'interval') {
    throw new TimeWeightError('sampling', sampling, 'not a sampling', "declare 'interval' (a sample every interval) or 'change' (an event on each change)");
  }
  const interval = intervalMs ?? DEFAULT_SAMPLING_INTERVAL_MS;
  if (!Number.isSafeInteger(interval) || interval <= 0) {
    throw new TimeWeightError('intervalMs', intervalMs, 'not a positive whole number of milliseconds', 'give the sensors\' sampling interval, such as 300000 for 5 minutes');
  }
  return INTERVAL_HOLD_MULTIPLE * interval;
}

/**
 * The time whose figures a reading at `at` can change, when it arrives late, is corrected or is removed:
 * [at, at + maxHoldMs). Before `at` nothing changes (a hold only ever reaches forward), and from `at + maxHoldMs`
 * on the readings after it hold as before. Recompute the buckets this range touches (`bucketsTouching`).
 */
export function invalidatedRange(at: number, maxHoldMs: number): [from: number, to: number] {
  checkInteger('at', at);
  checkMaxHold(maxHoldMs);
  return [at, at + maxHoldMs];
}

/**
 * Indexes [first, last) of the buckets of `bounds` (as `timeWeight` takes them) that overlap [fromMs, toMs):
 * the buckets to recompute for an invalidated range.
 */
export function bucketsTouching(bounds: readonly number[], fromMs: number, toMs: number): [first: number, last: number] {
  const n = bounds.length - 1;
  if (n <= 0 || toMs <= fromMs) return [0, 0];
  checkInteger('fromMs', fromMs);
  checkInteger('toMs', toMs);
  // The bucket holding fromMs (the last start <= fromMs), up to the last bucket starting before toMs.
  const first = Math.max(0, firstIndexAtOrAfter(bounds, fromMs + 1) - 1);
  const last = Math.min(n, firstIndexAtOrAfter(bounds, toMs));
  return first < last ? [first, last] : [0, 0];
}

/**
 * The figures of each bucket [bounds[k], bounds[k+1]) from one floor space's readings, sorted by `at`.
 *
 * `bounds` are the buckets' starts, strictly increasing, and then the end of the last (local hours of any zone,
 * days of 23 or 25 hours, half hours: the caller decides). The readings may cover more than [bounds[0], end):
 * only the last reading before `bounds[0]` (whose hold may reach into the range) and the readings up to the end
 * count, so pass that reading and the readings of the range, or any longer sorted list. Without a reading before
 * the range, the time before its first reading is unknown. Sortedness is checked on the part read.
 */
export function timeWeight(readings: readonly Reading[], bounds: readonly number[], options: { maxHoldMs: number }): BucketFigures[] {
  return timeWeightColumns(columnsOf(readings), bounds, options);
}

/** Readings as columns (each checked), for timeWeightColumns. */
export function columnsOf(readings: readonly Reading[]): ReadingColumns {
  const columns = readingColumns(readings.length);
  readings.forEach((r, i) => {
    checkReading(r, i);
    columns.at[i] = r.at;
    columns.state[i] = stateOf(r.occupied);
    columns.headcount[i] = r.headcount ?? NO_HEADCOUNT;
  });
  return columns;
}

/** `ReadingColumns.state` of a reading: its status occupied, vacant or unknown. */
export const OCCUPIED = 1;
export const VACANT = 0;
export const UNKNOWN = -1;
/** The state of a reading whose status is occupied (true), vacant (false) or unknown (null, or a code not listed). */
export const stateOf = (occupied: boolean | null | undefined): number => (occupied === true ? OCCUPIED : occupied === false ? VACANT : UNKNOWN);
/** `ReadingColumns.headcount` of a reading without one. */
export const NO_HEADCOUNT = -1;

/**
 * One floor space's readings as columns, in time order: the store reads thousands a refresh, and an object per reading
 * was most of what the refresh left for the garbage collector (docs/performance.md).
 */
export interface ReadingColumns {
  /** Epoch milliseconds (integers). */
  at: Float64Array;
  /** OCCUPIED, VACANT or UNKNOWN. */
  state: Int8Array;
  /** People counted (a non-negative integer), or NO_HEADCOUNT. */
  headcount: Float64Array;
}

/** Columns for `length` readings, to be filled. */
export function readingColumns(length: number): ReadingColumns {
  return { at: new Float64Array(length), state: new Int8Array(length), headcount: new Float64Array(length) };
}

/** `timeWeight` over readings as columns: the same figures, checked the same way, without an object per reading. */
export function timeWeightColumns(readings: ReadingColumns, bounds: readonly number[], options: { maxHoldMs: number }): BucketFigures[] {
  const { maxHoldMs } = options;
  checkMaxHold(maxHoldMs);
  checkBounds(bounds);
  const { at, state, headcount: heads } = readings;
  const length = at.length;
  if (state.length !== length || heads.length !== length) {
    throw new TimeWeightError('readings', { at: length, state: state.length, headcount: heads.length }, 'columns of different lengths', 'give each reading an instant, a state and a headcount');
  }
  const n = bounds.length - 1;
  const from = bounds[0]!;
  const to = bounds[n]!;
  const known = new Array<number>(n).fill(0);
  const occupied = new Array<number>(n).fill(0);
  const headcount = new Array<number>(n).fill(0);
  const headcountKnown = new Array<number>(n).fill(0);
  const peak = new Array<number>(n).fill(-1);
  const count = new Array<number>(n).fill(0);

  // The bucket holding the current instant: instants only move forward, so one pointer serves the whole pass.
  let k = 0;
  const first = Math.max(0, firstIndexAtOrAfter(at, from) - 1);
  if (first < length) checkColumn(readings, first);
  for (let i = first; i < length; i++) {
    const t = at[i]!;
    if (t >= to) break;
    const last = i + 1 === length;
    if (!last) {
      checkColumn(readings, i + 1);
      if (at[i + 1]! < t) {
        throw new TimeWeightError(`readings[${i + 1}].at`, at[i + 1], `before readings[${i}].at ${t}`, 'sort the readings by time (ORDER BY observed_at)');
      }
    }
    const start = Math.max(t, from);
    if (start >= to) break;
    while (bounds[k + 1]! <= start) k++;
    if (t >= from) count[k]!++;

    const holdEnd = Math.min(t + maxHoldMs, last ? Infinity : at[i + 1]!, to);
    if (holdEnd <= start) continue;
    const s = state[i]!;
    const h = heads[i]!;
    for (let q = k; q < n && bounds[q]! < holdEnd; q++) {
      const ms = Math.min(holdEnd, bounds[q + 1]!) - Math.max(start, bounds[q]!);
      if (s !== UNKNOWN) {
        known[q]! += ms;
        if (s === OCCUPIED) occupied[q]! += ms;
      }
      if (h !== NO_HEADCOUNT) {
        headcount[q]! += h * ms;
        headcountKnown[q]! += ms;
        if (h > peak[q]!) peak[q] = h;
      }
    }
  }

  const out: BucketFigures[] = new Array(n);
  for (let q = 0; q < n; q++) {
    if (!Number.isSafeInteger(headcount[q]!)) {
      throw new TimeWeightError('headcountMs', headcount[q], `beyond exact integers in bucket ${bounds[q]}`, 'use shorter buckets (the person-milliseconds of one bucket must stay below 2^53)');
    }
    out[q] = {
      start: bounds[q]!,
      end: bounds[q + 1]!,
      knownMs: known[q]!,
      occupiedMs: occupied[q]!,
      headcountMs: headcount[q]!,
      headcountKnownMs: headcountKnown[q]!,
      peakHeadcount: peak[q]! < 0 ? null : peak[q]!,
      readings: count[q]!,
    };
  }
  return out;
}

/** Index of the first instant >= `ms` in a sorted list (the length when there is none). */
function firstIndexAtOrAfter(items: ArrayLike<number>, ms: number): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (items[mid]! < ms) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function checkInteger(field: string, value: number): void {
  if (!Number.isSafeInteger(value)) throw new TimeWeightError(field, value, 'not an integer instant in epoch milliseconds', 'pass Date.getTime() values, not seconds, text or Date objects');
}

function checkMaxHold(maxHoldMs: number): void {
  if (!Number.isSafeInteger(maxHoldMs) || maxHoldMs <= 0) {
    throw new TimeWeightError('maxHoldMs', maxHoldMs, 'not a positive whole number of milliseconds', 'take it from defaultMaxHold(sampling, intervalMs) or the stream\'s setting');
  }
}

function checkBounds(bounds: readonly number[]): void {
  if (!Array.isArray(bounds) || bounds.length === 0) {
    throw new TimeWeightError('bounds', bounds, 'no bounds', 'pass the buckets\' starts and then the end of the last, such as [09:00, 10:00, 11:00] for two hours');
  }
  for (let i = 0; i < bounds.length; i++) {
    if (!Number.isSafeInteger(bounds[i])) checkInteger(`bounds[${i}]`, bounds[i]!);
    if (i > 0 && bounds[i]! <= bounds[i - 1]!) {
      throw new TimeWeightError(`bounds[${i}]`, bounds[i], `not after bounds[${i - 1}] ${bounds[i - 1]}`, 'pass strictly increasing bucket starts and then the end');
    }
  }
}

/** The reading at `i` of columns, checked as checkReading checks one (the store's read fills them from its text). */
function checkColumn(r: ReadingColumns, i: number): void {
  if (!Number.isSafeInteger(r.at[i])) checkInteger(`readings[${i}].at`, r.at[i]!);
  const s = r.state[i]!;
  if (s !== OCCUPIED && s !== VACANT && s !== UNKNOWN) {
    throw new TimeWeightError(`readings[${i}].state`, s, 'not OCCUPIED, VACANT or UNKNOWN', 'map the status to occupied (1), vacant (0) or unknown (-1)');
  }
  const h = r.headcount[i]!;
  if (h !== NO_HEADCOUNT && (!Number.isSafeInteger(h) || h < 0)) {
    throw new TimeWeightError(`readings[${i}].headcount`, h, 'not a non-negative integer or NO_HEADCOUNT', 'pass the people counted, or NO_HEADCOUNT (-1) when the sensor sent none');
  }
}

function checkReading(r: Reading, i: number): void {
  if (!Number.isSafeInteger(r.at)) checkInteger(`readings[${i}].at`, r.at);
  if (r.occupied !== true && r.occupied !== false && r.occupied !== null) {
    throw new TimeWeightError(`readings[${i}].occupied`, r.occupied, 'not true, false or null', 'map the status to occupied (true), vacant (false) or unknown (null)');
  }
  if (r.headcount !== null && (!Number.isSafeInteger(r.headcount) || r.headcount < 0)) {
    throw new TimeWeightError(`readings[${i}].headcount`, r.headcount, 'not a non-negative integer or null', 'pass the people counted, or null when the sensor sent none (never 0 for none)');
  }
}
