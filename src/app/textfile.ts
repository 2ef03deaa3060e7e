import { randomBytes } from 'node:crypto';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import type { Store } from '../store/types.ts';
import { syncHealthFigures } from '../store/status-queries.ts';
import type { SyncReport } from '../sync/engine.ts';
import { errorKind } from './sync-pass.ts';

/**
 * A cron `sync` or `backfill` has no /metrics to scrape: with METRICS_TEXTFILE it leaves its figures for
 * node_exporter's textfile collector instead. The run's counts, durations and failures, and from the database each
 * stream's lag and last success (so a failed run still reports how old the last good one is). Written to a temporary
 * file in the same directory and renamed over the old one, so the collector never reads half a file.
 *
 * The metrics module is loaded here, only when METRICS_TEXTFILE asks for the file: prom-client requires
 * `@opentelemetry/api` (for exemplars), and a one-shot command with OTEL_* unset loads nothing of OpenTelemetry.
 */
export async function writeMetricsTextfile(path: string, report: SyncReport, store: Store): Promise<void> {
  const { createMetrics } = await import('../metrics.ts');
  const metrics = createMetrics({ processMetrics: false });
  for (const outcome of report.outcomes) {
    metrics.recordRun({
      customerId: outcome.customerId,
      stream: outcome.stream,
      status: outcome.status,
      pages: outcome.pages,
      records: outcome.records,
      rejected: outcome.rejected,
      errorKind: outcome.status === 'failed' ? errorKind(outcome.error) : undefined,
      durationSeconds: outcome.durationMs === undefined ? undefined : outcome.durationMs / 1000,
    });
  }
  metrics.observeSyncHealth(await syncHealthFigures(store));
  const temporary = `${path}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    writeFileSync(temporary, await metrics.text(), { mode: 0o644 });
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}
