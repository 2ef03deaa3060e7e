import type { LimitState } from './aimd.ts';

/**
 * When a query of a key may go, as pure functions of the key's state: the stores apply them under their own locks
 * (in memory, a Postgres statement, a SQLite transaction), so every process decides the same way.
 */

export type Admission = { go: true; level: number } | { go: false; why: 'paused' | 'full' };

/** One more query, with `inFlight` already out: not while the key is paused, and only under its limit. */
export function admit(state: LimitState, inFlight: number, now: number): Admission {
  if (state.pausedUntil > now) return { go: false, why: 'paused' };
  if (inFlight >= state.limit) return { go: false, why: 'full' };
  return { go: true, level: inFlight + 1 };
}

/** The lowest slot number not in `taken`: slots are reused from the bottom, so the highest one in use is the level. */
export function lowestFree(taken: ReadonlySet<number>): number {
  let slot = 0;
  while (taken.has(slot)) slot++;
  return slot;
}

/**
 * A start under a rate limit, by the generic cell rate algorithm: `tat` is the theoretical arrival time of the next
 * query; one query per `intervalMs`, with up to `burst` at once. Reserving never fails: it says when to send, and
 * moves `tat` on, so concurrent callers (and processes) are spaced out instead of retrying.
 */
export function reserveRate(tat: number, now: number, intervalMs: number, burst: number): { at: number; tat: number } {
  const at = Math.max(now, tat - (burst - 1) * intervalMs);
  return { at, tat: Math.max(tat, now) + intervalMs };
}

/** Spacing of a rate in queries per second: evenly spaced rather than in bursts, as a platform counting per second expects. */
export function rateSpacing(ratePerSecond: number): { intervalMs: number; burst: number } {
  return { intervalMs: 1000 / ratePerSecond, burst: 1 };
}
