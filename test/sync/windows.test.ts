import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { advanceWatermark, nextBackfillWindow, planBackfill, planIncremental, sliceWindows, stepOffGrid, watermarkLimit, type SyncWindow } from '../../src/sync/run/plan.ts';

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const T0 = Date.UTC(2026, 0, 10);
const settings = { lookbackMs: 15 * MIN, settleDelayMs: MIN, stepMs: HOUR, initialHistoryMs: 24 * HOUR };

function assertContiguous(windows: SyncWindow[], start: number, end: number): void {
  expect(windows[0]!.from).toBe(start);
  expect(windows.at(-1)!.to).toBe(end);
  for (const [i, w] of windows.entries()) {
    expect(w.from).toBeLessThan(w.to);
    if (i > 0) expect(w.from).toBe(windows[i - 1]!.to);
  }
}

describe('sliceWindows', () => {
  it('cuts a range into half-open step windows that meet exactly at their boundaries', () => {
    const windows = sliceWindows(T0, T0 + 2.5 * HOUR, HOUR);
    expect(windows.map((w) => [w.from - T0, w.to - T0])).toEqual([
      [0, HOUR],
      [HOUR, 2 * HOUR],
      [2 * HOUR, 2.5 * HOUR],
    ]);
  });

  it('aligns windows on an origin so resumed backfills keep the same grid', () => {
    const windows = sliceWindows(T0 + 30 * MIN, T0 + 2 * HOUR, HOUR, T0);
    expect(windows.map((w) => [w.from - T0, w.to - T0])).toEqual([
      [30 * MIN, HOUR],
      [HOUR, 2 * HOUR],
    ]);
  });

  it('puts a timestamp exactly on a boundary in exactly one window', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10 * HOUR }), fc.integer({ min: MIN, max: 3 * HOUR }), fc.integer({ min: 0, max: 10 * HOUR }), (length, step, offset) => {
        const windows = sliceWindows(T0, T0 + length, step);
        const t = T0 + Math.min(offset, length - 1);
        expect(windows.filter((w) => w.from <= t && t < w.to)).toHaveLength(1);
      }),
    );
  });
});

describe('planIncremental', () => {
  it('starts initialHistory before now on the first run and stops settleDelay before now', () => {
    const now = T0 + 10 * MIN;
    const plan = planIncremental({ now, watermark: null, inFlight: null, settings });
    assertContiguous(plan.windows, now - 24 * HOUR, now - MIN);
    expect(plan.windows).toHaveLength(24);
    expect(plan.limit).toBe(now - MIN);
  });

  it('starts a lookback before the watermark so late arrivals are read again', () => {
    const plan = planIncremental({ now: T0 + 2 * HOUR, watermark: T0, inFlight: null, settings });
    assertContiguous(plan.windows, T0 - 15 * MIN, T0 + 2 * HOUR - MIN);
  });

  it('never reads before the floor', () => {
    const plan = planIncremental({ now: T0 + HOUR, watermark: T0, inFlight: null, settings, floor: T0 - 5 * MIN });
    expect(plan.windows[0]!.from).toBe(T0 - 5 * MIN);
  });

  it('resumes an in-flight window at its page cursor, then continues after it', () => {
    const plan = planIncremental({
      now: T0 + 3 * HOUR,
      watermark: T0,
      inFlight: { windowStart: T0 - 15 * MIN, windowEnd: T0 + 45 * MIN, pageCursor: 'c42' },
      settings,
    });
    expect(plan.windows[0]).toEqual({ from: T0 - 15 * MIN, to: T0 + 45 * MIN, cursor: 'c42' });
    assertContiguous(plan.windows, T0 - 15 * MIN, T0 + 3 * HOUR - MIN);
    expect(plan.windows.slice(1).every((w) => w.cursor === null)).toBe(true);
  });

  it('runs nothing when the clock went backwards behind the watermark', () => {
    const plan = planIncremental({ now: T0 - HOUR, watermark: T0, inFlight: null, settings });
    expect(plan).toMatchObject({ windows: [], reason: 'clock-behind' });
  });

  it('does not finish an in-flight window that now lies beyond now - settleDelay', () => {
    const plan = planIncremental({
      now: T0,
      watermark: T0 - 2 * HOUR,
      inFlight: { windowStart: T0 - HOUR, windowEnd: T0 + HOUR, pageCursor: 'x' },
      settings,
    });
    expect(plan).toMatchObject({ windows: [], reason: 'clock-behind' });
  });

  it('has nothing to do when there is no lookback and the watermark is at the limit', () => {
    const plan = planIncremental({ now: T0 + MIN, watermark: T0, inFlight: null, settings: { ...settings, lookbackMs: 0 } });
    expect(plan).toMatchObject({ windows: [], reason: 'up-to-date' });
  });
});

describe('advanceWatermark', () => {
  it('moves forward to the window end, never backwards, never past the limit', () => {
    expect(advanceWatermark(null, T0, T0 + HOUR)).toBe(T0);
    expect(advanceWatermark(T0, T0 - HOUR, T0 + HOUR)).toBe(T0);
    expect(advanceWatermark(T0, T0 + 2 * HOUR, T0 + HOUR)).toBe(T0 + HOUR);
  });
});

describe('watermarkLimit', () => {
  it("caps the watermark at the platform's time - settle delay when the local clock runs ahead", () => {
    const serverTime = T0;
    const localLimit = T0 + 24 * HOUR - MIN; // local clock a day ahead
    const limit = watermarkLimit(localLimit, serverTime, MIN);
    expect(limit).toBe(T0 - MIN);
    // A window planned from the fast local clock ends far beyond what the platform has produced.
    expect(advanceWatermark(T0 - 2 * HOUR, T0 + 6 * HOUR, limit)).toBe(T0 - MIN);
    // Never backwards, even when the platform's time is behind the stored watermark.
    expect(advanceWatermark(T0, T0 + 6 * HOUR, limit)).toBe(T0);
  });

  it('keeps the local limit when the platform is ahead or its time is unknown', () => {
    expect(watermarkLimit(T0 - MIN, T0 + HOUR, MIN)).toBe(T0 - MIN);
    expect(watermarkLimit(T0 - MIN, undefined, MIN)).toBe(T0 - MIN);
  });

  it('never exceeds either bound (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: -DAY, max: DAY }), fc.option(fc.integer({ min: -DAY, max: DAY }), { nil: undefined }), fc.nat(HOUR), (local, server, settle) => {
        const limit = watermarkLimit(T0 + local, server === undefined ? undefined : T0 + server, settle);
        expect(limit).toBeLessThanOrEqual(T0 + local);
        if (server !== undefined) expect(limit).toBeLessThanOrEqual(T0 + server - settle);
        expect(limit === T0 + local || (server !== undefined && limit === T0 + server - settle)).toBe(true);
      }),
    );
  });
});

describe('successive incremental runs (property)', () => {
  it('cover time without a gap, keep the watermark monotonic and below now - settle, whatever the clock does', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: -3 * HOUR, max: 5 * HOUR }), { minLength: 1, maxLength: 25 }),
        fc.array(fc.nat(3), { minLength: 25, maxLength: 25 }),
        (moves, crashes) => {
          let now = T0;
          let watermark: number | null = null;
          let inFlight: { windowStart: number; windowEnd: number; pageCursor: string | null } | null = null;
          // Everything before `covered` has been read at least once in a completed window.
          let covered: number | null = null;
          for (const [i, move] of moves.entries()) {
            now += move;
            const plan = planIncremental({ now, watermark, inFlight, settings });
            if (plan.reason === 'clock-behind') expect(plan.windows).toEqual([]);
            const first = plan.windows[0];
            if (first && covered !== null) expect(first.from).toBeLessThanOrEqual(covered);
            // A crash after `crashes[i]` completed windows leaves the next one in flight.
            const completed = Math.min(crashes[i]!, plan.windows.length);
            for (const w of plan.windows.slice(0, completed)) {
              const next = advanceWatermark(watermark, w.to, plan.limit);
              expect(next).toBeGreaterThanOrEqual(watermark ?? Number.NEGATIVE_INFINITY);
              expect(next).toBeLessThanOrEqual(now - settings.settleDelayMs);
              watermark = next;
              covered = Math.max(covered ?? w.to, w.to);
              inFlight = null;
            }
            const crashed = plan.windows[completed];
            if (crashed) inFlight = { windowStart: crashed.from, windowEnd: crashed.to, pageCursor: 'p' };
          }
        },
      ),
    );
  });
});

describe('planBackfill', () => {
  const range = { from: T0, to: T0 + 5 * HOUR };
  const now = T0 + 24 * HOUR;

  it('plans the whole range on a grid aligned on its start, without lookback', () => {
    const plan = planBackfill({ now, range, state: null, settings });
    expect(plan.restart).toBe(true);
    assertContiguous(plan.windows, T0, T0 + 5 * HOUR);
    expect(plan).toMatchObject({ windowsTotal: 5, windowsDone: 0 });
  });

  it('resumes the same range from its progress and in-flight window', () => {
    const plan = planBackfill({
      now,
      range,
      state: { inFlight: { windowStart: T0 + 2 * HOUR, windowEnd: T0 + 3 * HOUR, pageCursor: 'c' }, rangeStart: range.from, rangeEnd: range.to },
      settings,
    });
    expect(plan.restart).toBe(false);
    expect(plan.windows[0]).toEqual({ from: T0 + 2 * HOUR, to: T0 + 3 * HOUR, cursor: 'c' });
    assertContiguous(plan.windows, T0 + 2 * HOUR, T0 + 5 * HOUR);
    expect(plan.windowsDone).toBe(2);
  });

  it('resumes at the next window when a window was completed (pointer without cursor)', () => {
    const plan = planBackfill({ now, range, state: { inFlight: { windowStart: T0 + 3 * HOUR, windowEnd: T0 + 4 * HOUR, pageCursor: null }, rangeStart: range.from, rangeEnd: range.to }, settings });
    assertContiguous(plan.windows, T0 + 3 * HOUR, T0 + 5 * HOUR);
    expect(plan.windowsDone).toBe(3);
  });

  it('points at the next grid window after a completed one, and at nothing after the last', () => {
    expect(nextBackfillWindow(T0 + HOUR, range, HOUR)).toEqual({ windowStart: T0 + HOUR, windowEnd: T0 + 2 * HOUR, pageCursor: null });
    expect(nextBackfillWindow(T0 + 90 * MIN, range, HOUR)).toEqual({ windowStart: T0 + 90 * MIN, windowEnd: T0 + 2 * HOUR, pageCursor: null });
    expect(nextBackfillWindow(range.to, range, HOUR)).toBeNull();
  });

  it('starts over when the stored state is for another range, even an earlier one', () => {
    const plan = planBackfill({ now, range, state: { inFlight: { windowStart: T0 + 4 * HOUR, windowEnd: T0 + 5 * HOUR, pageCursor: 'x' }, rangeStart: T0 + HOUR, rangeEnd: range.to }, settings });
    expect(plan.restart).toBe(true);
    expect(plan.windows[0]!.from).toBe(T0);
  });

  it('does nothing for a completed range', () => {
    const plan = planBackfill({ now, range, state: { inFlight: null, rangeStart: range.from, rangeEnd: range.to }, settings });
    expect(plan).toMatchObject({ windows: [], reason: 'complete', windowsDone: 5 });
  });

  it('stops at now - settleDelay for a range reaching into the present', () => {
    const plan = planBackfill({ now: T0 + 2 * HOUR, range, state: null, settings });
    expect(plan.windows.at(-1)!.to).toBe(T0 + 2 * HOUR - MIN);
  });

  it('refuses an empty range', () => {
    expect(() => planBackfill({ now, range: { from: T0, to: T0 }, state: null, settings })).toThrow(/empty/);
  });
});

describe('windows on the grid of the bounds\' format (iso-seconds and epoch-seconds: a second; date: a day)', () => {
  const SECOND = 1000;

  it('every bound of an incremental plan lies on the grid, whatever now and the watermark are (property)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(SECOND, DAY),
        fc.integer({ min: 0, max: 40 * DAY }),
        fc.option(fc.integer({ min: 0, max: 30 * DAY }), { nil: null }),
        fc.integer({ min: 1, max: 3 }),
        (grid, nowOffset, watermarkOffset, steps) => {
          const now = T0 + nowOffset + 7; // never on a grid itself
          const watermark = watermarkOffset === null ? null : Math.floor((T0 + watermarkOffset) / grid) * grid;
          const stepMs = steps * (grid === DAY ? DAY : HOUR);
          const plan = planIncremental({ now, watermark, inFlight: null, settings: { ...settings, stepMs, initialHistoryMs: 3 * DAY, gridMs: grid } });
          expect(plan.limit % grid).toBe(0);
          expect(plan.limit).toBeLessThanOrEqual(now - settings.settleDelayMs);
          for (const w of plan.windows) {
            expect(w.from % grid).toBe(0);
            expect(w.to % grid).toBe(0);
          }
        },
      ),
    );
  });

  it('a date stream reads whole days: up to the last midnight before now - settleDelay, never part of today', () => {
    const now = T0 + 2 * DAY + 10 * HOUR;
    const plan = planIncremental({ now, watermark: T0, inFlight: null, settings: { ...settings, stepMs: DAY, lookbackMs: 0, gridMs: DAY } });
    expect(plan.windows.map((w) => [w.from - T0, w.to - T0])).toEqual([
      [0, DAY],
      [DAY, 2 * DAY],
    ]);
    expect(plan.limit).toBe(T0 + 2 * DAY);
    // A lookback shorter than a day still starts at a midnight: the day before the watermark, read again.
    const back = planIncremental({ now, watermark: T0, inFlight: null, settings: { ...settings, stepMs: DAY, gridMs: DAY } });
    expect(back.windows[0]!.from).toBe(T0 - DAY);
  });

  it('a backfill widens its range to whole grid units: days for dates, seconds for iso-seconds', () => {
    const days = planBackfill({ now: T0 + 10 * DAY, range: { from: T0 + 5 * HOUR, to: T0 + DAY + MIN }, state: null, settings: { settleDelayMs: MIN, stepMs: DAY, gridMs: DAY } });
    expect(days.windows.map((w) => [w.from - T0, w.to - T0])).toEqual([
      [0, DAY],
      [DAY, 2 * DAY],
    ]);
    const seconds = planBackfill({ now: T0 + 10 * DAY, range: { from: T0 + 1500, to: T0 + HOUR + 1 }, state: null, settings: { settleDelayMs: MIN, stepMs: HOUR, gridMs: SECOND } });
    expect(seconds.windows[0]!.from).toBe(T0 + SECOND);
    expect(seconds.windows.at(-1)!.to).toBe(T0 + HOUR + SECOND);
    expect(nextBackfillWindow(T0 + DAY, { from: T0 + 5 * HOUR, to: T0 + DAY + MIN }, DAY, DAY)).toEqual({ windowStart: T0 + DAY, windowEnd: T0 + 2 * DAY, pageCursor: null });
  });

  it('a step that is not a whole number of grid units is named with its fix (SYNC_STEP is only known at run time)', () => {
    expect(stepOffGrid(HOUR, DAY)).toEqual({
      detail: 'its window bounds lie on a grid of 86400000 ms (a date is a whole day), and its windows are 3600000 ms long',
      fix: 'set `window: { step: ... }` for the stream to a multiple of it (e.g. 1d)',
    });
    expect(stepOffGrid(1500, SECOND)?.fix).toMatch(/e\.g\. 1h\)$/);
    expect(stepOffGrid(2 * DAY, DAY)).toBeUndefined();
    expect(stepOffGrid(15 * MIN, SECOND)).toBeUndefined();
    expect(stepOffGrid(15 * MIN, 1)).toBeUndefined();
  });
});
