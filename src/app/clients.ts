import { createApiClient, type ApiClient } from '../api/client.ts';
import { systemClock, type Clock } from '../clock.ts';
import { requireApi, type Config, type CustomerConfig } from '../config.ts';
import type { Logger } from '../logger.ts';
import { globalSecrets } from '../logger.ts';

/**
 * What a client is for decides its few differences; everything else (base URL, HTTP policy, token margin, secret
 * scrubbing) comes from the configuration the same way for every command.
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
}

/** The one place an API client is built from the configuration. */
export function createClient(config: Config, customer: CustomerConfig, purpose: ClientPurpose, options: ClientOptions): ApiClient {
  const cacheFile = purpose === 'check' ? undefined : config.token.cacheFile;
  return createApiClient({
    baseUrl: options.baseUrl ?? requireApi(config).apiBaseUrl,
    apiKey: customer.apiKey,
    apiSecret: customer.apiSecret,
    clock: options.clock ?? systemClock,
    logger: options.logger.child({ customer: customer.id }),
    http: config.http,
    refreshMarginMs: config.token.refreshMarginMs,
    ...(cacheFile && { tokenCacheFile: cacheFile }),
    secrets: globalSecrets,
    retryGraphQLErrors: purpose === 'sync',
  });
}

/** One sync client per customer, as the engine's targets. */
export function createSyncTargets(config: Config, customers: ReadonlyArray<CustomerConfig>, options: ClientOptions) {
  return customers.map((customer) => ({
    customerId: customer.id,
    apiKey: customer.apiKey,
    client: createClient(config, customer, 'sync', options),
  }));
}

/** Closes clients, ignoring failures: a client that cannot close has nothing left to lose. */
export async function closeClients(clients: ReadonlyArray<{ client: ApiClient }>): Promise<void> {
  await Promise.all(clients.map((c) => c.client.close().catch(() => {})));
}
