import { setTimeout as delay } from 'node:timers/promises';
import { systemClock, type Clock } from '../clock.ts';
import { requireApi, type Config, type CustomerConfig } from '../config.ts';
import type { Logger } from '../logger.ts';
import { createMetrics, type Metrics } from '../metrics.ts';
import type { Store } from '../store/types.ts';
import { reconcileAggregates } from '../app/aggregates.ts';
import { openForWriting } from '../app/database.ts';
import { settlesWithin, startScheduler, validateCron, type Scheduler, type SchedulerOptions } from '../app/scheduler.ts';
import { parseDocumentSource } from '../api/documents.ts';
import { startQueue, type Queue } from '../app/queue.ts';
import { dataCheckLines, watchData, type DataCheckWatch } from '../app/data-checks.ts';
import { startRetention, type Retention } from '../app/retention.ts';
import { createSyncPass, type SyncPass } from '../app/sync-pass.ts';
import type { AnyStream } from '../sync/stream.ts';
import { receiverConfigured, receiverOptions, startReceiver, type Receiver, type WebhookOutcome } from '../webhooks/receiver.ts';
import { startOpsServer, type OpsServer } from './ops-server.ts';
import { deliveryRulesFor, loadStreams } from '../app/streams.ts';

/**
 * `occupancy-sync serve`: the sync schedule, the webhook receiver and the operations endpoints in one process.
 *
 * Shutdown (the signal aborts): /healthz turns 503 so a load balancer drains this instance, the receiver stops
 * accepting and finishes the deliveries in flight, the sync run in progress finishes and commits its current page,
 * then everything closes and the promise resolves (the CLI exits 0).
 *
 * Several instances can share one Postgres: runs take a per customer and stream advisory lock (the second instance
 * records `locked` and moves on), and receivers keep no state outside the database.
 */

export interface ServeOptions {
  config: Config;
  logger: Logger;
  signal: AbortSignal;
  clock?: Clock;
  metrics?: Metrics;
  /** Run the sync schedule (default true). Off: a receiver-only instance. */
  schedule?: boolean;
  /** Run the webhook receiver (default true). Off: a sync-only instance. */
  webhooks?: boolean;
  /** Also run a sync pass right away instead of waiting for the first cron tick. */
  runAtStart?: boolean;
  /**
   * Each pass waits a random 0..jitterMs first. Instances sharing a database tick at the same second; without jitter
   * the fastest one wins every lock every time and the others only stand by. Default 0.
   */
  jitterMs?: number;
  customers?: ReadonlyArray<CustomerConfig>;
  streams?: ReadonlyArray<AnyStream>;
  /** /healthz turns unhealthy when a stream lags more than this. Default: lag is reported, not judged. */
  maxLagSeconds?: number;
  /** Overrides config.apiBaseUrl (tests point it at a sandbox). */
  baseUrl?: string;
  /** Use this store instead of opening config.database (it is then not closed here). */
  store?: Store;
  /** Queue tuning (Postgres), for tests: how soon a dead worker's job is released, how often workers poll. */
  queue?: { staleAfterMs?: number; pollIntervalMs?: number };
  /** node-cron's schedule, replaceable in tests. */
  cronSchedule?: SchedulerOptions['schedule'];
  /** Called once everything listens. */
  onReady?(info: { opsUrl: string; webhookUrl: string | undefined; scheduler: Scheduler | undefined }): void;
}

/** Maps the receiver's outcome to the metrics' accepted / duplicate / refused-by-reason. */
export function webhookMetric(metrics: Metrics, outcome: WebhookOutcome): void {
  if (outcome.reason === 'stored') metrics.webhookOutcome('accepted');
  else if (outcome.reason === 'duplicate') metrics.webhookOutcome('duplicate');
  else metrics.webhookOutcome('refused', outcome.reason);
}

/** The guard over each close at a stop (each is bounded by its own module too: docs/operations.md, "How long a stop takes"). */
const CLOSE_LIMIT_MS = 3_000;

export async function serve(options: ServeOptions): Promise<void> {
  const { config, logger, signal } = options;
  const clock = options.clock ?? systemClock;
  const metrics = options.metrics ?? createMetrics({ perCustomer: config.metrics.perCustomer });
  const scheduleOn = options.schedule ?? true;
  const webhooksOn = options.webhooks ?? true;
  const customers = options.customers ?? config.customers;
  if (scheduleOn) {
    validateCron(config.sync.cron);
    if (!options.baseUrl) requireApi(config);
  }
  const streams = options.streams ?? loadStreams(config, { parseDocument: parseDocumentSource }).streams;

  // SIGTERM ends a wait for another process's migration; the store itself keeps its statements for a clean stop.
  const store = options.store ?? (await openForWriting(config.database, logger, undefined, signal));
  let stopping = false;
  let receiver: Receiver | undefined;
  let ops: OpsServer | undefined;
  let pass: SyncPass | undefined;
  let queue: Queue | undefined;
  let retention: Retention | undefined;
  let dataChecks: DataCheckWatch | undefined;
  let scheduler: Scheduler | undefined;
  try {
    if (webhooksOn && !receiverConfigured({ customers, webhook: config.webhook })) {
      logger.info(
        'webhook receiver off: no customer has a webhook secret or custom header (set WEBHOOK_SECRET to receive deliveries; serve runs sync and /healthz, /metrics)',
      );
    } else if (webhooksOn) {
      await reconcileAggregates({ store, config, streams, customers, logger });
      receiver = await startReceiver({
        ...receiverOptions({ customers, webhook: config.webhook }),
        deliveries: deliveryRulesFor(streams),
        store,
        clock,
        logger: logger.child({ component: 'webhooks' }),
        onOutcome: (outcome) => webhookMetric(metrics, outcome),
      });
    }
    ops = await startOpsServer({
      host: config.serve.host,
      port: config.serve.port,
      store,
      metrics,
      clock,
      logger: logger.child({ component: 'ops' }),
      health: () => ({
        customerIds: customers.map((c) => c.id),
        maxLagSeconds: options.maxLagSeconds,
        stopping,
        dataWarnings: dataChecks?.latest ? dataCheckLines(dataChecks.latest) : [],
      }),
    });
    dataChecks = watchData({ store, streams, customers, settings: config.sync, clock, logger: logger.child({ component: 'data-checks' }), metrics });
    if (scheduleOn) {
      retention = startRetention({ store, retentionMs: config.sync.runHistoryRetentionMs, readingsRetentionMs: config.sync.readingsRetentionMs, clock, logger: logger.child({ component: 'retention' }) });
      pass = createSyncPass({ config, store, logger: logger.child({ component: 'sync' }), metrics, clock, customers, streams, baseUrl: options.baseUrl });
      // Postgres: runs are jobs of a queue every instance works (src/app/queue.ts); a tick only adds the interval's
      // jobs. SQLite (one machine): the tick runs the pass in this process.
      if (store.dialect === 'postgres') {
        queue = await startQueue({
          databaseUrl: config.database.url,
          pass,
          customerIds: customers.map((c) => c.id),
          streams,
          concurrency: config.sync.queueConcurrency,
          logger,
          ...(options.queue ?? {}),
        });
      }
      const live = queue;
      const run = live ? async () => void (await live.tick()) : pass.run.bind(pass);
      scheduler = startScheduler({
        cron: config.sync.cron,
        logger: logger.child({ component: 'schedule' }),
        signal,
        runAtStart: options.runAtStart,
        schedule: options.cronSchedule,
        run: async (runSignal) => {
          if (options.jitterMs) {
            const waited = await delay(Math.random() * options.jitterMs, true, { signal: runSignal }).catch(() => false);
            if (!waited) return;
          }
          await run(runSignal);
        },
      });
    }
    logger.info({ ops: ops.url, webhook: receiver?.url, cron: scheduleOn ? config.sync.cron : undefined }, 'serve: running');
    options.onReady?.({ opsUrl: ops.url, webhookUrl: receiver?.url, scheduler });

    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      else signal.addEventListener('abort', () => resolve(), { once: true });
    });
    stopping = true;
    logger.info('serve: stopping: no new deliveries or runs; finishing the deliveries and the page in flight');
    await Promise.all([receiver?.close(), scheduler?.done]);
    await queue?.stop();
    logger.info('serve: stopped cleanly');
  } finally {
    stopping = true;
    // Runs on a startup failure too (a port in use): close whatever was started, in reverse order.
    await receiver?.close().catch(() => {});
    dataChecks?.stop();
    // A clean-up of run history waiting on a silent database must not hold the stop (it deletes again next time).
    if (retention) await settlesWithin(retention.stop(), CLOSE_LIMIT_MS);
    await queue?.stop().catch(() => {});
    await pass?.close().catch(() => {});
    await ops?.close().catch(() => {});
    if (!options.store) await settlesWithin(store.close(), CLOSE_LIMIT_MS);
  }
}
