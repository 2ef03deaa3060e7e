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
