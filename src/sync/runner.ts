import { createApiClient, type ApiClient } from '../api/client.ts';
import { loadDocument } from '../api/documents.ts';
import { systemClock, type Clock } from '../clock.ts';
import { requireApi, selectCustomers, type Config, type CustomerConfig } from '../config.ts';
import { UsageError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { globalSecrets } from '../logger.ts';
import { openStore } from '../store/index.ts';
import type { Store } from '../store/types.ts';
import { streams as registry } from '../../jobs/index.ts';
import { runSync, type ProgressEvent, type RunRequest, type SyncReport, type SyncTarget } from './engine.ts';
import type { AnyStream } from './stream.ts';

/**
 * Wiring shared by the sync, backfill, schedule, status and demo commands: open the database (migrating it),
 * build one API client per customer, run the engine, print the summary and set the exit code.
 */

export async function openDatabase(database: Config['database']): Promise<Store> {
  const store = await openStore(database);
  try {
    await store.migrate();
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
  return store;
}

/** Streams named by `--stream` (all when undefined), with an error listing the valid names. */
export function selectStreams(name: string | undefined, request: RunRequest = { mode: 'incremental' }): AnyStream[] {
  // A backfill of everything loads the windowed streams' range and refreshes the full-refresh ones (engine.ts).
  if (!name) return [...registry];
  const eligible = request.mode === 'backfill' ? registry.filter((s) => s.kind === 'incremental-window') : [...registry];
  const match = eligible.filter((s) => s.name === name);
  if (match.length === 0) {
    const full = request.mode === 'backfill' && registry.some((s) => s.name === name && s.kind === 'full-refresh');
    const problem = full
      ? `a full-refresh stream: every run reads it whole, there is no range to backfill (\`sync --stream ${name}\` refreshes it)`
      : `no such ${request.mode === 'backfill' ? 'stream that can be backfilled' : 'stream'}`;
    throw new UsageError(`--stream ${JSON.stringify(name)}: ${problem}. Fix: use one of ${eligible.map((s) => s.name).join(', ')}`);
  }
  return match;
}

export interface ClientOptions {
  clock?: Clock;
  logger: Logger;
  /** Overrides config.apiBaseUrl (the demo points at its in-process sandbox). */
  baseUrl?: string;
}

export function createClients(config: Config, customers: ReadonlyArray<CustomerConfig>, options: ClientOptions): Array<SyncTarget & { client: ApiClient }> {
  const baseUrl = options.baseUrl ?? requireApi(config).apiBaseUrl;
  return customers.map((customer) => ({
    customerId: customer.id,
    apiKey: customer.apiKey,
    client: createApiClient({
      baseUrl,
      apiKey: customer.apiKey,
      apiSecret: customer.apiSecret,
      clock: options.clock ?? systemClock,
      logger: options.logger.child({ customer: customer.id }),
      http: config.http,
      refreshMarginMs: config.token.refreshMarginMs,
      tokenCacheFile: config.token.cacheFile,
      secrets: globalSecrets,
      // The sync only sends queries, and re-reading a page is harmless: a transient page-level GraphQL error (the
      // platform's, or the sandbox's graphqlError fault) is retried instead of failing the customer's run.
      retryGraphQLErrors: true,
    }),
  }));
}

export interface RunOnceOptions {
  config: Config;
  store: Store;
  logger: Logger;
  customers: ReadonlyArray<CustomerConfig>;
  streams: ReadonlyArray<AnyStream>;
  request?: RunRequest;
  signal?: AbortSignal;
  clock?: Clock;
  baseUrl?: string;
  onProgress?(event: ProgressEvent): void;
}

/** Builds clients, runs the engine once, closes the clients. */
export async function runOnce(options: RunOnceOptions): Promise<SyncReport> {
  const clock = options.clock ?? systemClock;
  const targets = createClients(options.config, options.customers, { clock, logger: options.logger, baseUrl: options.baseUrl });
  try {
    return await runSync({
      store: options.store,
      clock,
      logger: options.logger,
      settings: options.config.sync,
      streams: options.streams,
      targets,
      loadDocument,
      request: options.request,
      signal: options.signal,
      onProgress: options.onProgress,
    });
  } finally {
    await Promise.all(targets.map((t) => t.client.close().catch(() => {})));
  }
}
