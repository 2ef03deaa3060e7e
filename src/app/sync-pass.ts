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

export function createSyncPass(options: SyncPassOptions): SyncPass {
  const { metrics, logger } = options;
  const clock = options.clock ?? systemClock;
  const targets = createSyncTargets(options.config, options.customers, { clock, logger, baseUrl: options.baseUrl });
  const unobserve = metrics ? targets.map((t) => metrics.observeApiStats(() => t.client.stats)) : [];
  const backoff = new Backoff();
  // What the API offers, asked again now and then (a platform may add its floors query), each line said once.
  const offer = createOffer({ streams: options.streams, logger, loadDocument, label: packageLabel, clock });
  // Queue jobs run side by side: the gauge is on while any is.
  let running = 0;
  let last: SyncPass['last'];

  return {
    get last() {
      return last;
    },
    async run(signal) {
      const now = clock.now();
      // Customers whose due streams are the same run together; a stream backing off waits for its time.
      const groups = new Map<string, { targets: typeof targets; streams: AnyStream[] }>();
      for (const target of targets) {
        const due = options.streams.filter((s) => backoff.due(target.customerId, s.name, now));
        if (due.length === 0) continue;
        const id = due.map((s) => s.name).join('\u0000');
        const group = groups.get(id) ?? { targets: [], streams: due };
        group.targets.push(target);
        groups.set(id, group);
      }
      const reports = [];
      for (const group of groups.values()) reports.push(await execute(signal, group.targets, group.streams));
      const report: SyncReport = {
        outcomes: reports.flatMap((r) => r.outcomes),
        startedAt: now,
        finishedAt: clock.now(),
      };
      for (const outcome of report.outcomes) {
        const entry = backoff.record(outcome.customerId, outcome.stateKey, outcome.status === 'failed', clock.now());
        if (entry && entry.failures >= PARKED_AFTER_FAILURES) {
          logger.warn(
            { customer: outcome.customerId, stream: outcome.stream, failures: entry.failures, until: toIsoUtc(entry.until) },
            `parked after ${entry.failures} failures in a row: the next attempt waits until ${toIsoUtc(entry.until)}`,
          );
        }
      }
      logger.info({ outcomes: report.outcomes.length }, summaryLine('scheduled sync', report));
      last = { finishedAt: clock.now(), report };
      return report;
    },
    async runOne(signal, customerId, stream) {
      const target = targets.find((t) => t.customerId === customerId);
      const definition = options.streams.find((s) => s.name === stream);
      if (!target || !definition) return { outcomes: [], startedAt: clock.now(), finishedAt: clock.now() };
      const report = await execute(signal, [target], [definition]);
      last = { finishedAt: clock.now(), report };
      return report;
    },
    async close() {
      unobserve.forEach((stop) => stop());
      await closeClients(targets);
    },
  };

  async function execute(signal: AbortSignal, chosen: typeof targets, streams: ReadonlyArray<AnyStream>): Promise<SyncReport> {
    // Pages are counted as they commit (progress events carry running totals), so /metrics moves during long runs.
    const seen = new Map<string, { pages: number; records: number }>();
    const key = (customerId: string, stateKey: string) => `${customerId}\u0000${stateKey}`;
    const onProgress = (event: ProgressEvent) => {
      const before = seen.get(key(event.customerId, event.stateKey)) ?? { pages: 0, records: 0 };
      const pages = event.pages - before.pages;
      if (pages > 0) {
        metrics?.recordPage(event.customerId, event.stateKey, event.records - before.records, pages);
        seen.set(key(event.customerId, event.stateKey), { pages: event.pages, records: event.records });
      }
    };
    running += 1;
    metrics?.setSyncInProgress(true);
    // With all the configured streams, whichever run: the max hold is the customer's, not one stream's.
    const reconcile = () => reconcileAggregates({ store: options.store, config: options.config, streams: options.streams, customers: chosen.map((t) => ({ id: t.customerId })), logger });
    try {
      await reconcile();
      const report = await runSync({
        store: options.store,
        clock,
        logger,
        settings: engineSettings(options.config),
        streams,
        targets: chosen,
        loadDocument,
        offer,
        signal,
        onProgress,
      });
      if (!signal.aborted) await reconcileAfterRun(report, reconcile, logger);
      for (const outcome of report.outcomes) recordOutcome(metrics, outcome, seen.get(key(outcome.customerId, outcome.stateKey)), clock.now());
      for (const line of problemLines(report.outcomes)) logger.warn(line.trim());
      return report;
    } finally {
      running -= 1;
      metrics?.setSyncInProgress(running > 0);
    }
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
