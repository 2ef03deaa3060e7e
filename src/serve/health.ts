import { globalSecrets } from '../logger.ts';
import type { Store } from '../store/types.ts';
import { syncHealthRows } from '../store/status-queries.ts';
import { toIsoUtc } from '../time.ts';

/**
 * `/healthz`: the database answers and the last runs are healthy. Read from the `sync_health` view, so every
 * instance behind a load balancer reports the same truth, whichever of them ran the streams.
 */

export interface StreamHealth {
  customerId: string;
  stream: string;
  watermark: string | null;
  lagSeconds: number | null;
  lastRunStatus: string | null;
  lastRunStartedAt: string | null;
  lastRunFinishedAt: string | null;
  lastRunError: string | null;
  /** Records of the last run that broke their declared types and were quarantined. */
  lastRunRejected: number;
  lastSuccessAt: string | null;
  healthy: boolean;
  /** Healthy, but the last run quarantined records: data the platform sent is not in the tables. */
  degraded: boolean;
}

export interface HealthReport {
  /** `degraded`: every stream runs, but some records were quarantined (HTTP 200); `unhealthy`: HTTP 503. */
  status: 'ok' | 'degraded' | 'unhealthy' | 'stopping';
  checkedAt: string;
  database: { ok: boolean; error?: string };
  streams: StreamHealth[];
  /** One line per reason the status is not ok. */
  problems: string[];
  /** One line per reason the status is degraded (quarantined records), when not worse. */
  warnings: string[];
}

export interface HealthOptions {
  /** Only these customers count (the configured ones); others left in the database from an old config do not. */
  customerIds?: readonly string[];
  /** A stream whose watermark is further behind now than this is unhealthy. Default: lag is reported, not judged. */
  maxLagSeconds?: number;
  /** The process is shutting down: report 503 so a load balancer stops sending work here. */
  stopping?: boolean;
  /** How long the database may take to answer. Default 2 s. */
  timeoutMs?: number;
  /** Data that went missing without an error (src/app/data-checks.ts): reported, and the status is degraded. */
  dataWarnings?: readonly string[];
  now: number;
}

type Row = Record<string, unknown>;

const str = (v: unknown) => (v === null || v === undefined ? null : String(v));
const ts = (v: unknown) => (v === null || v === undefined ? null : toIsoUtc(v as string));

/** Reads the incremental (not `#backfill`) rows of `sync_health`. */
export async function readSyncHealth(store: Store, timeoutMs = 2000): Promise<Row[]> {
  // On Postgres a query that outlasts the timeout is cancelled on the server, not left running behind the answer.
  const rows = await syncHealthRows(store, timeoutMs);
  // A fan-out stream is judged by its stream's row (its run): a successful run read every parent in force up to its
  // end, and a partition of a parent no longer listed keeps its old watermark for ever.
  return rows.filter((r) => !String(r.stream).includes('#') && !String(r.stream).includes('/'));
}

/** Pure judgement of `sync_health` rows: a stream is unhealthy when its last run failed or it lags too far. */
export function evaluateHealth(rows: Row[], options: HealthOptions): Omit<HealthReport, 'database' | 'checkedAt'> {
  const wanted = options.customerIds && options.customerIds.length > 0 ? new Set(options.customerIds) : undefined;
  const problems: string[] = [];
  const warnings: string[] = [];
  const streams = rows
    .filter((r) => !wanted || wanted.has(String(r.customer_id)))
    .map((r): StreamHealth => {
      const lag = r.lag_seconds === null || r.lag_seconds === undefined ? null : Number(r.lag_seconds);
      const entry: StreamHealth = {
        customerId: String(r.customer_id),
        stream: String(r.stream),
        watermark: ts(r.watermark),
        lagSeconds: lag,
        lastRunStatus: str(r.last_run_status),
        lastRunStartedAt: ts(r.last_run_started_at),
        lastRunFinishedAt: ts(r.last_run_finished_at),
        lastRunError: r.last_run_error === null || r.last_run_error === undefined ? null : globalSecrets.scrub(String(r.last_run_error)),
        lastRunRejected: Number(r.last_run_rejected ?? 0),
        lastSuccessAt: ts(r.last_success_at),
        healthy: true,
        degraded: false,
      };
      if (entry.lastRunRejected > 0) {
        entry.degraded = true;
        warnings.push(
          `${entry.customerId} ${entry.stream}: the last run quarantined ${entry.lastRunRejected} record(s) that broke their declared types (table quarantined_records)`,
        );
      }
      if (entry.lastRunStatus === 'failed') {
        entry.healthy = false;
        problems.push(`${entry.customerId} ${entry.stream}: last run failed: ${entry.lastRunError ?? 'no error recorded'}`);
      }
      if (options.maxLagSeconds !== undefined && lag !== null && lag > options.maxLagSeconds) {
        entry.healthy = false;
        problems.push(`${entry.customerId} ${entry.stream}: lag ${Math.round(lag)} s exceeds ${options.maxLagSeconds} s`);
      }
      return entry;
    })
    .sort((a, b) => (a.customerId === b.customerId ? (a.stream < b.stream ? -1 : 1) : a.customerId < b.customerId ? -1 : 1));
  for (const line of options.dataWarnings ?? []) warnings.push(line.trim());
  if (options.stopping) problems.unshift('shutting down');
  const status = options.stopping ? 'stopping' : problems.length ? 'unhealthy' : warnings.length ? 'degraded' : 'ok';
  return { status, streams, problems, warnings };
}

export async function checkHealth(store: Store, options: HealthOptions): Promise<HealthReport> {
  const checkedAt = toIsoUtc(options.now);
  let rows: Row[];
  try {
    rows = await readSyncHealth(store, options.timeoutMs);
  } catch (error) {
    const message = globalSecrets.scrub((error as Error)?.message ?? String(error));
    return {
      status: options.stopping ? 'stopping' : 'unhealthy',
      checkedAt,
      database: { ok: false, error: message },
      streams: [],
      problems: [`database: ${message}`],
      warnings: [],
    };
  }
  return { checkedAt, database: { ok: true }, ...evaluateHealth(rows, options) };
}
