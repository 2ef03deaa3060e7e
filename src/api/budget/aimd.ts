import type { BudgetSettings } from './settings.ts';

/**
 * The in-flight limit of one API key, adapted to what the platform answers (AIMD), as a pure function of the key's
 * shared state and one observation. Every process using the key applies the same function to the state it shares
 * with the others (src/api/budget/*-store.ts), so they all find, and keep, one limit.
 *
 * - Start at `startInFlight` (8) and add one slot per round trip while answers come back clean (neither refused nor
 *   slow) and the limit is used up (a limit nobody reaches proves nothing).
 * - A 429 or 503: cut the limit multiplicatively (x0.7, and below the load it was refused at). Only the refused query
 *   waits its Retry-After: the refusal is most often our own probe of a limit the platform does not publish, and
 *   pausing every query of the key to learn what one refusal already said would cost each of them a second.
 * - A 429 or 503 again, to a query sent under the cut limit and below it: the cut did not help (the platform counts
 *   per second, its limit fell, something else uses the key), so the whole key pauses for the Retry-After, and is cut
 *   again.
 * - Above the highest load answered cleanly (`sustained`), probe one slot at a time, `probeMs` apart (5 s, doubling
 *   after each failed probe up to 5 min), so a known limit costs a refusal every few minutes at most.
 * - Rising latency (the platform queues instead of refusing: LatencyTracker) or a timeout: cut by x0.9, no pause.
 * - Below the level sustained before a cut, recover quickly (one slot per clean answer).
 *
 * Answers to requests sent before the latest cut (`epoch`) say nothing new and cut nothing: one burst of refusals is
 * one cut, not eight.
 */

/** What every process using a key shares about it. Integers and epoch-ms times only, so any store can keep it. */
export interface LimitState {
  /** Queries of the key allowed in flight at once. */
  limit: number;
  /** The highest in-flight level answered cleanly since the latest cut: growth up to it is quick, above it a probe. */
  sustained: number;
  /** The level the platform last refused (429/503) or answered slowly at; 0 until then. */
  ceiling: number;
  /** How long the limit stays put before a probe above the sustained level. */
  probeMs: number;
  /** When the limit last changed. */
  changedAt: number;
  /** Counts the cuts; a permit remembers it, so an answer to a request sent before a cut is not counted twice. */
  epoch: number;
  /** The latest cut was for a refusal and the limit has not grown since: another refusal means the cut did not help. */
  refusedCut?: boolean;
  /** No request of the key is sent before this (the platform's Retry-After, for the whole key). 0: not paused. */
  pausedUntil: number;
}

export type Congestion = 'rate_limited' | 'overloaded' | 'slow' | 'timeout';

/**
 * One answer, as the limit sees it. `level`: the key's queries in flight when it was sent, itself included;
 * `saturated`: the limit was reached while it was in flight (only then does a clean answer say the limit could grow).
 */
export type Observation =
  | { kind: 'clean'; level: number; epoch: number; saturated: boolean; queueing: boolean }
  | { kind: 'congested'; cause: Congestion; level: number; epoch: number; retryAfterMs?: number }
  | { kind: 'neutral' };

export const DECREASE = 0.7;
export const SLOW_DECREASE = 0.9;
export const PROBE_MIN_MS = 5_000;
export const PROBE_MAX_MS = 300_000;

export function initialState(settings: BudgetSettings, now: number): LimitState {
  const limit = settings.adaptive ? Math.min(settings.startInFlight, settings.maxInFlight) : settings.maxInFlight;
  return { limit, sustained: 0, ceiling: 0, probeMs: PROBE_MIN_MS, changedAt: now, epoch: 0, pausedUntil: 0 };
}

/** A state read back from a store, made safe to use with these settings (they may have changed since it was written). */
export function reconcile(state: LimitState, settings: BudgetSettings): LimitState {
  const limit = settings.adaptive ? Math.max(1, Math.min(Math.floor(state.limit), settings.maxInFlight)) : settings.maxInFlight;
  return limit === state.limit ? state : { ...state, limit };
}

export interface Step {
  /** The state after the observation; the same object when nothing changed (stores then write nothing). */
  state: LimitState;
  /** Clean answers at the limit since it last grew, kept by each process (growth is one slot per round trip). */
  credit: number;
  /** Whether this observation paused the whole key. */
  paused: boolean;
}

/** Applies one observation at time `now`. Pure: the state and credit in, the next ones out. */
export function observe(state: LimitState, credit: number, seen: Observation, now: number, settings: BudgetSettings): Step {
  const same: Step = { state, credit, paused: false };
  if (seen.kind === 'neutral') return same;
  const current = seen.epoch === state.epoch;

  if (seen.kind === 'clean') {
    if (!settings.adaptive || !current) return same;
    let next = state;
    if (seen.level > next.sustained) next = { ...next, sustained: seen.level };
    if (!seen.saturated || next.limit >= settings.maxInFlight) return { state: next, credit, paused: false };
    // The limit is used up and the answer came back clean: room to grow?
    if (next.limit < next.sustained) return { state: grow(next, now), credit: 0, paused: false };
    let due: boolean;
    if (next.ceiling === 0) {
      // Still finding the limit: one slot per round trip (one per `limit` clean answers at the limit).
      due = credit + 1 >= next.limit;
      if (!due) return { state: next, credit: credit + 1, paused: false };
    } else {
      due = now - next.changedAt >= next.probeMs;
      if (!due) return { state: next, credit, paused: false };
    }
    // The last growth only made the platform queue: take it back, as a failed probe, instead of growing again.
    if (seen.queueing) {
      const back = { ...next, limit: Math.max(1, next.limit - 1), ceiling: next.limit, probeMs: Math.min(PROBE_MAX_MS, next.probeMs * 2), changedAt: now };
      return { state: { ...back, sustained: Math.min(back.sustained, back.limit), epoch: next.epoch + 1, refusedCut: false }, credit: 0, paused: false };
    }
    return { state: grow(next, now), credit: 0, paused: false };
  }

  // Congestion. A refusal pauses the whole key only when a cut for a refusal did not help (or the limit is fixed).
  const refusal = seen.cause === 'rate_limited' || seen.cause === 'overloaded';
  // At the new limit itself, the refusal may only say the cut was one short (queries reach the platform out of order,
  // so the load a refusal is counted at can be one above the platform's): cut again, no pause. Below it, the cut did
  // not help.
  const insists = !settings.adaptive || (current && state.refusedCut === true && seen.level < state.limit);
  let next = state;
  let paused = false;
  if (refusal && insists && seen.retryAfterMs !== undefined && now + seen.retryAfterMs > state.pausedUntil) {
    next = { ...next, pausedUntil: now + seen.retryAfterMs };
    paused = true;
  }
  if (!settings.adaptive || !current) return { state: next, credit, paused };
  const probe = seen.level > state.sustained;
  const factor = refusal ? DECREASE : SLOW_DECREASE;
  const below = refusal ? seen.level - 1 : next.limit - 1;
  const limit = Math.max(1, Math.min(Math.floor(next.limit * factor), below, next.limit - 1));
  const probeMs = probe ? Math.min(PROBE_MAX_MS, next.ceiling === 0 ? next.probeMs : next.probeMs * 2) : next.probeMs;
  next = {
    ...next,
    limit,
    sustained: Math.min(next.sustained, refusal ? Math.max(seen.level - 1, 0) : limit),
    ceiling: refusal ? seen.level : Math.max(next.limit, 1),
    probeMs,
    changedAt: now,
    epoch: next.epoch + 1,
    refusedCut: refusal,
  };
  return { state: next, credit: 0, paused };
}

function grow(state: LimitState, now: number): LimitState {
  return { ...state, limit: state.limit + 1, changedAt: now, refusedCut: false };
}

/**
 * The latency a process sees from the platform, per operation (a buildings query and a page of readings take
 * different times), for two judgements:
 * - `slow`: the moving average of the latest answers is over four times the least of them, and a second more. Only a
 *   clear rise counts: pages of one operation differ in size, a busy host delays its own reading of answers, and a
 *   false alarm would cut the limit for nothing.
 * - `queueing`: since the limit last grew, answers take longer in proportion to the growth, so the extra queries only
 *   wait in the platform's queue (its throughput did not grow). A platform that queues instead of refusing is found
 *   this way before its latency triples.
 * Pure but kept per process: latencies include this process's own event loop, so they are not shared.
 */
export class LatencyTracker {
  readonly #operations = new Map<string, Latencies>();
  readonly #size: number;

  constructor(size = 256) {
    this.#size = size;
  }

  /** Adds an answer's latency, sent under `limit`; says whether the platform answers that operation slowly. */
  add(operation: string, ms: number, limit: number): 'slow' | 'fast' {
    if (!(ms >= 0)) return 'fast';
    let seen = this.#operations.get(operation);
    if (!seen) {
      seen = { window: [], average: ms, current: { limit, sum: 0, squares: 0, count: 0 }, previous: undefined };
      this.#operations.set(operation, seen);
    }
    seen.window.push(ms);
    if (seen.window.length > this.#size) seen.window.shift();
    seen.average = seen.average * 0.8 + ms * 0.2;
    if (limit !== seen.current.limit) {
      // A new period: the one before it is what the next growth is judged against.
      if (seen.current.count >= PERIOD_SAMPLES) seen.previous = seen.current;
      seen.current = { limit, sum: 0, squares: 0, count: 0 };
    }
    seen.current.sum += ms;
    seen.current.squares += ms * ms;
    seen.current.count++;
    if (seen.window.length < 8) return 'fast';
    let least = Infinity;
    for (const sample of seen.window) least = Math.min(least, sample);
    return seen.average > least * 4 && seen.average - least > SLOW_EXCESS_MS ? 'slow' : 'fast';
  }

  /** Whether the latest growth of the limit only lengthened the platform's queue (see above), for any operation. */
  queueing(): boolean {
    for (const seen of this.#operations.values()) {
      const { previous, current } = seen;
      if (!previous || current.count < PERIOD_SAMPLES || current.limit <= previous.limit) continue;
      const before = previous.sum / previous.count;
      const now = current.sum / current.count;
      // Pure queueing stretches latency by limit/previous; a platform with room for more does not stretch it at all.
      // The stretch must also stand out of the noise (twice the standard error of the difference): a busy host's
      // latencies wander by more than a slot's worth.
      const noise = 2 * Math.sqrt(variance(previous) / previous.count + variance(current) / current.count);
      const stretch = now - before;
      if (stretch >= (before * 0.75 * (current.limit - previous.limit)) / previous.limit && stretch >= noise) return true;
    }
    return false;
  }
}

/**
 * How much longer than the least the latest answers must take, on average, to count as slow: more than a busy host's
 * own delays (a process storing pages, a loaded machine), which would otherwise cut the limit for nothing.
 */
const SLOW_EXCESS_MS = 1000;

/** Answers a period at one limit needs before its average latency counts. */
const PERIOD_SAMPLES = 8;

interface Period {
  limit: number;
  sum: number;
  squares: number;
  count: number;
}

interface Latencies {
  window: number[];
  average: number;
  current: Period;
  previous: Period | undefined;
}

function variance(period: Period): number {
  const mean = period.sum / period.count;
  return Math.max(0, period.squares / period.count - mean * mean);
}
