import { describe, expect, it } from 'vitest';
import { LatencyTracker, PROBE_MIN_MS, initialState, observe, reconcile, type LimitState, type Observation } from '../../src/api/budget/aimd.ts';
import { admit, lowestFree, reserveRate } from '../../src/api/budget/limiter.ts';
import { DEFAULT_BUDGET } from '../../src/api/budget/types.ts';

const settings = DEFAULT_BUDGET;
const clean = (level: number, epoch = 0, saturated = true, queueing = false): Observation => ({ kind: 'clean', level, epoch, saturated, queueing });
const refused = (level: number, epoch = 0, retryAfterMs: number | undefined = 1000): Observation => ({
  kind: 'congested',
  cause: 'rate_limited',
  level,
  epoch,
  ...(retryAfterMs !== undefined && { retryAfterMs }),
});

/** Feeds observations one after the other at time `now`, carrying the state and the credit. */
function feed(state: LimitState, seen: Observation[], now = 0): { state: LimitState; credit: number; paused: boolean[] } {
  let credit = 0;
  const paused: boolean[] = [];
  for (const one of seen) {
    const step = observe(state, credit, one, now, settings);
    state = step.state;
    credit = step.credit;
    paused.push(step.paused);
  }
  return { state, credit, paused };
}

describe('the AIMD limit of a key (pure)', () => {
  it('starts at 8 and grows one slot per round trip while answers at the limit come back clean', () => {
    const start = initialState(settings, 0);
    expect(start).toMatchObject({ limit: 8, sustained: 0, ceiling: 0, epoch: 0, pausedUntil: 0 });
    // Eight clean answers at the limit: one round trip at 8 in flight.
    const after = feed(start, Array.from({ length: 8 }, (_, i) => clean(i + 1))).state;
    expect(after).toMatchObject({ limit: 9, sustained: 8 });
    // Answers while the limit was not reached prove nothing about a higher one.
    expect(feed(start, Array.from({ length: 50 }, () => clean(3, 0, false))).state.limit).toBe(8);
  });

  it('never grows past the maximum, and holds a fixed limit whatever the answers', () => {
    const small = { ...settings, maxInFlight: 9 };
    let state = initialState(small, 0);
    let credit = 0;
    for (let i = 0; i < 100; i++) ({ state, credit } = observe(state, credit, clean(state.limit), 0, small));
    expect(state.limit).toBe(9);
    const fixed = { ...settings, adaptive: false, maxInFlight: 5 };
    const held = initialState(fixed, 0);
    expect(held.limit).toBe(5);
    expect(observe(held, 0, clean(5), 0, fixed).state).toBe(held);
    // A fixed limit cannot be cut: every refusal pauses the whole key.
    expect(observe(held, 0, refused(3), 0, fixed)).toMatchObject({ paused: true, state: { limit: 5, pausedUntil: 1000 } });
  });

  it('a refusal above what the key sustained is a failed probe: cut below it, no pause for the whole key', () => {
    // A probe from 8 to 9, the platform's limit having been found before (at 9).
    const grown: LimitState = { ...initialState(settings, 0), limit: 9, sustained: 8, ceiling: 9 };
    const step = observe(grown, 0, refused(9), 100, settings);
    expect(step.paused).toBe(false);
    expect(step.state).toMatchObject({ limit: 6, sustained: 8, ceiling: 9, epoch: 1, pausedUntil: 0, changedAt: 100 });
    // Back to the sustained level quickly: one slot per clean answer at the limit.
    const recovered = feed(step.state, [clean(6, 1), clean(7, 1)], 200).state;
    expect(recovered.limit).toBe(8);
    // Above it only after probeMs, which doubled.
    expect(recovered.probeMs).toBe(PROBE_MIN_MS * 2);
    expect(feed(recovered, [clean(8, 1)], 100 + PROBE_MIN_MS).state.limit).toBe(8);
    expect(feed(recovered, [clean(8, 1)], 200 + PROBE_MIN_MS * 2).state.limit).toBe(9);
  });

  it('finds a low limit from the start in one cut: 429s at 3 to 8 in flight when the platform takes 2', () => {
    const start = initialState(settings, 0);
    const { state, paused } = feed(start, [3, 4, 5, 6, 7, 8].map((level) => refused(level)));
    expect(state).toMatchObject({ limit: 2, ceiling: 3, epoch: 1 });
    expect(paused.every((p) => !p)).toBe(true);
  });

  it('a refusal to a query sent under a limit already cut for a refusal pauses the whole key for Retry-After', () => {
    const steady: LimitState = { ...initialState(settings, 0), limit: 10, sustained: 10, ceiling: 11 };
    const first = observe(steady, 0, refused(10, 0, 2000), 5000, settings);
    expect(first.paused).toBe(false);
    expect(first.state).toMatchObject({ limit: 7, sustained: 9, pausedUntil: 0, epoch: 1, refusedCut: true });
    // Refused at the cut limit itself: the cut may have been one short; cut again, no pause.
    const short = observe(first.state, 0, refused(7, 1, 2000), 6000, settings);
    expect(short).toMatchObject({ paused: false, state: { limit: 4, epoch: 2 } });
    // Sent under the cut limit and below it, refused all the same: the cut did not help.
    const again = observe(first.state, 0, refused(5, 1, 2000), 6000, settings);
    expect(again.paused).toBe(true);
    expect(again.state).toMatchObject({ limit: 4, pausedUntil: 8000, epoch: 2 });
    // Once the limit has grown again, a refusal is a new episode: a cut, no pause.
    const grown = { ...again.state, limit: 5, refusedCut: false };
    expect(observe(grown, 0, refused(5, 2), 20_000, settings).paused).toBe(false);
  });

  it('answers to queries sent before a cut cut nothing more and pause nothing', () => {
    const steady: LimitState = { ...initialState(settings, 0), limit: 10, sustained: 10, ceiling: 11 };
    const first = observe(steady, 0, refused(10, 0, 1000), 0, settings).state;
    const second = observe(first, 0, refused(9, 0, 3000), 10, settings);
    expect(second.state).toBe(first);
    expect(second.paused).toBe(false);
    // A clean answer from before the cut does not grow it either.
    expect(observe(first, 0, clean(10, 0), 20, settings).state).toBe(first);
  });

  it('backs off gently on a slow answer or a timeout, and on queueing instead of growing', () => {
    const steady: LimitState = { ...initialState(settings, 0), limit: 20, sustained: 20 };
    const slow = observe(steady, 0, { kind: 'congested', cause: 'slow', level: 20, epoch: 0 }, 0, settings);
    expect(slow).toMatchObject({ paused: false, state: { limit: 18, sustained: 18, ceiling: 20, epoch: 1 } });
    const timeout = observe(steady, 0, { kind: 'congested', cause: 'timeout', level: 3, epoch: 0 }, 0, settings);
    expect(timeout.state.limit).toBe(18);
    // A probe is due, but the last growth only made the platform queue: take it back.
    const probing: LimitState = { ...steady, ceiling: 25 };
    expect(observe(probing, 0, clean(20, 0, true, false), PROBE_MIN_MS, settings).state.limit).toBe(21);
    expect(observe(probing, 0, clean(20, 0, true, true), PROBE_MIN_MS, settings).state).toMatchObject({ limit: 19, ceiling: 20, probeMs: PROBE_MIN_MS * 2 });
  });

  it('never goes below one, and neutral answers change nothing', () => {
    const one: LimitState = { ...initialState(settings, 0), limit: 1, sustained: 1 };
    expect(observe(one, 0, refused(1), 0, settings).state.limit).toBe(1);
    expect(observe(one, 0, { kind: 'neutral' }, 0, settings).state).toBe(one);
  });

  it('reconciles a stored state with settings changed since', () => {
    const stored: LimitState = { ...initialState(settings, 0), limit: 40 };
    expect(reconcile(stored, settings).limit).toBe(32);
    expect(reconcile(stored, { ...settings, adaptive: false, maxInFlight: 4 }).limit).toBe(4);
    const fine = { ...stored, limit: 12 };
    expect(reconcile(fine, settings)).toBe(fine);
  });
});

describe('latency as a signal (pure)', () => {
  it('calls an operation slow only when its latency clearly rose, per operation', () => {
    const tracker = new LatencyTracker();
    for (let i = 0; i < 20; i++) tracker.add('buildings', 20, 8);
    // Pages take longer than the buildings query: not a rise.
    for (let i = 0; i < 20; i++) expect(tracker.add('page', 300, 8)).toBe('fast');
    // Pages of different sizes: not a rise either.
    for (let i = 0; i < 40; i++) expect(tracker.add('page', i % 2 ? 120 : 300, 8)).toBe('fast');
    // A busy host's own delays: not a rise of the platform's.
    for (let i = 0; i < 20; i++) expect(tracker.add('page', 700, 8)).toBe('fast');
    let judged = 'fast';
    for (let i = 0; i < 10; i++) judged = tracker.add('page', 2500, 8);
    expect(judged).toBe('slow');
  });

  it('sees queueing: the latest growth stretched latency in proportion, out of the noise', () => {
    const grows = new LatencyTracker();
    for (let i = 0; i < 10; i++) grows.add('page', 100, 8);
    for (let i = 0; i < 10; i++) grows.add('page', 101, 9);
    expect(grows.queueing()).toBe(false);
    const queues = new LatencyTracker();
    for (let i = 0; i < 10; i++) queues.add('page', 100 + (i % 2), 8);
    for (let i = 0; i < 10; i++) queues.add('page', 113 + (i % 2), 9);
    expect(queues.queueing()).toBe(true);
    // The same stretch on a host whose latencies wander by tens of milliseconds says nothing.
    const noisy = new LatencyTracker();
    for (let i = 0; i < 10; i++) noisy.add('page', i % 2 ? 60 : 140, 8);
    for (let i = 0; i < 10; i++) noisy.add('page', i % 2 ? 73 : 153, 9);
    expect(noisy.queueing()).toBe(false);
  });
});

describe('admission and rate (pure)', () => {
  const state = initialState(settings, 0);

  it('admits under the limit, not at it, and not while the key is paused', () => {
    expect(admit(state, 7, 0)).toEqual({ go: true, level: 8 });
    expect(admit(state, 8, 0)).toEqual({ go: false, why: 'full' });
    expect(admit({ ...state, pausedUntil: 100 }, 0, 99)).toEqual({ go: false, why: 'paused' });
    expect(admit({ ...state, pausedUntil: 100 }, 0, 100)).toEqual({ go: true, level: 1 });
    expect(lowestFree(new Set([0, 1, 3]))).toBe(2);
  });

  it('spaces starts one interval apart, never refusing, and allows a burst when asked', () => {
    let tat = 0;
    const starts: number[] = [];
    for (let i = 0; i < 4; i++) {
      const r = reserveRate(tat, 1000, 100, 1);
      starts.push(r.at);
      tat = r.tat;
    }
    expect(starts).toEqual([1000, 1100, 1200, 1300]);
    expect(reserveRate(0, 1000, 100, 3)).toEqual({ at: 1000, tat: 1100 });
    expect(reserveRate(1200, 1000, 100, 3).at).toBe(1000);
    expect(reserveRate(1300, 1000, 100, 3).at).toBe(1100);
  });
});
