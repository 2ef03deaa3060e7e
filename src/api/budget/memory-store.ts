import type { Clock } from '../../clock.ts';
import type { Logger } from '../../logger.ts';
import { initialState, reconcile, type LimitState } from './aimd.ts';
import { KeyBudget } from './key-budget.ts';
import { keyIds } from './keys.ts';
import { admit, lowestFree, reserveRate } from './limiter.ts';
import type { ApiBudget, BudgetBackend, BudgetSettings, KeyStore, Take } from './types.ts';

/**
 * A key's budget held in this process only: for clients with no database (`check`, the webhook commands, the
 * package's createApiClient) and for tests. Other processes using the key are not counted.
 */
export class MemoryKeyStore implements KeyStore {
  #state: LimitState;
  readonly #taken = new Set<number>();
  #tat = 0;
  readonly #settings: BudgetSettings;

  constructor(settings: BudgetSettings, now: number) {
    this.#settings = settings;
    this.#state = initialState(settings, now);
  }

  async take(now: number, want: number): Promise<Take> {
    const grants: Array<{ slot: number; level: number }> = [];
    for (;;) {
      const admission = admit(this.#state, this.#taken.size, now);
      if (!admission.go) return grants.length > 0 ? { grants, state: this.#state } : { grants: [], state: this.#state, why: admission.why };
      const slot = lowestFree(this.#taken);
      this.#taken.add(slot);
      grants.push({ slot, level: admission.level });
      if (grants.length >= want) return { grants, state: this.#state };
    }
  }

  async give(slot: number): Promise<void> {
    this.#taken.delete(slot);
  }

  async update(change: (state: LimitState) => LimitState): Promise<LimitState> {
    this.#state = reconcile(change(this.#state), this.#settings);
    return this.#state;
  }

  async reserve(now: number, intervalMs: number, burst: number): Promise<number> {
    const { at, tat } = reserveRate(this.#tat, now, intervalMs, burst);
    this.#tat = tat;
    return at;
  }

  /** Nothing outside this process changes it: the budget's own releases wake it. */
  changed(): Promise<void> {
    return new Promise(() => {});
  }
}

export interface MemoryBudgetOptions {
  settings: BudgetSettings;
  clock: Clock;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  logger: Logger;
  maxPauseMs: number;
}

/** The budgets of the keys of this process alone: one per key, shared by every client of the key in the process. */
export class MemoryBudgetBackend implements BudgetBackend {
  readonly #o: MemoryBudgetOptions;
  readonly #budgets = new Map<string, KeyBudget>();

  constructor(options: MemoryBudgetOptions) {
    this.#o = options;
  }

  budget(baseUrl: string, apiKey: string): ApiBudget {
    const { keyId } = keyIds(baseUrl, apiKey);
    let budget = this.#budgets.get(keyId);
    if (!budget) {
      const { settings, clock, sleep, logger, maxPauseMs } = this.#o;
      budget = new KeyBudget(new MemoryKeyStore(settings, clock.now()), settings, { clock, sleep, logger, label: apiKey, maxPauseMs });
      this.#budgets.set(keyId, budget);
    }
    return budget;
  }

  async close(): Promise<void> {}
}
