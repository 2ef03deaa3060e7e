import { loadDocument } from '../api/documents.ts';
import { systemClock, type Clock } from '../clock.ts';
import type { Config, CustomerConfig } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { Metrics } from '../metrics.ts';
import type { Store } from '../store/types.ts';
import { runSync, type ProgressEvent, type StreamOutcome, type SyncReport } from '../sync/engine.ts';
import type { AnyStream } from '../sync/stream.ts';
import { toIsoUtc } from '../time.ts';
import { reconcileAfterRun, reconcileAggregates } from './aggregates.ts';
import { updatePlannerStatisticsAfterRun } from './planner-statistics.ts';
import { Backoff, PARKED_AFTER_FAILURES } from './backoff.ts';
import { closeClients, createSyncTargets } from './clients.ts';
import { problemLines, summaryLine } from './summary.ts';
import { engineSettings } from './engine-settings.ts';
import { createOffer } from './offered-streams.ts';
import { packageLabel } from './package-path.ts';

/**
 * The repeated sync pass of the daemons (`serve` and `schedule`): every stream for every customer through the sync
 * engine, with metrics when the daemon exposes them.
 *
 * Unlike `sync`, the API clients live as long as the daemon, so a token is reused across passes until it nears
 * expiry (a 900 s token: about 6 auth calls an hour per key) instead of authenticating on every tick; their counters
 * (auth calls, refreshes, retries) feed /metrics.
 */

export interface SyncPassOptions {
  config: Config;
  store: Store;
  logger: Logger;
  /** Where `serve` counts pages, runs and API calls for /metrics; `schedule` exposes none. */
  metrics?: Metrics;
  clock?: Clock;
  customers: ReadonlyArray<CustomerConfig>;
  streams: ReadonlyArray<AnyStream>;
  /** Overrides config.apiBaseUrl (tests point it at a sandbox). */
  baseUrl?: string;
}

export interface SyncPass {
  /**
   * Every stream of every customer, except those backing off after failures (src/app/backoff.ts): the in-process
   * schedule of `schedule`, and of `serve` on SQLite.
   */
  run(signal: AbortSignal): Promise<SyncReport>;
  /** One stream of one customer: a job of the Postgres queue (src/app/queue.ts), which does its own back-off. */
  runOne(signal: AbortSignal, customerId: string, stream: string): Promise<SyncReport>;
  /** The last finished pass, for /healthz. */
  readonly last: { finishedAt: number; report: SyncReport } | undefined;
  close(): Promise<void>;
}

/** The error's code (TRANSPORT, AUTH, ...) or class name: the `kind` label of failure metrics. */
export function errorKind(error: unknown): string {
  if (error && typeof error === 'object') {
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && /^[A-Z_]+$/.test(code)) return code;
    return (error as Error).name ?? 'Error';
  }
  return 'unknown';
}

type Target = ReturnType<typeof createSyncTargets>[number];

export function createSyncPass(options: SyncPassOptions): SyncPass {
  const { metrics, logger } = options;
  const clock = options.clock ?? systemClock;
  const targets = createSyncTargets(options.config, options.customers, { clock, logger, baseUrl: options.baseUrl });
  const unobserve = metrics ? targets.map((t) => metrics.observeApiStats(() => t.client.stats)) : [];
  const backoff = new Backoff();
  const runs = new StreamRuns(options, clock);
  let last: SyncPass['last'];

  return {
    get last() {
      return last;
    },
    async run(signal) {
      const now = clock.now();
      const reports = [];
      for (const group of dueGroups(targets, options.streams, backoff, now)) reports.push(await runs.execute(signal, group.targets, group.streams));
      const report: SyncReport = {
        outcomes: reports.flatMap((r) => r.outcomes),
        startedAt: now,
        finishedAt: clock.now(),
      };
      recordBackoff(backoff, report, clock, logger);
      logger.info({ outcomes: report.outcomes.length }, summaryLine('scheduled sync', report));
      last = { finishedAt: clock.now(), report };
      return report;
    },
    async runOne(signal, customerId, stream) {
      const target = targets.find((t) => t.customerId === customerId);
      const definition = options.streams.find((s) => s.name === stream);
      if (!target || !definition) return { outcomes: [], startedAt: clock.now(), finishedAt: clock.now() };
      const report = await runs.execute(signal, [target], [definition]);
      last = { finishedAt: clock.now(), report };
      return report;
    },
    async close() {
      unobserve.forEach((stop) => stop());
      await closeClients(targets);
    },
  };
}

/** Customers whose due streams are the same run together; a stream backing off waits for its time. */
function dueGroups(targets: readonly Target[], streams: ReadonlyArray<AnyStream>, backoff: Backoff, now: number): Iterable<{ targets: Target[]; streams: AnyStream[] }> {
  const groups = new Map<string, { targets: Target[]; streams: AnyStream[] }>();
  for (const target of targets) {
    const due = streams.filter((s) => backoff.due(target.customerId, s.name, now));
    if (due.length === 0) continue;
    const id = due.map((s) => s.name).join('\u0000');
    const group = groups.get(id) ?? { targets: [], streams: due };
    group.targets.push(target);
    groups.set(id, group);
  }
  return groups.values();
}

/** The pass's outcomes into the back-off book; a stream parked after repeated failures is said once per failure. */
function recordBackoff(backoff: Backoff, report: SyncReport, clock: Clock, logger: Logger): void {
  for (const outcome of report.outcomes) {
    const entry = backoff.record(outcome.customerId, outcome.stateKey, outcome.status === 'failed', clock.now());
    if (entry && entry.failures >= PARKED_AFTER_FAILURES) {
      logger.warn(
        { customer: outcome.customerId, stream: outcome.stream, failures: entry.failures, until: toIsoUtc(entry.until) },
        `parked after ${entry.failures} failures in a row: the next attempt waits until ${toIsoUtc(entry.until)}`,
      );
    }
  }
}

/** Runs of the engine for the chosen targets and streams, reconciled before and after, counted in /metrics. */
class StreamRuns {
  /** Queue jobs run side by side: the gauge is on while any is. */
  private running = 0;
  // What the API offers, asked again now and then (a platform may add its floors query), each line said once.
  private readonly offer: ReturnType<typeof createOffer>;

  constructor(
    private readonly options: SyncPassOptions,
    private readonly clock: Clock,
  ) {
    this.offer = createOffer({ streams: options.streams, logger: options.logger, loadDocument, label: packageLabel, clock });
  }

  async execute(signal: AbortSignal, chosen: Target[], streams: ReadonlyArray<AnyStream>): Promise<SyncReport> {
    const { options, clock } = this;
    const { metrics, logger } = options;
    const progress = new PageCount(metrics);
    this.running += 1;
    metrics?.setSyncInProgress(true);
    // With all the configured streams, whichever run: the max hold is the customer's, not one stream's.
    const reconcile = (customers: ReadonlyArray<{ id: string }>) => reconcileAggregates({ store: options.store, config: options.config, streams: options.streams, customers, logger });
    try {
      await reconcile(chosen.map((t) => ({ id: t.customerId })));
      const report = await runSync({
        store: options.store,
        clock,
        logger,
        settings: engineSettings(options.config),
        streams,
        targets: chosen,
        loadDocument,
        offer: this.offer,
        signal,
        onProgress: (event) => progress.onProgress(event),
      });
      if (!signal.aborted) {
        await reconcileAfterRun(report, reconcile, logger);
        await updatePlannerStatisticsAfterRun(options.store, logger);
      }
      for (const outcome of report.outcomes) recordOutcome(metrics, outcome, progress.counted(outcome.customerId, outcome.stateKey), clock.now());
      for (const line of problemLines(report.outcomes)) logger.warn(line.trim());
      return report;
    } finally {
      this.running -= 1;
      metrics?.setSyncInProgress(this.running > 0);
    }
  }
}

/** Pages are counted as they commit (progress events carry running totals), so /metrics moves during long runs. */
class PageCount {
  private readonly seen = new Map<string, { pages: number; records: number }>();

  constructor(private readonly metrics: Metrics | undefined) {}

  onProgress(event: ProgressEvent): void {
    const key = PageCount.key(event.customerId, event.stateKey);
    const before = this.seen.get(key) ?? { pages: 0, records: 0 };
    const pages = event.pages - before.pages;
    if (pages > 0) {
      this.metrics?.recordPage(event.customerId, event.stateKey, event.records - before.records, pages);
      this.seen.set(key, { pages: event.pages, records: event.records });
    }
  }

  /** What progress events counted of a stream's run. */
  counted(customerId: string, stateKey: string): { pages: number; records: number } | undefined {
    return this.seen.get(PageCount.key(customerId, stateKey));
  }

  private static key(customerId: string, stateKey: string): string {
    return `${customerId}\u0000${stateKey}`;
  }
}

/** A stream's run in /metrics, besides what its progress events already counted. */
function recordOutcome(metrics: Metrics | undefined, outcome: StreamOutcome, counted = { pages: 0, records: 0 }, now: number): void {
  metrics?.recordRun({
    customerId: outcome.customerId,
    stream: outcome.stateKey,
    status: outcome.status,
    // Whatever progress events did not already count.
    pages: outcome.pages - counted.pages,
    records: outcome.records - counted.records,
    rejected: outcome.rejected,
    errorKind: outcome.status === 'failed' ? errorKind(outcome.error) : undefined,
    durationSeconds: outcome.durationMs === undefined ? undefined : outcome.durationMs / 1000,
    finishedAt: now / 1000,
  });
}
