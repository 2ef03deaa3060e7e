import { defaultSleep } from '../api/abort.ts';
import { limitPolicy, MemoryBudgetBackend, SharedBudgetBackend, type BudgetBackend } from '../api/budget/index.ts';
import { createApiClient, type ApiClient } from '../api/client.ts';
import { systemClock, type Clock } from '../clock.ts';
import { requireApi, type Config, type CustomerConfig } from '../config.ts';
import type { Logger } from '../logger.ts';
import { globalSecrets } from '../logger.ts';
import { openBudgetRows } from '../store/api-budget.ts';

/**
 * What a client is for decides its few differences; everything else (base URL, HTTP policy, token margin, secret
 * scrubbing, the key's API budget) comes from the configuration the same way for every command.
 * - `sync`: only queries, and re-reading a page is harmless, so a transient page-level GraphQL error (the platform's,
 *   or the sandbox's graphqlError fault) is retried instead of failing the customer's run.
 * - `admin`: webhook mutations; a GraphQL error is an answer, never retried.
 * - `check`: proves the key and secret work, so it authenticates for real instead of reusing a cached token.
 */
export type ClientPurpose = 'sync' | 'admin' | 'check';

export interface ClientOptions {
  logger: Logger;
  clock?: Clock;
  /** Overrides config.apiBaseUrl (the demo and tests point at a sandbox). */
  baseUrl?: string;
  /** Where the key's API budget lives (openBudgets); default: in this client alone, as the configuration sets it. */
  budgets?: BudgetBackend;
}

/** The one place an API client is built from the configuration. */
export function createClient(config: Config, customer: CustomerConfig, purpose: ClientPurpose, options: ClientOptions): ApiClient {
  const cacheFile = purpose === 'check' ? undefined : config.token.cacheFile;
  const baseUrl = options.baseUrl ?? requireApi(config).apiBaseUrl;
  return createApiClient({
    baseUrl,
    apiKey: customer.apiKey,
    apiSecret: customer.apiSecret,
    clock: options.clock ?? systemClock,
    logger: options.logger.child({ customer: customer.id }),
    http: config.http,
    refreshMarginMs: config.token.refreshMarginMs,
    ...(cacheFile && { tokenCacheFile: cacheFile }),
    secrets: globalSecrets,
    retryGraphQLErrors: purpose === 'sync',
    budgetSettings: config.budget,
    ...(options.budgets && { budget: options.budgets.budget(baseUrl, customer.apiKey) }),
  });
}

/** The longest a request holds a slot: its timeout, and a margin for reading the answer. */
const leaseMs = (config: Config) => config.http.timeoutMs + 60_000;

/**
 * The API budgets of this process's keys, kept where every process using the database can draw on them: Postgres
 * (every `serve` instance, cron `sync` and `backfill` on that database), or a coordinator file beside a SQLite database
 * (the processes of this host). Opened lazily: nothing is connected until a query asks for leave.
 */
export function openBudgets(config: Config, options: { logger: Logger; clock?: Clock }): BudgetBackend {
  const common = {
    settings: config.budget,
    clock: options.clock ?? systemClock,
    sleep: defaultSleep,
    logger: options.logger.child({ component: 'api-budget' }),
    maxPauseMs: 120_000,
  };
  const rows = openBudgetRows(config.database, {
    policy: limitPolicy(config.budget, common.clock),
    maxInFlight: config.budget.maxInFlight,
    adaptive: config.budget.adaptive,
    logger: common.logger,
    leaseMs: leaseMs(config),
  });
  if (rows) return new SharedBudgetBackend({ ...common, rows });
  return new MemoryBudgetBackend(common);
}

const budgetsOf = new WeakMap<object, BudgetBackend>();

/** One sync client per customer, as the engine's targets, drawing on the keys' shared budgets; close with closeClients. */
export function createSyncTargets(config: Config, customers: ReadonlyArray<CustomerConfig>, options: ClientOptions) {
  const budgets = options.budgets ?? openBudgets(config, options);
  const targets = customers.map((customer) => ({
    customerId: customer.id,
    apiKey: customer.apiKey,
    client: createClient(config, customer, 'sync', { ...options, budgets }),
  }));
  if (!options.budgets) budgetsOf.set(targets, budgets);
  return targets;
}

/**
 * Closes clients, ignoring failures: a client that cannot close has nothing left to lose. The budgets opened for
 * them by createSyncTargets close with them (a Postgres session ending gives back every slot it held).
 */
export async function closeClients(clients: ReadonlyArray<{ client: ApiClient }>): Promise<void> {
  await Promise.all(clients.map((c) => c.client.close().catch(() => {})));
  await budgetsOf.get(clients)?.close().catch(() => {});
}
