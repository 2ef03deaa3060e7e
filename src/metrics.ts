import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Prometheus metrics for `serve` (and anything else that wants to count). Each `createMetrics()` owns its own
 * Registry, never prom-client's global one, so tests and several embedded instances do not share counters.
 *
 * Metric names use the `occupancy_sync_` prefix. Labels are low-cardinality: customer id, stream, status, reason.
 *
 * @example
 * const metrics = createMetrics();
 * metrics.recordRun({ customerId: 'c1', stream: 'occupancy', status: 'succeeded', pages: 3, records: 2500 });
 * metrics.webhookOutcome('refused', 'no_match');
 * res.end(await metrics.text());
 */

/** How a webhook delivery ended. `duplicate` is accepted too (the platform retried a delivery we already had). */
export type DeliveryResult = 'accepted' | 'duplicate' | 'refused';

/** The cumulative counters of an API client that /metrics shows (a subset of the client's `stats`). Read at scrape time. */
export interface ClientCounters {
  authCalls?: number;
  tokenRefreshes?: number;
  retries?: number;
}

export interface RunObservation {
  customerId: string;
  stream: string;
  status: 'succeeded' | 'failed' | 'interrupted' | 'locked' | string;
  pages?: number;
  records?: number;
  /** Records that broke their declared types and were quarantined. */
  rejected?: number;
  /** Error class or code when the run failed (e.g. TRANSPORT, AUTH). */
  errorKind?: string;
  /** How long the run took. */
  durationSeconds?: number;
  /** When it ended, Unix seconds (a success sets the stream's last-success time). */
  finishedAt?: number;
}

export interface Metrics {
  readonly registry: Registry;
  /** One finished run (adds its pages and records, counts a failure when status is failed). */
  recordRun(run: RunObservation): void;
  /** Committed page(s) (default one), for callers that count pages as they go instead of per run. */
  recordPage(customerId: string, stream: string, records: number, pages?: number): void;
  recordFailure(customerId: string, stream: string, kind: string): void;
  recordRetry(count?: number): void;
  recordAuthCall(count?: number): void;
  recordTokenRefresh(count?: number): void;
  /**
   * Adds a source of cumulative API client stats, read at every scrape and summed with the direct counts above.
   * Returns a function that removes the source (its last values are kept, so counters never go down).
   */
  observeApiStats(source: () => ClientCounters): () => void;
  webhookOutcome(outcome: DeliveryResult, reason?: string): void;
  /** Seconds the stream's watermark is behind now. */
  setSyncLag(customerId: string, stream: string, seconds: number): void;
  /** Lag and last success of every incremental stream from rows of the `sync_health` view. */
  observeSyncHealth(rows: ReadonlyArray<Record<string, unknown>>): void;
  /** The completeness alarm and the webhook reconciliation (src/app/data-checks.ts), replacing the previous ones. */
  observeDataChecks(checks: DataCheckFigures): void;
  /** 1 while a scheduled sync pass is running, else 0. */
  setSyncInProgress(running: boolean): void;
  /** Prometheus text exposition format. */
  text(): Promise<string>;
  readonly contentType: string;
}

/** What /metrics shows of the data checks (src/app/data-checks.ts). */
export interface DataCheckFigures {
  completeness: ReadonlyArray<{ customerId: string; stream: string; status: string; ratio: number | null }>;
  reconciliation: ReadonlyArray<{ customerId: string; missedDeliveries: number; unconfirmedDeliveries: number }>;
}

export interface MetricsOptions {
  /** Adds prom-client's process metrics (CPU, memory, event loop lag, GC) under their standard names. Default true. */
  processMetrics?: boolean;
  /**
   * A `customer` label on the per-stream families (METRICS_PER_CUSTOMER). Default false: series per stream only, so
   * their number does not grow with the customers; the lag and the last success are then the worst customer's.
   */
  perCustomer?: boolean;
}

/** Run durations, from a quick incremental run to a long backfill window. */
const DURATION_BUCKETS = [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

const PREFIX = 'occupancy_sync_';

/**
 * State keys that are no stream of their own in sync_health: backfills (`occupancy#backfill`), and a fan-out stream's
 * partitions (`occupancy/<parent>`): one series per floor space would grow with the portfolio, and a removed parent's
 * stays behind for ever; the stream's own row has its last success.
 */
const notAStream = (stateKey: string): boolean => stateKey.includes('#') || stateKey.includes('/');

export function createMetrics(options: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  // Standard names (process_cpu_seconds_total, nodejs_heap_size_used_bytes, ...), as dashboards expect them.
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry });
  const perCustomer = options.perCustomer ?? false;
  const who = (perCustomer ? ['customer', 'stream'] : ['stream']) as ['stream'];
  const of = (customerId: string, stream: string) => (perCustomer ? { customer: customerId, stream } : { stream }) as { stream: string };

  const runs = new Counter({
    name: `${PREFIX}runs_total`,
    help: 'Finished sync runs by customer, stream and status (succeeded, failed, interrupted, locked).',
    labelNames: [...who, 'status'] as ['stream', 'status'],
    registers: [registry],
  });
  const pages = new Counter({
    name: `${PREFIX}pages_total`,
    help: 'Pages committed to the database.',
    labelNames: who,
    registers: [registry],
  });
  const records = new Counter({
    name: `${PREFIX}records_total`,
    help: 'Records upserted by sync runs.',
    labelNames: who,
    registers: [registry],
  });
  const rejected = new Counter({
    name: `${PREFIX}records_rejected_total`,
    help: 'API records that broke their declared types and were quarantined (table quarantined_records) instead of stored.',
    labelNames: who,
    registers: [registry],
  });
  const failures = new Counter({
    name: `${PREFIX}failures_total`,
    help: 'Failed sync runs by customer, stream and error kind.',
    labelNames: [...who, 'kind'] as ['stream', 'kind'],
    registers: [registry],
  });
  // Per customer internally (bounded by the customers configured), exported per stream unless perCustomer.
  const lags = new Map<string, Map<string, number>>();
  const successes = new Map<string, Map<string, number>>();
  const remember = (book: Map<string, Map<string, number>>, customerId: string, stream: string, value: number) => {
    const byCustomer = book.get(stream) ?? new Map<string, number>();
    byCustomer.set(customerId, value);
    book.set(stream, byCustomer);
  };
  const exportBook = (gauge: Gauge<'stream'>, book: Map<string, Map<string, number>>, worst: (values: number[]) => number) => {
    gauge.reset();
    for (const [stream, byCustomer] of book) {
      if (perCustomer) for (const [customerId, value] of byCustomer) gauge.set(of(customerId, stream), value);
      else gauge.set({ stream }, worst([...byCustomer.values()]));
    }
  };
  new Gauge({
    name: `${PREFIX}lag_seconds`,
    help: 'Seconds the stream watermark is behind now (what is not yet synced); per stream, the customer furthest behind.',
    labelNames: who,
    registers: [registry],
    collect() {
      exportBook(this, lags, (values) => Math.max(...values));
    },
  });
  new Gauge({
    name: `${PREFIX}last_success_timestamp_seconds`,
    help: 'When the stream last finished a successful run (Unix seconds); per stream, the customer whose success is oldest.',
    labelNames: who,
    registers: [registry],
    collect() {
      exportBook(this, successes, (values) => Math.min(...values));
    },
  });
  let checks: DataCheckFigures = { completeness: [], reconciliation: [] };
  new Gauge({
    name: `${PREFIX}completeness_ratio`,
    help: "Records in the last window before the watermark against the same window a day or a week earlier (the lowest customer's, per stream).",
    labelNames: who,
    registers: [registry],
    collect() {
      this.reset();
      const lowest = new Map<string, number>();
      for (const f of checks.completeness) {
        if (f.ratio === null) continue;
        if (perCustomer) this.set(of(f.customerId, f.stream), f.ratio);
        else lowest.set(f.stream, Math.min(f.ratio, lowest.get(f.stream) ?? Infinity));
      }
      for (const [stream, ratio] of lowest) this.set({ stream }, ratio);
    },
  });
  new Gauge({
    name: `${PREFIX}streams_incomplete`,
    help: 'Streams whose last window holds none, or far fewer, records than a day or a week earlier (COMPLETENESS_MIN_SHARE).',
    labelNames: who,
    registers: [registry],
    collect() {
      this.reset();
      for (const f of checks.completeness) {
        const flagged = f.status === 'low' || f.status === 'empty' ? 1 : 0;
        if (perCustomer) this.set(of(f.customerId, f.stream), flagged);
        else this.inc({ stream: f.stream }, flagged);
      }
    },
  });
  const reconciliationGauge = (name: string, help: string, pick: (r: DataCheckFigures['reconciliation'][number]) => number) =>
    new Gauge({
      name: `${PREFIX}${name}`,
      help,
      labelNames: perCustomer ? ['customer'] : [],
      registers: [registry],
      collect() {
        this.reset();
        if (perCustomer) for (const r of checks.reconciliation) this.set({ customer: r.customerId }, pick(r));
        else this.set(checks.reconciliation.reduce((n, r) => n + pick(r), 0));
      },
    });
  reconciliationGauge('webhook_missed_deliveries', 'Readings of today and yesterday that polling found but no webhook delivery brought (customers with webhooks).', (r) => r.missedDeliveries);
  reconciliationGauge('webhook_unconfirmed_deliveries', 'Readings of today and yesterday that a delivery brought and polling never found, before the watermark.', (r) => r.unconfirmedDeliveries);
  const durations = new Histogram({
    name: `${PREFIX}run_duration_seconds`,
    help: 'How long sync runs took, by stream and status.',
    labelNames: ['stream', 'status'] as const,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  const inProgress = new Gauge({
    name: `${PREFIX}sync_in_progress`,
    help: '1 while a scheduled sync pass is running.',
    registers: [registry],
  });
  const deliveries = new Counter({
    name: `${PREFIX}webhook_deliveries_total`,
    help: 'Webhook deliveries by outcome (accepted, duplicate, refused) and refusal reason.',
    labelNames: ['outcome', 'reason'] as const,
    registers: [registry],
  });

  // API counters combine direct increments with cumulative stats read from client objects at scrape time.
  const direct = { authCalls: 0, tokenRefreshes: 0, retries: 0 };
  const retired = { authCalls: 0, tokenRefreshes: 0, retries: 0 };
  const sources = new Set<() => ClientCounters>();
  const total = (key: keyof typeof direct): number => {
    let sum = direct[key] + retired[key];
    for (const source of sources) sum += source()[key] ?? 0;
    return sum;
  };
  const apiCounter = (name: string, help: string, key: keyof typeof direct) =>
    new Counter({
      name: `${PREFIX}${name}`,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(total(key));
      },
    });
  apiCounter('api_retries_total', 'Retried API requests (transport errors, 429, 5xx).', 'retries');
  apiCounter('api_auth_calls_total', 'Authentication calls made to the platform.', 'authCalls');
  apiCounter('api_token_refreshes_total', 'Tokens refreshed before expiry or after a 401.', 'tokenRefreshes');

  const positive = (n: number | undefined) => (n && Number.isFinite(n) && n > 0 ? n : 0);

  return {
    registry,
    contentType: registry.contentType,
    recordRun(run) {
      const labels = of(run.customerId, run.stream);
      runs.inc({ ...labels, status: run.status });
      pages.inc(labels, positive(run.pages));
      records.inc(labels, positive(run.records));
      rejected.inc(labels, positive(run.rejected));
      if (run.status === 'failed') failures.inc({ ...labels, kind: run.errorKind ?? 'unknown' });
      if (run.durationSeconds !== undefined && run.status !== 'locked') durations.observe({ stream: run.stream, status: run.status }, run.durationSeconds);
      if (run.status === 'succeeded' && run.finishedAt !== undefined) remember(successes, run.customerId, run.stream, run.finishedAt);
    },
    recordPage(customerId, stream, count, pageCount = 1) {
      pages.inc(of(customerId, stream), positive(pageCount));
      records.inc(of(customerId, stream), positive(count));
    },
    recordFailure(customerId, stream, kind) {
      failures.inc({ ...of(customerId, stream), kind });
    },
    recordRetry(count = 1) {
      direct.retries += positive(count);
    },
    recordAuthCall(count = 1) {
      direct.authCalls += positive(count);
    },
    recordTokenRefresh(count = 1) {
      direct.tokenRefreshes += positive(count);
    },
    observeApiStats(source) {
      sources.add(source);
      return () => {
        if (!sources.delete(source)) return;
        const last = source();
        retired.authCalls += last.authCalls ?? 0;
        retired.tokenRefreshes += last.tokenRefreshes ?? 0;
        retired.retries += last.retries ?? 0;
      };
    },
    webhookOutcome(outcome, reason) {
      deliveries.inc({ outcome, reason: outcome === 'refused' ? (reason ?? 'unknown') : '' });
    },
    setSyncLag(customerId, stream, seconds) {
      remember(lags, customerId, stream, Math.max(0, seconds));
    },
    observeDataChecks(figures) {
      checks = figures;
    },
    observeSyncHealth(rows) {
      for (const row of rows) {
        const customerId = String(row.customer_id);
        const stream = String(row.stream);
        if (notAStream(stream)) continue;
        if (row.lag_seconds !== null && row.lag_seconds !== undefined) remember(lags, customerId, stream, Math.max(0, Number(row.lag_seconds)));
        if (row.last_success_at) remember(successes, customerId, stream, Date.parse(String(row.last_success_at)) / 1000);
      }
    },
    setSyncInProgress(running) {
      inProgress.set(running ? 1 : 0);
    },
    text: () => registry.metrics(),
  };
}
