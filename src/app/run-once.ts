import { loadDocument } from '../api/documents.ts';
import { systemClock, type Clock } from '../clock.ts';
import type { Config, CustomerConfig } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { Store } from '../store/types.ts';
import { runSync, type ProgressEvent, type RunRequest, type SyncReport } from '../sync/engine.ts';
import type { AnyStream } from '../sync/stream.ts';
import { reconcileAfterRun, reconcileAggregates } from './aggregates.ts';
import { updatePlannerStatisticsAfterRun } from './planner-statistics.ts';
import { closeClients, createSyncTargets } from './clients.ts';
import { engineSettings } from './engine-settings.ts';
import { createOffer } from './offered-streams.ts';
import { packageLabel } from './package-path.ts';

export interface RunOnceOptions {
  config: Config;
  store: Store;
  logger: Logger;
  customers: ReadonlyArray<CustomerConfig>;
  streams: ReadonlyArray<AnyStream>;
  request?: RunRequest;
  signal?: AbortSignal;
  clock?: Clock;
  /** Overrides config.apiBaseUrl (the demo points at its in-process sandbox). */
  baseUrl?: string;
  onProgress?(event: ProgressEvent): void;
}

/** One run of `sync`, `backfill` or the demo: builds clients, runs the engine once, closes the clients. */
export async function runOnce(options: RunOnceOptions): Promise<SyncReport> {
  const clock = options.clock ?? systemClock;
  const targets = createSyncTargets(options.config, options.customers, { clock, logger: options.logger, baseUrl: options.baseUrl });
  // The aggregates of a building configured otherwise than they were computed are rebuilt before the run, and those
  // of a building the run lists for the first time after it; what pages left stale is refreshed before and after
  // (docs/reporting.md, "When the aggregates are current").
  const reconcile = (customers: ReadonlyArray<{ id: string }>) => reconcileAggregates({ store: options.store, config: options.config, streams: options.streams, customers, logger: options.logger });
  try {
    await reconcile(options.customers);
    const report = await runSync({
      store: options.store,
      clock,
      logger: options.logger,
      settings: engineSettings(options.config),
      streams: options.streams,
      targets,
      loadDocument,
      // What the API lacks of the streams declared ifOffered (an assumed floors query) is skipped, said once.
      offer: createOffer({ streams: options.streams, logger: options.logger, loadDocument, label: packageLabel }),
      request: options.request,
      signal: options.signal,
      onProgress: options.onProgress,
    });
    if (!options.signal?.aborted) {
      await reconcileAfterRun(report, reconcile, options.logger);
      await updatePlannerStatisticsAfterRun(options.store, options.logger);
    }
    return report;
  } finally {
    await closeClients(targets);
  }
}
