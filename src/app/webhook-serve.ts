import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { Store } from '../store/types.ts';
import { receiverProblem, receiverOptions, startReceiver, type Receiver, type WebhookOutcome } from '../webhooks/receiver.ts';
import { redactUrl } from '../net.ts';
import { openForWriting } from './database.ts';
import { waitForPostgres } from './wait-for-database.ts';
import { reconcileAggregates } from './aggregates.ts';
import { deliveryRulesFor, loadStreams } from './streams.ts';
import { updatePlannerStatisticsAfterRun } from './planner-statistics.ts';
import { StatisticsAfterDeliveries } from './statistics-after-deliveries.ts';

export interface ServeWebhooksOptions {
  config: Config;
  logger: Logger;
  /** The receiver runs until this aborts, then closes gracefully. */
  signal: AbortSignal;
  /** Overrides of config.webhook (command-line flags). */
  host?: string;
  port?: number;
  path?: string;
  clock?: Clock;
  onOutcome?(outcome: WebhookOutcome): void;
  /** Called once listening (tests and the CLI print the URL). */
  onListening?(receiver: Receiver): void;
  /** Use this store instead of opening config.database (it is then not closed here). */
  store?: Store;
  /** After a stored delivery, the planner-statistics step within this long (STATISTICS_AFTER_DELIVERIES_MS). */
  statisticsAfterMs?: number;
}

/**
 * How long closing the database may take at the end before the receiver stops waiting for it: the store first
 * refreshes the aggregates of the last second's deliveries, then closes. The store's own close is bounded
 * (src/store/postgres/locks.ts CLOSE_WAIT_SECONDS); this is the guard over any store's.
 */
const STORE_CLOSE_LIMIT_MS = 3_000;

/**
 * `webhook serve`: opens the database, applies pending migrations, receives deliveries until `signal` aborts, then
 * stops accepting, lets in-flight deliveries finish (or answers them 503) and closes the database. A SIGTERM is
 * honoured in every phase, a database that does not answer included: before the receiver started it returns at once
 * (nothing was received, nothing to lose), saying what it was waiting for.
 */
export async function serveWebhooks(options: ServeWebhooksOptions): Promise<void> {
  const { config, logger, signal } = options;
  const problem = receiverProblem(config);
  if (problem) throw problem;
  const ownStore = !options.store;
  const database = redactUrl(config.database.url);
  const started = Date.now();
  const stoppedWhile = (what: string) =>
    logger.info({ database, waitedMs: Date.now() - started }, `stopped before receiving any delivery, while ${what} ${database}`);
  if (ownStore && config.database.dialect === 'postgres' && (await waitForPostgres(config.database.url, { signal, logger })) === 'stopped') {
    stoppedWhile('waiting for an answer from the database at');
    return;
  }
  let store: Store;
  try {
    store = options.store ?? (await untilAborted(openForWriting(config.database, logger, undefined, signal), signal));
  } catch (error) {
    // better-sqlite3 waits for a lock synchronously: a SIGTERM that came meanwhile is handled in the next turn.
    await new Promise((resolve) => setImmediate(resolve));
    if (!signal.aborted) throw error;
    // What failed or was abandoned was the start: nothing has been received, so nothing is lost.
    stoppedWhile('opening and migrating the database at');
    return;
  }
  let receiver: Receiver | undefined;
  // The step a sync's run ends with (the planner's statistics), for a database only deliveries write to.
  const statistics = new StatisticsAfterDeliveries({
    update: () => updatePlannerStatisticsAfterRun(store, logger, 'the deliveries'),
    ...(options.statisticsAfterMs !== undefined && { intervalMs: options.statisticsAfterMs }),
  });
  try {
    if (signal.aborted) return;
    const streams = loadStreams(config).streams;
    // Deliveries of a building with no recorded calendar are computed with the configured one.
    await reconcileAggregates({ store, config, streams, customers: config.customers, logger });
    receiver = await startReceiver({
      ...receiverOptions(config, { host: options.host, port: options.port, path: options.path }),
      deliveries: deliveryRulesFor(streams),
      store,
      logger,
      ...(options.clock && { clock: options.clock }),
      onOutcome: (outcome) => {
        if (outcome.reason === 'stored') statistics.stored();
        options.onOutcome?.(outcome);
      },
    });
    options.onListening?.(receiver);
    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      else signal.addEventListener('abort', () => resolve(), { once: true });
    });
    logger.info('stopping the webhook receiver: no new connections, finishing deliveries in flight');
  } finally {
    await receiver?.close();
    await statistics.close();
    if (ownStore) await closeStore(store, logger, database);
  }
}

/**
 * openForWriting, or a rejection as soon as `signal` aborts; a store that opens after that is closed again.
 */
function untilAborted(opening: Promise<Store>, signal: AbortSignal): Promise<Store> {
  return new Promise<Store>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    opening.then(
      (store) => {
        signal.removeEventListener('abort', onAbort);
        if (signal.aborted) void store.close().catch(() => {});
        resolve(store);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** Closes the store, waiting at most STORE_CLOSE_LIMIT_MS for a database that does not answer. */
async function closeStore(store: Store, logger: Logger, database: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<'limit'>((resolve) => {
    timer = setTimeout(() => resolve('limit'), STORE_CLOSE_LIMIT_MS);
    timer.unref();
  });
  const closed = store.close().then(
    () => 'closed' as const,
    (error: unknown) => {
      logger.warn({ err: error, database }, 'closing the database failed; every acknowledged delivery was committed before its answer');
      return 'closed' as const;
    },
  );
  if ((await Promise.race([closed, limit])) === 'limit') {
    logger.warn({ database, waitedMs: STORE_CLOSE_LIMIT_MS }, `the database at ${database} did not finish closing within ${STORE_CLOSE_LIMIT_MS / 1000} s; stopping without waiting for it (every acknowledged delivery was committed before its answer; the last deliveries' aggregates, if not refreshed yet, are refreshed by the next start, run or report)`);
  }
  clearTimeout(timer);
}
