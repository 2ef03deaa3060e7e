import type { LimitState, Observation } from './aimd.ts';

/**
 * The API budget of a key: how many of its queries may be in flight at once and how many may start per second,
 * shared by every client of the key in this process and, with a shared store, by every process using it.
 */

export interface BudgetSettings {
  /** The most queries of one key in flight at once, every process together (API_MAX_IN_FLIGHT). */
  maxInFlight: number;
  /** Where an adaptive limit starts for a key nothing has been learnt of yet. */
  startInFlight: number;
  /** Adapt the limit to the platform's answers (AIMD, src/api/budget/aimd.ts), or hold it at maxInFlight. */
  adaptive: boolean;
  /** Queries a key may start per second, every process together (API_MAX_RATE); undefined: no such limit. */
  ratePerSecond: number | undefined;
}

export const DEFAULT_BUDGET: BudgetSettings = { maxInFlight: 32, startInFlight: 8, adaptive: true, ratePerSecond: undefined };

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
export type Take =
  | { grants: Array<{ slot: number; level: number }>; state: LimitState; why?: undefined }
  | { grants: []; state: LimitState; why: 'paused' | 'full' };

/**
 * Where one key's shared state and in-flight slots live: in this process (memory-store.ts), in Postgres for every
 * process using the database (postgres-store.ts), or in a coordinator file beside a SQLite database (sqlite-store.ts).
 */
export interface KeyStore {
  /**
   * Takes up to `want` slots (one round trip for a queue of queries) when the key is not paused at `now` and has
   * slots free under its limit.
   */
  take(now: number, want: number): Promise<Take>;
  /** Gives a slot back. */
  give(slot: number): Promise<void>;
  /**
   * Applies `change` to the state as stored now, atomically with respect to every other process; `change` returns
   * the same object to write nothing. Resolves to the state in force afterwards.
   */
  update(change: (state: LimitState) => LimitState): Promise<LimitState>;
  /** Reserves the next start under a rate of one per `intervalMs` with bursts of `burst`; resolves to when to send. */
  reserve(now: number, intervalMs: number, burst: number): Promise<number>;
  /**
   * Resolves when another process may have freed a slot or changed the state, after `ms` at the latest, or at once
   * when `signal` aborts (no one is waiting any more); an in-process store never does (the budget's own releases wake
   * it). A query waiting keeps the process alive, so the timer is not unref'd.
   */
  changed(ms: number, signal: AbortSignal): Promise<void>;
}

/** Opens the stores of keys; one per process and database, closed with the clients. */
export interface BudgetBackend {
  /** The budget of the key `(baseUrl, apiKey)`: the same object for every client of that key in this process. */
  budget(baseUrl: string, apiKey: string): ApiBudget;
  close(): Promise<void>;
}

export type { LimitState, Observation };
