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
import { updatePlannerStatisticsAfterRun } from '../app/planner-statistics.ts';
import { StatisticsAfterDeliveries } from '../app/statistics-after-deliveries.ts';
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
  /** After a stored delivery, the planner-statistics step within this long (STATISTICS_AFTER_DELIVERIES_MS), for tests. */
  statisticsAfterMs?: number;
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

/** What one `serve` started, each set as soon as it runs, so that a failed start closes exactly what is running. */
interface Parts {
  receiver?: Receiver;
  /** The receiver's planner-statistics step (a receiver-only instance has no pass to end with it). */
  statistics?: StatisticsAfterDeliveries;
  ops?: OpsServer;
  dataChecks?: DataCheckWatch;
  retention?: Retention;
  pass?: SyncPass;
  queue?: Queue;
  scheduler?: Scheduler;
}

/** What every part of the daemon is given: the options resolved once. */
interface Context {
  options: ServeOptions;
  store: Store;
  metrics: Metrics;
  clock: Clock;
  customers: ReadonlyArray<CustomerConfig>;
  streams: ReadonlyArray<AnyStream>;
}

export async function serve(options: ServeOptions): Promise<void> {
  const { config, logger, signal } = options;
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
  const context: Context = { options, store, customers, streams, clock: options.clock ?? systemClock, metrics: options.metrics ?? createMetrics({ perCustomer: config.metrics.perCustomer }) };
  const parts: Parts = {};
  const state = { stopping: false };
  try {
    if (webhooksOn) await startWebhooks(context, parts);
    parts.ops = await startOps(context, parts, state);
    parts.dataChecks = watchData({ store, streams, customers, settings: config.sync, clock: context.clock, logger: logger.child({ component: 'data-checks' }), metrics: context.metrics });
    if (scheduleOn) await startSchedule(context, parts);
    logger.info({ ops: parts.ops.url, webhook: parts.receiver?.url, cron: scheduleOn ? config.sync.cron : undefined }, 'serve: running');
    options.onReady?.({ opsUrl: parts.ops.url, webhookUrl: parts.receiver?.url, scheduler: parts.scheduler });

    await aborted(signal);
    state.stopping = true;
    logger.info('serve: stopping: no new deliveries or runs; finishing the deliveries and the page in flight');
    await Promise.all([parts.receiver?.close(), parts.scheduler?.done]);
    await parts.queue?.stop();
    logger.info('serve: stopped cleanly');
  } finally {
    state.stopping = true;
    await closeAll(parts, options.store ? undefined : store);
  }
}

const aborted = (signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });

/**
 * The webhook receiver, unless no customer could be received from (said in the log), into `parts`, with the
 * planner-statistics step after its deliveries: the passes end with the step too, but a receiver-only instance has
 * none, and a schedule's passes may be hours apart.
 */
async function startWebhooks({ options, store, metrics, clock, customers, streams }: Context, parts: Parts): Promise<void> {
  const { config, logger } = options;
  if (!receiverConfigured({ customers, webhook: config.webhook })) {
    logger.info(
      'webhook receiver off: no customer has a webhook secret or custom header (set WEBHOOK_SECRET to receive deliveries; serve runs sync and /healthz, /metrics)',
    );
    return;
  }
  await reconcileAggregates({ store, config, streams, customers, logger });
  const receiverLogger = logger.child({ component: 'webhooks' });
  const statistics = new StatisticsAfterDeliveries({
    update: () => updatePlannerStatisticsAfterRun(store, receiverLogger, 'the deliveries'),
    ...(options.statisticsAfterMs !== undefined && { intervalMs: options.statisticsAfterMs }),
  });
  parts.statistics = statistics;
  parts.receiver = await startReceiver({
    ...receiverOptions({ customers, webhook: config.webhook }),
    deliveries: deliveryRulesFor(streams),
    store,
    clock,
    logger: receiverLogger,
    onOutcome: (outcome) => {
      if (outcome.reason === 'stored') statistics.stored();
      webhookMetric(metrics, outcome);
    },
  });
}

/** /healthz and /metrics; health turns 503 once `state.stopping`. */
function startOps({ options, store, metrics, clock, customers }: Context, parts: Parts, state: { stopping: boolean }): Promise<OpsServer> {
  const { config, logger } = options;
  return startOpsServer({
    host: config.serve.host,
    port: config.serve.port,
    store,
    metrics,
    clock,
    logger: logger.child({ component: 'ops' }),
    health: () => ({
      customerIds: customers.map((c) => c.id),
      maxLagSeconds: options.maxLagSeconds,
      stopping: state.stopping,
      dataWarnings: parts.dataChecks?.latest ? dataCheckLines(parts.dataChecks.latest) : [],
    }),
  });
}

/** The sync schedule: retention, the pass, the queue (Postgres) and the scheduler that ticks them, into `parts`. */
async function startSchedule({ options, store, metrics, clock, customers, streams }: Context, parts: Parts): Promise<void> {
  const { config, logger, signal } = options;
  parts.retention = startRetention({ store, retentionMs: config.sync.runHistoryRetentionMs, readingsRetentionMs: config.sync.readingsRetentionMs, clock, logger: logger.child({ component: 'retention' }) });
  const pass = createSyncPass({ config, store, logger: logger.child({ component: 'sync' }), metrics, clock, customers, streams, baseUrl: options.baseUrl });
  parts.pass = pass;
  // Postgres: runs are jobs of a queue every instance works (src/app/queue.ts); a tick only adds the interval's
  // jobs. SQLite (one machine): the tick runs the pass in this process.
  if (store.dialect === 'postgres') {
    parts.queue = await startQueue({
      databaseUrl: config.database.url,
      pass,
      customerIds: customers.map((c) => c.id),
      streams,
      concurrency: config.sync.queueConcurrency,
      logger,
      ...(options.queue ?? {}),
    });
  }
  const live = parts.queue;
  const run = live ? async () => void (await live.tick()) : pass.run.bind(pass);
  parts.scheduler = startScheduler({
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

/** Closes whatever was started, in reverse order; on a startup failure too (a port in use). `store` when it is ours. */
async function closeAll(parts: Parts, store: Store | undefined): Promise<void> {
  await parts.receiver?.close().catch(() => {});
  // A step analyzing on a silent database must not hold the stop (the next run's step does it).
  if (parts.statistics) await settlesWithin(parts.statistics.close(), CLOSE_LIMIT_MS);
  parts.dataChecks?.stop();
  // A clean-up of run history waiting on a silent database must not hold the stop (it deletes again next time).
  if (parts.retention) await settlesWithin(parts.retention.stop(), CLOSE_LIMIT_MS);
  await parts.queue?.stop().catch(() => {});
  await parts.pass?.close().catch(() => {});
  await parts.ops?.close().catch(() => {});
  if (store) await settlesWithin(store.close(), CLOSE_LIMIT_MS);
}
