/**
 * The contract between the API budget of a key (src/api/budget/: the limit's policy, the per-process queue) and the
 * store that shares it between processes (src/store/api-budget.ts and its dialect rooms: the statements). Here, in
 * the core, because both sides use it and neither may import the other (docs/architecture.md, layers).
 */

/** The fields of a key's limit state the store's statements read (Postgres selects on them). */
export interface StoredLimit {
  /** The key's in-flight limit, every process together. */
  limit: number;
  /** Epoch ms until which the platform asked the key to pause. */
  pausedUntil: number;
}

/** Slots taken (each with the key's queries in flight once it is out, itself included), or why none. */
export type Take<S> =
  | { grants: Array<{ slot: number; level: number }>; state: S; why?: undefined }
  | { grants: []; state: S; why: 'paused' | 'full' };

/** One key's shared state and in-flight slots (docs/api-client.md, "API budget per key"). */
export interface KeyStore<S> {
  take(now: number, want: number): Promise<Take<S>>;
  give(slot: number): Promise<void>;
  update(change: (state: S) => S): Promise<S>;
  reserve(now: number, intervalMs: number, burst: number): Promise<number>;
  changed(ms: number, signal: AbortSignal): Promise<void>;
}

/** The API budget's policy, as the store applies it inside its transactions. */
export interface LimitPolicy<S extends StoredLimit> {
  /** A key's state when nothing is stored yet (its time from the budget's clock). */
  initial(): S;
  /** A stored state made to fit the settings in force (a lowered maximum). */
  reconcile(state: S): S;
  /** Whether one more query may go with `inFlight` out, and its level. */
  admit(state: S, inFlight: number, now: number): { go: true; level: number } | { go: false; why: 'paused' | 'full' };
  lowestFree(taken: ReadonlySet<number>): number;
  /** The generic cell rate: when the next start may go, and the new theoretical arrival time. */
  reserveRate(tat: number, now: number, intervalMs: number, burst: number): { at: number; tat: number };
}

/** How a key's queue in a process uses a shared store (KeyBudget's options), by dialect. */
export interface BudgetTiming {
  /** How often a query waiting for a slot another process holds looks again. */
  pollMs: number;
  /** A slot passes from query to query in this process for at most this long before it goes back. */
  reuseMs: number;
  /** A slot no query of this process uses stays with it this long before it goes back. */
  lingerMs: number;
}

/** The shared budgets of one database: one store per key, closed with the clients. */
export interface BudgetRows<S> {
  readonly dialect: 'postgres' | 'sqlite';
  readonly timing: BudgetTiming;
  /** The store of the key `keyId` (its advisory lock key `lockKey` on Postgres): the same object for every call. */
  keyStore(keyId: string, lockKey: number): KeyStore<S>;
  close(): Promise<void>;
}
