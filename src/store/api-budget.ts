import type { BudgetRows, BudgetTiming, KeyStore, LimitPolicy, StoredLimit } from '../budget-store.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';

/**
 * Where the API budget of a key (src/api/budget/) is shared between processes: the store's part of it, as data and
 * statements per dialect. Postgres keeps a key's slots as session advisory locks and its limit in `api_budgets`
 * (src/store/postgres/api-budget.ts); SQLite keeps both in a coordinator file beside the database
 * (src/store/sqlite/api-budget.ts). `openBudgetRows` below opens the one the database's dialect uses.
 * The limit's policy (what a state is, how it starts, who is admitted) is the API budget's: it is handed in, so the
 * store knows of a state only the two fields its statements read.
 */

/**
 * Dialects as data. Postgres: NOTIFY wakes a waiting process at once, so polling is only the fallback (a pooler in
 * transaction mode has no notifications); a take is a round trip answered only when the event loop is free, on the
 * path of the next query, hence the linger. SQLite: no notifications, so a waiting process looks often; every take is
 * a write transaction on the coordinator file, and a window's next page follows its last one within milliseconds.
 */
export const BUDGET_TIMING: Readonly<Record<'postgres' | 'sqlite', BudgetTiming>> = {
  postgres: { pollMs: 200, reuseMs: 1000, lingerMs: 50 },
  sqlite: { pollMs: 25, reuseMs: 1000, lingerMs: 50 },
};

/**
 * The timing of a dialect; on SQLite a slot passes from query to query for at most half a lease (`leaseMs`): a slot row
 * must never expire while it is in use.
 */
export function budgetTiming(dialect: 'postgres' | 'sqlite', leaseMs: number): BudgetTiming {
  const timing = BUDGET_TIMING[dialect];
  return dialect === 'sqlite' ? { ...timing, reuseMs: Math.min(timing.reuseMs, leaseMs / 2) } : timing;
}

/**
 * Rows whose room is loaded on the first use of a key's store (the dialect's module, not a connection: each room
 * connects or opens its file only when a query first asks for leave), so building clients loads nothing.
 */
export function lazyBudgetRows<S>(dialect: 'postgres' | 'sqlite', timing: BudgetTiming, load: () => Promise<BudgetRows<S>>): BudgetRows<S> {
  let loaded: Promise<BudgetRows<S>> | undefined;
  const rows = () => (loaded ??= load());
  return {
    dialect,
    timing,
    keyStore(keyId, lockKey) {
      let store: Promise<KeyStore<S>> | undefined;
      const of = () => (store ??= rows().then((r) => r.keyStore(keyId, lockKey)));
      return {
        take: async (now, want) => (await of()).take(now, want),
        give: async (slot) => (await of()).give(slot),
        update: async (change) => (await of()).update(change),
        reserve: async (now, intervalMs, burst) => (await of()).reserve(now, intervalMs, burst),
        changed: async (ms, signal) => (await of()).changed(ms, signal),
      };
    },
    async close() {
      if (loaded) await (await loaded.catch(() => undefined))?.close();
    },
  };
}

/**
 * Where the API budgets of a process's keys are shared with every other process using the database: Postgres (every
 * `serve` instance, cron `sync` and `backfill` on it: session advisory locks and the table `api_budgets` beside the
 * data), or a coordinator file beside a SQLite database (`<database>-api-budget`: the processes of this host).
 * Undefined for an in-memory SQLite database (nothing to share). Loads its room and connects only when a query first
 * asks for leave.
 */
export function openBudgetRows<S extends StoredLimit>(
  database: Config['database'],
  options: {
    policy: LimitPolicy<S>;
    /** The settings Postgres's take statement applies (API_MAX_IN_FLIGHT, adaptive or not). */
    maxInFlight: number;
    adaptive: boolean;
    logger: Logger;
    /** A SQLite slot row expires this long after it was taken: the longest a request can take, and a margin. */
    leaseMs: number;
  },
): BudgetRows<S> | undefined {
  if (database.dialect === 'postgres') {
    const url = database.url;
    return lazyBudgetRows('postgres', budgetTiming('postgres', options.leaseMs), async () => {
      const { PgBudgetRows } = await import('./postgres/api-budget.ts');
      return new PgBudgetRows({ databaseUrl: url, policy: options.policy, maxInFlight: options.maxInFlight, adaptive: options.adaptive, logger: options.logger });
    });
  }
  const path = database.sqlitePath;
  if (!path || path === ':memory:') return undefined;
  return lazyBudgetRows('sqlite', budgetTiming('sqlite', options.leaseMs), async () => {
    const { SqliteBudgetRows } = await import('./sqlite/api-budget.ts');
    return new SqliteBudgetRows({ file: `${path}-api-budget`, policy: options.policy, leaseMs: options.leaseMs });
  });
}
