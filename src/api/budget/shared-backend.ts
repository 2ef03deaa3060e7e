import type { BudgetRows } from '../../budget-store.ts';
import type { Clock } from '../../clock.ts';
import type { Logger } from '../../logger.ts';
import { initialState, reconcile, type LimitState } from './aimd.ts';
import { KeyBudget, passedOn } from './key-budget.ts';
import { keyIds } from './keys.ts';
import { admit, lowestFree, reserveRate } from './limiter.ts';
import type { BudgetSettings } from './settings.ts';
import type { ApiBudget, BudgetBackend } from './types.ts';

/** The policy the store applies to a key's stored limit (src/budget-store.ts `LimitPolicy`): this folder's pure parts. */
export function limitPolicy(settings: BudgetSettings, clock: Clock) {
  return {
    initial: () => initialState(settings, clock.now()),
    reconcile: (state: LimitState) => reconcile(state, settings),
    admit,
    lowestFree,
    reserveRate,
  };
}

export interface SharedBudgetOptions {
  /** Where the keys' budgets are shared (the store's `openBudgetRows`): Postgres, or a file beside a SQLite database. */
  rows: BudgetRows<LimitState>;
  settings: BudgetSettings;
  clock: Clock;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  logger: Logger;
  maxPauseMs: number;
}

/**
 * The budgets of the keys shared by every process using the database: each key's queue in this process (KeyBudget)
 * over the store's rows of the key, with the dialect's timing.
 */
export class SharedBudgetBackend implements BudgetBackend {
  readonly #o: SharedBudgetOptions;
  readonly #budgets = new Map<string, KeyBudget>();

  constructor(options: SharedBudgetOptions) {
    this.#o = options;
  }

  /** Where the budgets are shared: `postgres` or `sqlite` (a coordinator file beside the database). */
  get dialect(): 'postgres' | 'sqlite' {
    return this.#o.rows.dialect;
  }

  budget(baseUrl: string, apiKey: string): ApiBudget {
    const { keyId, lockKey } = keyIds(baseUrl, apiKey);
    let budget = this.#budgets.get(keyId);
    if (!budget) {
      const { timing } = this.#o.rows;
      budget = new KeyBudget(this.#o.rows.keyStore(keyId, lockKey), this.#o.settings, { ...passedOn(this.#o), label: apiKey, ...timing });
      this.#budgets.set(keyId, budget);
    }
    return budget;
  }

  close(): Promise<void> {
    return this.#o.rows.close();
  }
}
