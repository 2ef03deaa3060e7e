import { describe, expect, it } from 'vitest';
import type { SyncState } from '../../src/store/types.ts';
import { Frontier } from '../../src/sync/run/frontier.ts';
import { fromStore, planRun, rewindOnEvidence, toStore } from '../../src/sync/run/plan.ts';

const MIN = 60_000;
const HOUR = 60 * MIN;
const T0 = Date.UTC(2026, 0, 10);
const iso = (t: number) => new Date(t).toISOString();
const settings = { lookbackMs: 0, settleDelayMs: MIN, stepMs: HOUR, initialHistoryMs: 3 * HOUR, gridMs: 1, maxClockSkewMs: 5 * MIN };
const state = (s: Partial<SyncState>): SyncState =>
  ({ customerId: 'c', stateKey: 'occupancy', watermark: null, windowStart: null, windowEnd: null, pageCursor: null, rangeStart: null, rangeEnd: null, ...s }) as SyncState;

describe('planRun', () => {
  it('converts the stored state once, both ways, without loss', () => {
    const stored = state({
      watermark: iso(T0),
      windowStart: iso(T0),
      windowEnd: iso(T0 + HOUR),
      pageCursor: 'c1',
      windows: [{ from: iso(T0 + HOUR), to: iso(T0 + 2 * HOUR), cursor: null, done: true }],
    });
    expect(toStore(fromStore(stored))).toEqual({ watermark: stored.watermark, windowStart: stored.windowStart, windowEnd: stored.windowEnd, pageCursor: 'c1', windows: stored.windows, rangeStart: null, rangeEnd: null });
    const backfill = state({ rangeStart: iso(T0), rangeEnd: iso(T0 + 4 * HOUR), windowStart: iso(T0), windowEnd: iso(T0 + HOUR) });
    expect(toStore(fromStore(backfill))).toMatchObject({ rangeStart: backfill.rangeStart, rangeEnd: backfill.rangeEnd, windowStart: backfill.windowStart });
    expect(toStore(fromStore(undefined))).toEqual({ watermark: null, windowStart: null, windowEnd: null, pageCursor: null, rangeStart: null, rangeEnd: null });
  });

  it('an incremental run moves the watermark only over completed windows from the first, never past now - settle delay', () => {
    const now = T0 + 3 * HOUR + 30 * MIN;
    const plan = planRun({ request: { mode: 'incremental' }, state: fromStore(undefined), now, settings });
    expect(plan.windows.map((w) => [w.from - T0, w.to - T0])).toEqual([
      [30 * MIN, 90 * MIN],
      [90 * MIN, 150 * MIN],
      [150 * MIN, 209 * MIN],
    ]);
    const frontier = new Frontier(plan.windows);
    const page = { localTime: now };
    // The second window completes first: nothing is stored as complete, it is kept as read ahead.
    const second = { from: plan.windows[1]!.from, to: plan.windows[1]!.to, cursor: null, done: true };
    expect(plan.checkpoint(frontier, frontier.page(1, null), page).state).toEqual({ watermark: null, head: null, beyond: [second], range: { from: null, to: null } });
    // Mid-window, the head is kept with its cursor.
    expect(plan.checkpoint(frontier, frontier.page(0, 'p2'), page).state).toEqual({
      watermark: null,
      head: { from: plan.windows[0]!.from, to: plan.windows[0]!.to, cursor: 'p2' },
      beyond: [second],
      range: { from: null, to: null },
    });
    // The first completes: the watermark passes both.
    expect(plan.checkpoint(frontier, frontier.page(0, null), page).state.watermark).toBe(plan.windows[1]!.to);
    const last = plan.checkpoint(frontier, frontier.page(2, null), page).state.watermark!;
    expect(last).toBe(now - MIN);
  });

  it('a platform clock far from the local one warns once, and only the newest record read moves the watermark', () => {
    const now = T0 + 3 * HOUR;
    const plan = planRun({ request: { mode: 'incremental' }, state: fromStore(state({ watermark: iso(T0) })), now, settings });
    const frontier = new Frontier(plan.windows);
    const farOff = { serverTime: now - 365 * 24 * HOUR, localTime: now };
    const first = plan.checkpoint(frontier, frontier.page(0, null), { ...farOff, newest: T0 + 10 * MIN });
    expect(first.untrustedClocks).toEqual({ platformTime: farOff.serverTime, localTime: now, newest: T0 + 10 * MIN });
    expect(first.state.watermark).toBe(T0 + 10 * MIN);
    const second = plan.checkpoint(frontier, frontier.page(1, null), farOff);
    expect(second.untrustedClocks).toBeUndefined();
    expect(second.state.watermark).toBe(T0 + 10 * MIN);
  });

  it('a backfill resumes at its stored progress with the windows read ahead, or starts over when told to', () => {
    const request = { mode: 'backfill' as const, from: T0, to: T0 + 4 * HOUR };
    const stored = state({
      stateKey: 'occupancy#backfill',
      rangeStart: iso(T0),
      rangeEnd: iso(T0 + 4 * HOUR),
      windowStart: iso(T0 + HOUR),
      windowEnd: iso(T0 + 2 * HOUR),
      pageCursor: 'c',
      windows: [{ from: iso(T0 + 2 * HOUR), to: iso(T0 + 3 * HOUR), cursor: null, done: true }],
    });
    const now = T0 + 10 * HOUR;
    const resumed = planRun({ request, state: fromStore(stored), now, settings });
    expect(resumed.resumed).toEqual({ windowStart: T0 + HOUR, mid: true });
    expect(resumed.windowsDone).toBe(1);
    expect(resumed.windows.map((w) => [w.from - T0, w.cursor, w.done])).toEqual([
      [HOUR, 'c', false],
      [2 * HOUR, null, true],
      [3 * HOUR, null, false],
    ]);
    const frontier = new Frontier(resumed.windows);
    expect(resumed.checkpoint(frontier, frontier.page(0, null), { localTime: now }).state.head).toEqual({ from: T0 + 3 * HOUR, to: T0 + 4 * HOUR, cursor: null });
    expect(resumed.checkpoint(frontier, frontier.page(2, null), { localTime: now }).state.head).toBeNull();

    const restarted = planRun({ request: { ...request, restart: true }, state: fromStore(stored), now, settings });
    expect(restarted.restarted).toEqual({ from: T0, to: T0 + 4 * HOUR });
    expect(restarted.resumed).toBeUndefined();
    expect(restarted.windows.map((w) => [w.from - T0, w.cursor, w.done])).toEqual([0, 1, 2, 3].map((h) => [h * HOUR, null, false]));
  });
});

describe('rewindOnEvidence', () => {
  const plan = { windows: [{ from: T0 + 2 * HOUR, to: T0 + 3 * HOUR, cursor: null, done: false }] };

  it("takes the watermark back before the run's first window and the stray records, on the bounds' grid", () => {
    const current = fromStore(state({ watermark: iso(T0 + 3 * HOUR) }));
    expect(rewindOnEvidence({ request: { mode: 'incremental' }, plan, earliest: T0 + 5 * HOUR, current, stepMs: HOUR, gridMs: 1 })).toEqual({ watermark: T0 + 2 * HOUR });
    expect(rewindOnEvidence({ request: { mode: 'incremental' }, plan, earliest: T0 + 90 * MIN + 7, current, stepMs: HOUR, gridMs: MIN })).toEqual({ watermark: T0 + 90 * MIN });
    // Already there, or nothing stored: nothing to do.
    expect(rewindOnEvidence({ request: { mode: 'incremental' }, plan, earliest: T0 + 5 * HOUR, current: fromStore(state({ watermark: iso(T0 + HOUR) })), stepMs: HOUR, gridMs: 1 })).toBeUndefined();
    expect(rewindOnEvidence({ request: { mode: 'incremental' }, plan, earliest: T0, current: fromStore(undefined), stepMs: HOUR, gridMs: 1 })).toBeUndefined();
  });

  it("takes a backfill's progress back to the window holding that instant, a complete range included", () => {
    const request = { mode: 'backfill' as const, from: T0, to: T0 + 6 * HOUR };
    const range = { rangeStart: iso(T0), rangeEnd: iso(T0 + 6 * HOUR) };
    const inProgress = state({ ...range, windowStart: iso(T0 + 4 * HOUR), windowEnd: iso(T0 + 5 * HOUR) });
    expect(rewindOnEvidence({ request, plan, earliest: T0 + 90 * MIN, current: fromStore(inProgress), stepMs: HOUR, gridMs: 1 })).toEqual({
      progress: { windowStart: T0 + HOUR, windowEnd: T0 + 2 * HOUR, pageCursor: null },
    });
    expect(rewindOnEvidence({ request, plan, earliest: T0 - HOUR, current: fromStore(state(range)), stepMs: HOUR, gridMs: 1 })).toEqual({
      progress: { windowStart: T0, windowEnd: T0 + HOUR, pageCursor: null },
    });
    expect(rewindOnEvidence({ request, plan, earliest: T0 + 5 * HOUR, current: fromStore(state({ ...range, windowStart: iso(T0 + HOUR), windowEnd: iso(T0 + 2 * HOUR) })), stepMs: HOUR, gridMs: 1 })).toBeUndefined();
  });
});
