import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CHANGE_ONLY_MAX_HOLD_MS,
  DEFAULT_SAMPLING_INTERVAL_MS,
  INTERVAL_HOLD_MULTIPLE,
  TimeWeightError,
  bucketsTouching,
  defaultMaxHold,
  invalidatedRange,
  timeWeight,
  timeWeightColumns,
  NO_HEADCOUNT,
  type BucketFigures,
  type Reading,
  type ReadingColumns,
} from '../../src/time-weight.ts';
import { localHours, startOfLocalDate } from '../../src/working-time.ts';

const MIN = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 2, 2); // a Monday, 00:00Z

const at = (h: number, m = 0) => T0 + h * HOUR + m * MIN;
const occ = (t: number, headcount: number | null = null): Reading => ({ at: t, occupied: true, headcount });
const vac = (t: number, headcount: number | null = null): Reading => ({ at: t, occupied: false, headcount });
const unknown = (t: number, headcount: number | null = null): Reading => ({ at: t, occupied: null, headcount });
const columns = (...rows: Array<[at: number, state: number, headcount: number]>): ReadingColumns => ({
  at: Float64Array.from(rows, (r) => r[0]),
  state: Int8Array.from(rows, (r) => r[1]),
  headcount: Float64Array.from(rows, (r) => r[2]),
});
const hourBounds = (fromH: number, toH: number) => Array.from({ length: toH - fromH + 1 }, (_, i) => at(fromH + i));

function totals(figures: BucketFigures[]) {
  return {
    knownMs: figures.reduce((s, f) => s + f.knownMs, 0),
    occupiedMs: figures.reduce((s, f) => s + f.occupiedMs, 0),
    headcountMs: figures.reduce((s, f) => s + f.headcountMs, 0),
    headcountKnownMs: figures.reduce((s, f) => s + f.headcountKnownMs, 0),
    readings: figures.reduce((s, f) => s + f.readings, 0),
  };
}

describe('time-weighted figures: worked examples', () => {
  it('a change-only space occupied 6 of 10 hours is 60 % by time where counting readings says 50 %', () => {
    // docs/reporting.md, "Time-weighted figures (definitions)": the worked example.
    const readings = [occ(at(8), 4), vac(at(12), 0), occ(at(13), 2), vac(at(15), 0)];
    const hours = timeWeight(readings, hourBounds(8, 18), { maxHoldMs: defaultMaxHold('change') });
    const day = totals(hours);
    expect(readings.filter((r) => r.occupied).length / readings.length).toBe(0.5);
    expect(day.knownMs).toBe(10 * HOUR);
    expect(day.occupiedMs).toBe(6 * HOUR);
    expect(day.occupiedMs / day.knownMs).toBe(0.6);
    expect(day.headcountMs).toBe(4 * 4 * HOUR + 2 * 2 * HOUR);
    expect(day.headcountMs / day.headcountKnownMs).toBe(2);
    expect(hours.map((h) => h.occupiedMs / HOUR)).toEqual([1, 1, 1, 1, 0, 1, 1, 0, 0, 0]);
    expect(hours.map((h) => h.readings)).toEqual([1, 0, 0, 0, 1, 1, 0, 1, 0, 0]);
    expect(hours.map((h) => h.peakHeadcount)).toEqual([4, 4, 4, 4, 0, 2, 2, 0, 0, 0]);
  });

  it('a state that crosses an hour boundary counts in both hours, each for its own part', () => {
    const [h9, h10] = timeWeight([occ(at(9, 40), 3), vac(at(10, 20), 0)], hourBounds(9, 11), { maxHoldMs: 2 * HOUR });
    expect(h9).toMatchObject({ start: at(9), end: at(10), knownMs: 20 * MIN, occupiedMs: 20 * MIN, headcountMs: 3 * 20 * MIN, peakHeadcount: 3, readings: 1 });
    expect(h10).toMatchObject({ knownMs: 60 * MIN, occupiedMs: 20 * MIN, headcountMs: 3 * 20 * MIN, headcountKnownMs: 60 * MIN, peakHeadcount: 3, readings: 1 });
  });

  it('coverage drops where an interval sensor went silent: a reading holds three intervals, then the time is unknown', () => {
    const maxHoldMs = defaultMaxHold('interval', 5 * MIN);
    expect(maxHoldMs).toBe(15 * MIN);
    // Every 5 minutes from 08:00 to 10:00 (last at 10:00), silent until 12:30, then again to 14:00.
    const times = [...range(at(8), at(10) + 1, 5 * MIN), ...range(at(12, 30), at(14), 5 * MIN)];
    const hours = timeWeight(times.map((t) => occ(t, 1)), hourBounds(8, 14), { maxHoldMs });
    expect(hours.map((h) => h.knownMs / MIN)).toEqual([60, 60, 15, 0, 30, 60]);
    expect(hours.map((h) => h.occupiedMs / MIN)).toEqual([60, 60, 15, 0, 30, 60]);
    expect(hours[3]!.peakHeadcount).toBeNull();
    expect(hours.map((h) => h.readings)).toEqual([12, 12, 1, 0, 6, 12]);
  });

  it('before the first reading the time is unknown, unless the caller passes the last reading before the range', () => {
    const inRange = [vac(at(10, 30), 0)];
    const alone = timeWeight(inRange, hourBounds(10, 12), { maxHoldMs: CHANGE_ONLY_MAX_HOLD_MS });
    expect(alone.map((h) => h.knownMs / MIN)).toEqual([30, 60]);
    const withBefore = timeWeight([occ(at(7), 5), ...inRange], hourBounds(10, 12), { maxHoldMs: CHANGE_ONLY_MAX_HOLD_MS });
    expect(withBefore.map((h) => [h.knownMs / MIN, h.occupiedMs / MIN, h.readings, h.peakHeadcount])).toEqual([[60, 30, 1, 5], [60, 0, 0, 0]]);
    // Older readings than the last before the range change nothing: its hold cuts theirs.
    const withMore = timeWeight([occ(at(1), 9), vac(at(3), 0), occ(at(7), 5), ...inRange], hourBounds(10, 12), { maxHoldMs: CHANGE_ONLY_MAX_HOLD_MS });
    expect(withMore).toEqual(withBefore);
  });

  it('a reading before the range whose hold ended before it leaves the range unknown', () => {
    const hours = timeWeight([occ(at(7), 5)], hourBounds(10, 12), { maxHoldMs: 2 * HOUR });
    expect(hours.map((h) => h.knownMs)).toEqual([0, 0]);
    expect(hours.map((h) => h.peakHeadcount)).toEqual([null, null]);
  });

  it('an unknown status ends the hold before it and counts in neither known nor occupied time, while its headcount counts', () => {
    const [h] = timeWeight([occ(at(9), 2), unknown(at(9, 15), 4), vac(at(9, 45), 0)], hourBounds(9, 10), { maxHoldMs: HOUR });
    expect(h).toMatchObject({ knownMs: 30 * MIN, occupiedMs: 15 * MIN, headcountKnownMs: 60 * MIN, headcountMs: 2 * 15 * MIN + 4 * 30 * MIN, peakHeadcount: 4, readings: 3 });
    const [u] = timeWeight([unknown(at(9))], hourBounds(9, 10), { maxHoldMs: HOUR });
    expect(u).toMatchObject({ knownMs: 0, occupiedMs: 0, headcountKnownMs: 0, headcountMs: 0, peakHeadcount: null, readings: 1 });
  });

  it('a presence-only sensor (no headcount) has known and occupied time and no headcount figure at all, never 0', () => {
    const [h] = timeWeight([occ(at(9)), vac(at(9, 20))], hourBounds(9, 10), { maxHoldMs: HOUR });
    expect(h).toMatchObject({ knownMs: 60 * MIN, occupiedMs: 20 * MIN, headcountMs: 0, headcountKnownMs: 0, peakHeadcount: null, readings: 2 });
  });

  it('a headcount of 0 is a known headcount: it holds and can be the peak', () => {
    const [h] = timeWeight([vac(at(9), 0)], hourBounds(9, 10), { maxHoldMs: HOUR });
    expect(h).toMatchObject({ headcountKnownMs: HOUR, headcountMs: 0, peakHeadcount: 0 });
  });

  it('of two readings at one instant the later in input order holds; both count as readings', () => {
    const [h] = timeWeight([occ(at(9), 7), vac(at(9), 1)], hourBounds(9, 10), { maxHoldMs: HOUR });
    expect(h).toMatchObject({ knownMs: HOUR, occupiedMs: 0, headcountMs: HOUR, peakHeadcount: 1, readings: 2 });
    const [g] = timeWeight([vac(at(9), 1), occ(at(9), 7)], hourBounds(9, 10), { maxHoldMs: HOUR });
    expect(g).toMatchObject({ occupiedMs: HOUR, peakHeadcount: 7 });
  });

  it('readings at or after the end change nothing; a reading exactly at a bucket start belongs to that bucket', () => {
    const base = [occ(at(9), 1)];
    const hours = timeWeight([...base, vac(at(10), 0), occ(at(11), 3)], hourBounds(9, 10), { maxHoldMs: 3 * HOUR });
    expect(hours).toEqual(timeWeight(base, hourBounds(9, 10), { maxHoldMs: 3 * HOUR }));
    const two = timeWeight([...base, vac(at(10), 0)], hourBounds(9, 11), { maxHoldMs: 3 * HOUR });
    expect(two.map((h) => h.readings)).toEqual([1, 1]);
  });

  it('buckets of any length: a 25-hour local day in Berlin is 25 hour buckets, and a day-long hold leaves its last hour unknown', () => {
    const from = startOfLocalDate('Europe/Berlin', '2026-10-25');
    const to = startOfLocalDate('Europe/Berlin', '2026-10-26');
    const hours = localHours('Europe/Berlin', from, to);
    expect(hours).toHaveLength(25);
    const figures = timeWeight([occ(from, 1)], [...hours.map((h) => h.start), to], { maxHoldMs: CHANGE_ONLY_MAX_HOLD_MS });
    expect(figures).toHaveLength(25);
    expect(figures.map((f) => f.knownMs / HOUR)).toEqual([...Array(24).fill(1), 0]);
    expect(totals(figures).occupiedMs).toBe(24 * HOUR);
  });

  it('a late reading changes only the buckets its invalidated range touches, and recomputing those equals a full pass', () => {
    const maxHoldMs = CHANGE_ONLY_MAX_HOLD_MS;
    const bounds = hourBounds(0, 72);
    const before = [occ(at(8), 4), vac(at(12), 0), occ(at(13), 2), vac(at(15), 0), occ(at(32), 3), vac(at(40), 0)];
    const late = vac(at(10, 30), 0);
    const after = [...before.slice(0, 1), late, ...before.slice(1)];
    const full = timeWeight(after, bounds, { maxHoldMs });
    const [from, to] = invalidatedRange(late.at, maxHoldMs);
    expect([from, to]).toEqual([at(10, 30), at(34, 30)]);
    const [first, last] = bucketsTouching(bounds, from, to);
    expect([first, last]).toEqual([10, 35]);
    const old = timeWeight(before, bounds, { maxHoldMs });
    for (let k = 0; k < full.length; k++) if (k < first || k >= last) expect(full[k], `bucket ${k}`).toEqual(old[k]);
    expect(full[10]!.occupiedMs).toBe(30 * MIN);
    expect(full[10]!.headcountMs).toBe(4 * 30 * MIN);
    expect(totals(full.slice(8, 18)).occupiedMs).toBe(270 * MIN);
    // What an aggregate refresher reads: the last reading before the first bucket, and the readings up to the last.
    const window = readingsFor(after, bounds[first]!, bounds[last]!);
    expect(timeWeight(window, bounds.slice(first, last + 1), { maxHoldMs })).toEqual(full.slice(first, last));
  });
});

describe('defaultMaxHold', () => {
  it('holds interval readings for three intervals (five minutes assumed when none is declared), change-only readings a day', () => {
    expect(INTERVAL_HOLD_MULTIPLE).toBe(3);
    expect(defaultMaxHold('interval', 60_000)).toBe(180_000);
    expect(defaultMaxHold('interval')).toBe(3 * DEFAULT_SAMPLING_INTERVAL_MS);
    expect(DEFAULT_SAMPLING_INTERVAL_MS).toBe(5 * MIN);
    expect(defaultMaxHold('change')).toBe(DAY);
    expect(defaultMaxHold('change', 60_000)).toBe(DAY);
  });

  it('refuses an interval that is not a positive whole number of milliseconds, and an unknown sampling', () => {
    expect(() => defaultMaxHold('interval', 0)).toThrow(/^intervalMs 0: not a positive whole number of milliseconds\. Fix: /);
    expect(() => defaultMaxHold('interval', 1.5)).toThrow(TimeWeightError);
    expect(() => defaultMaxHold('sometimes' as 'change')).toThrow(/^sampling "sometimes": .* Fix: declare 'interval'/);
  });
});

describe('time-weighted figures: refused input', () => {
  const cases: Array<[string, () => unknown, RegExp]> = [
    ['unsorted readings', () => timeWeight([occ(at(10)), occ(at(9))], hourBounds(8, 12), { maxHoldMs: HOUR }), /^readings\[1\]\.at \d+: before readings\[0\]\.at \d+\. Fix: sort the readings by time/],
    ['a zero max hold', () => timeWeight([], hourBounds(8, 9), { maxHoldMs: 0 }), /^maxHoldMs 0: not a positive whole number/],
    ['a max hold that is not a number', () => timeWeight([], hourBounds(8, 9), { maxHoldMs: Number('15m') }), /^maxHoldMs NaN: not a positive whole number/],
    ['no bounds', () => timeWeight([], [], { maxHoldMs: HOUR }), /^bounds \[\]: no bounds\. Fix: /],
    ['bounds not increasing', () => timeWeight([], [at(9), at(9)], { maxHoldMs: HOUR }), /^bounds\[1\] \d+: not after bounds\[0\]/],
    ['an instant in seconds with a fraction', () => timeWeight([occ(1.5)], [0, 10], { maxHoldMs: HOUR }), /^readings\[0\]\.at 1\.5: not an integer instant/],
    ['a negative headcount', () => timeWeight([occ(at(9), -1)], hourBounds(9, 10), { maxHoldMs: HOUR }), /^readings\[0\]\.headcount -1: .*never 0 for none/],
    ['a fractional headcount', () => timeWeight([occ(at(9), 2.5)], hourBounds(9, 10), { maxHoldMs: HOUR }), /^readings\[0\]\.headcount 2\.5/],
    ['a status that is not a boolean', () => timeWeight([{ at: at(9), occupied: 'yes' as unknown as boolean, headcount: null }], hourBounds(9, 10), { maxHoldMs: HOUR }), /^readings\[0\]\.occupied "yes": not true, false or null/],
    // The columns the store reads (ReadingColumns) are checked as readings are.
    ['columns out of time order', () => timeWeightColumns(columns([at(10), 1, 0], [at(9), 1, 0]), hourBounds(8, 12), { maxHoldMs: HOUR }), /^readings\[1\]\.at \d+: before readings\[0\]\.at/],
    ['a column state that is none of the three', () => timeWeightColumns(columns([at(9), 2, 0]), hourBounds(9, 10), { maxHoldMs: HOUR }), /^readings\[0\]\.state 2: not OCCUPIED, VACANT or UNKNOWN/],
    ['a column headcount below none', () => timeWeightColumns(columns([at(9), 1, -2]), hourBounds(9, 10), { maxHoldMs: HOUR }), /^readings\[0\]\.headcount -2: not a non-negative integer or NO_HEADCOUNT/],
    ['a column instant that is no number', () => timeWeightColumns(columns([NaN, 1, 0]), hourBounds(9, 10), { maxHoldMs: HOUR }), /^readings\[0\]\.at NaN: not an integer instant/],
    ['columns of different lengths', () => timeWeightColumns({ ...columns([at(9), 1, 0]), state: new Int8Array(2) }, hourBounds(9, 10), { maxHoldMs: HOUR }), /^readings .*columns of different lengths/],
  ];
  for (const [what, run, message] of cases) {
    it(`refuses ${what} with a TimeWeightError naming the field, the value and the fix`, () => {
      expect(run).toThrow(TimeWeightError);
      expect(run).toThrow(message);
    });
  }

  it('readings as columns (how the store reads them) give the figures of the same readings as objects', () => {
    const bounds = hourBounds(8, 11);
    const asObjects = timeWeight([occ(at(8, 50), 3), unknown(at(9, 20)), vac(at(9, 40), null), occ(at(10, 30), 0)], bounds, { maxHoldMs: HOUR });
    const asColumns = timeWeightColumns(columns([at(8, 50), 1, 3], [at(9, 20), -1, NO_HEADCOUNT], [at(9, 40), 0, NO_HEADCOUNT], [at(10, 30), 1, 0]), bounds, { maxHoldMs: HOUR });
    expect(asColumns).toEqual(asObjects);
    expect(asColumns.map((f) => f.occupiedMs)).toEqual([10 * MIN, 20 * MIN, 30 * MIN]);
  });

  it('an empty range (bounds with only the end) has no buckets', () => {
    expect(timeWeight([occ(at(9))], [at(9)], { maxHoldMs: HOUR })).toEqual([]);
  });
});

// ---- Properties against an independent reference -------------------------------------------------------------------

function* range(from: number, to: number, step: number): Generator<number> {
  for (let t = from; t < to; t += step) yield t;
}

/** The readings a caller's query returns for [from, to): the last before `from`, and those in [from, to). */
function readingsFor(readings: readonly Reading[], from: number, to: number): Reading[] {
  let before = -1;
  readings.forEach((r, i) => {
    if (r.at < from) before = i;
  });
  return [...(before >= 0 ? [readings[before]!] : []), ...readings.filter((r) => r.at >= from && r.at < to)];
}

/**
 * The reference: every grid instant of a bucket asks which reading is in force (the last one, in input order, at or
 * before it) and whether that reading is younger than the max hold. Exact when every instant lies on the grid.
 */
function naive(readings: readonly Reading[], bounds: readonly number[], maxHoldMs: number, grid: number): BucketFigures[] {
  const out: BucketFigures[] = [];
  for (let k = 0; k + 1 < bounds.length; k++) {
    const start = bounds[k]!;
    const end = bounds[k + 1]!;
    const f: BucketFigures = { start, end, knownMs: 0, occupiedMs: 0, headcountMs: 0, headcountKnownMs: 0, peakHeadcount: null, readings: 0 };
    for (const r of readings) if (r.at >= start && r.at < end) f.readings++;
    for (let t = start; t < end; t += grid) {
      let inForce: Reading | undefined;
      for (const r of readings) if (r.at <= t) inForce = r;
      if (!inForce || t >= inForce.at + maxHoldMs) continue;
      if (inForce.occupied !== null) f.knownMs += grid;
      if (inForce.occupied === true) f.occupiedMs += grid;
      if (inForce.headcount !== null) {
        f.headcountKnownMs += grid;
        f.headcountMs += grid * inForce.headcount;
        f.peakHeadcount = Math.max(f.peakHeadcount ?? 0, inForce.headcount);
      }
    }
    out.push(f);
  }
  return out;
}

const GRID = MIN;
/** A day of minutes around T0, with readings also before and after the buckets. */
const arbCase = fc
  .record({
    readingMinutes: fc.array(fc.integer({ min: -240, max: 1680 }), { maxLength: 40 }),
    states: fc.array(fc.record({ occupied: fc.constantFrom(true, false, null), headcount: fc.option(fc.integer({ min: 0, max: 30 }), { nil: null }) }), { minLength: 40, maxLength: 40 }),
    boundMinutes: fc.uniqueArray(fc.integer({ min: 0, max: 1440 }), { minLength: 1, maxLength: 30 }),
    maxHoldMinutes: fc.integer({ min: 1, max: 600 }),
  })
  .map(({ readingMinutes, states, boundMinutes, maxHoldMinutes }) => ({
    readings: [...readingMinutes].sort((a, b) => a - b).map((m, i) => ({ at: T0 + m * GRID, ...states[i]! })),
    bounds: [...boundMinutes].sort((a, b) => a - b).map((m) => T0 + m * GRID),
    maxHoldMs: maxHoldMinutes * GRID,
  }));

describe('time-weighted figures: properties', () => {
  it('equal a per-minute reference computed independently', () => {
    fc.assert(
      fc.property(arbCase, ({ readings, bounds, maxHoldMs }) => {
        expect(timeWeight(readings, bounds, { maxHoldMs })).toEqual(naive(readings, bounds, maxHoldMs, GRID));
      }),
      { numRuns: 300 },
    );
  });

  it('are exact integers within each bucket\'s length: known <= length, occupied <= known', () => {
    fc.assert(
      fc.property(arbCase, ({ readings, bounds, maxHoldMs }) => {
        for (const f of timeWeight(readings, bounds, { maxHoldMs })) {
          for (const v of [f.knownMs, f.occupiedMs, f.headcountMs, f.headcountKnownMs]) expect(Number.isSafeInteger(v)).toBe(true);
          expect(f.knownMs).toBeLessThanOrEqual(f.end - f.start);
          expect(f.headcountKnownMs).toBeLessThanOrEqual(f.end - f.start);
          expect(f.occupiedMs).toBeLessThanOrEqual(f.knownMs);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('add up: coarser buckets hold the sums of the finer ones (the peak their maximum)', () => {
    fc.assert(
      fc.property(arbCase, fc.array(fc.boolean(), { minLength: 30, maxLength: 30 }), ({ readings, bounds, maxHoldMs }, keep) => {
        const coarse = bounds.filter((_, i) => i === 0 || i === bounds.length - 1 || keep[i]);
        const fine = timeWeight(readings, bounds, { maxHoldMs });
        const got = timeWeight(readings, coarse, { maxHoldMs });
        got.forEach((c) => {
          const parts = fine.filter((f) => f.start >= c.start && f.end <= c.end);
          const peaks = parts.map((p) => p.peakHeadcount).filter((p): p is number => p !== null);
          expect({ ...totals([c]), peak: c.peakHeadcount }).toEqual({ ...totals(parts), peak: peaks.length ? Math.max(...peaks) : null });
        });
      }),
      { numRuns: 200 },
    );
  });

  it('any run of buckets recomputed from the last reading before it and its own readings equals the full pass', () => {
    fc.assert(
      fc.property(arbCase, fc.nat(), fc.nat(), ({ readings, bounds, maxHoldMs }, a, b) => {
        const n = bounds.length - 1;
        fc.pre(n >= 1);
        const first = a % n;
        const last = first + 1 + (b % (n - first));
        const full = timeWeight(readings, bounds, { maxHoldMs });
        const part = timeWeight(readingsFor(readings, bounds[first]!, bounds[last]!), bounds.slice(first, last + 1), { maxHoldMs });
        expect(part).toEqual(full.slice(first, last));
      }),
      { numRuns: 300 },
    );
  });

  it('a reading added, corrected or removed changes no bucket outside the ones its invalidated range touches', () => {
    fc.assert(
      fc.property(
        arbCase,
        fc.integer({ min: -240, max: 1680 }),
        fc.constantFrom('add', 'correct', 'remove'),
        fc.constantFrom(true, false, null),
        fc.option(fc.integer({ min: 0, max: 30 }), { nil: null }),
        fc.nat(),
        ({ readings, bounds, maxHoldMs }, minute, change, occupied, headcount, pick) => {
          let changed: Reading[];
          let instant: number;
          if (change === 'add' || readings.length === 0) {
            instant = T0 + minute * GRID;
            const late = { at: instant, occupied, headcount };
            // Stored after any reading at the same instant: the later in input order.
            const index = readings.filter((r) => r.at <= instant).length;
            changed = [...readings.slice(0, index), late, ...readings.slice(index)];
          } else {
            const i = pick % readings.length;
            instant = readings[i]!.at;
            changed = change === 'remove' ? readings.filter((_, j) => j !== i) : readings.map((r, j) => (j === i ? { at: r.at, occupied, headcount } : r));
          }
          const [from, to] = invalidatedRange(instant, maxHoldMs);
          const [first, last] = bucketsTouching(bounds, from, to);
          const old = timeWeight(readings, bounds, { maxHoldMs });
          const now = timeWeight(changed, bounds, { maxHoldMs });
          now.forEach((f, k) => {
            if (k < first || k >= last) expect(f).toEqual(old[k]);
          });
        },
      ),
      { numRuns: 300 },
    );
  });

  it('bucketsTouching returns exactly the buckets that overlap the range', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 100 }), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: -10, max: 110 }),
        fc.integer({ min: -10, max: 110 }),
        (raw, x, y) => {
          const bounds = [...raw].sort((p, q) => p - q);
          const [from, to] = [Math.min(x, y), Math.max(x, y)];
          const overlapping = bounds.slice(0, -1).map((s, k) => k).filter((k) => from < to && bounds[k]! < to && bounds[k + 1]! > from);
          const [first, last] = bucketsTouching(bounds, from, to);
          expect(Array.from({ length: last - first }, (_, i) => first + i)).toEqual(overlapping);
        },
      ),
      { numRuns: 500 },
    );
  });
});
