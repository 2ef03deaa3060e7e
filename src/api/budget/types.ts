import type { KeyStore as SharedKeyStore, Take as SharedTake } from '../../budget-store.ts';
import type { LimitState, Observation } from './aimd.ts';

export { DEFAULT_BUDGET, type BudgetSettings } from './settings.ts';

/**
 * How an answer went, as the client tells it to the budget. `latencyMs`: from sending to the whole answer;
 * `operation`: the document's operation, whose latencies are compared with each other only.
 */
export type Outcome =
  | { kind: 'clean'; latencyMs: number; operation?: string }
  | { kind: 'rate_limited' | 'overloaded'; retryAfterMs?: number }
  | { kind: 'timeout' }
  | { kind: 'neutral' };

/** Leave to send one query: give it back, with how the answer went, once the answer is read. */
export interface Permit {
  /** The key's queries in flight when this one was let go, itself included. */
  readonly level: number;
  /** Gives the slot back. Resolves once the budget has taken the outcome in; `paused`: it paused the whole key. */
  release(outcome: Outcome): Promise<{ paused: boolean }>;
}

/** Figures of one key's budget in this process, for the benchmark and /metrics. */
export interface BudgetStats {
  /** The key's in-flight limit now (every process together). */
  limit: number;
  /** The key's queries in flight in this process now. */
  inFlight: number;
  /** The most of the key's queries this process had in flight at once. */
  maxInFlight: number;
  /** Refusals (429) and overload answers (503) seen by this process. */
  rateLimited: number;
  overloaded: number;
  /** Times an answer of this process paused the whole key (Retry-After). */
  pauses: number;
  /** The level the platform last refused or answered slowly at; 0 until then. */
  ceiling: number;
}

/** The budget of one API key, as the API client uses it. */
export interface ApiBudget {
  /**
   * Waits until the key may send one more query: a free slot under its limit, its rate, and no pause the platform
   * asked for. Rejects with the signal's reason when it aborts, and with a RateLimitError at once when the key is
   * paused for longer than the client blocks for.
   */
  acquire(signal?: AbortSignal): Promise<Permit>;
  stats(): BudgetStats;
}

/**
 * A take from a store: slots under the limit (each with the key's queries in flight once it is out, itself
 * included), or why none.
 */
export type Take = SharedTake<LimitState>;

/**
 * Where one key's shared state and in-flight slots live: in this process (memory-store.ts), or shared by the processes
 * using the database through the store (src/budget-store.ts, src/store/api-budget.ts): in Postgres, or in a
 * coordinator file beside a SQLite database. `take` takes up to `want` slots (one round trip for a queue of queries)
 * when the key is not paused at `now` and has slots free under its limit; `update` applies `change` to the state as
 * stored now, atomically with respect to every other process (`change` returns the same object to write nothing) and
 * resolves to the state in force afterwards; `reserve` reserves the next start under a rate of one per `intervalMs`
 * with bursts of `burst` and resolves to when to send; `changed` resolves when another process may have freed a slot
 * or changed the state, after `ms` at the latest, or at once when `signal` aborts (an in-process store never does:
 * the budget's own releases wake it; a query waiting keeps the process alive, so the timer is not unref'd).
 */
export type KeyStore = SharedKeyStore<LimitState>;

/** Opens the stores of keys; one per process and database, closed with the clients. */
export interface BudgetBackend {
  /** The budget of the key `(baseUrl, apiKey)`: the same object for every client of that key in this process. */
  budget(baseUrl: string, apiKey: string): ApiBudget;
  close(): Promise<void>;
}

export type { LimitState, Observation };
