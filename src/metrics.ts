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

/** How a metric names whom it is about: customer and stream, or the stream only (MetricsOptions.perCustomer). */
class LabelScheme {
  readonly names: ['stream'];
  constructor(readonly perCustomer: boolean) {
    this.names = (perCustomer ? ['customer', 'stream'] : ['stream']) as ['stream'];
  }
  of(customerId: string, stream: string): { stream: string } {
    return (this.perCustomer ? { customer: customerId, stream } : { stream }) as { stream: string };
  }
}

/**
 * A value per customer per stream (lag, last success): kept per customer internally (bounded by the customers
 * configured), exported per stream, as the worst customer's, unless perCustomer.
 */
class StreamBook {
  private readonly byStream = new Map<string, Map<string, number>>();
  constructor(
    private readonly labels: LabelScheme,
    private readonly worst: (values: number[]) => number,
  ) {}
  remember(customerId: string, stream: string, value: number): void {
    const byCustomer = this.byStream.get(stream) ?? new Map<string, number>();
    byCustomer.set(customerId, value);
    this.byStream.set(stream, byCustomer);
  }
  exportTo(gauge: Gauge<'stream'>): void {
    gauge.reset();
    for (const [stream, byCustomer] of this.byStream) {
      if (this.labels.perCustomer) for (const [customerId, value] of byCustomer) gauge.set(this.labels.of(customerId, stream), value);
      else gauge.set({ stream }, this.worst([...byCustomer.values()]));
    }
  }
}

/** The counters and the histogram one finished run adds to. */
function runInstruments(registry: Registry, who: ['stream']) {
  const counter = (name: string, help: string) => new Counter({ name: `${PREFIX}${name}`, help, labelNames: who, registers: [registry] });
  return {
    runs: new Counter({
      name: `${PREFIX}runs_total`,
      help: 'Finished sync runs by customer, stream and status (succeeded, failed, interrupted, locked).',
      labelNames: [...who, 'status'] as ['stream', 'status'],
      registers: [registry],
    }),
    pages: counter('pages_total', 'Pages committed to the database.'),
    records: counter('records_total', 'Records upserted by sync runs.'),
    rejected: counter('records_rejected_total', 'API records that broke their declared types and were quarantined (table quarantined_records) instead of stored.'),
    failures: new Counter({
      name: `${PREFIX}failures_total`,
      help: 'Failed sync runs by customer, stream and error kind.',
      labelNames: [...who, 'kind'] as ['stream', 'kind'],
      registers: [registry],
    }),
  };
}

/** The lag and last-success gauges, exported from their books at scrape time. */
function healthGauges(registry: Registry, labels: LabelScheme, lags: StreamBook, successes: StreamBook): void {
  new Gauge({
    name: `${PREFIX}lag_seconds`,
    help: 'Seconds the stream watermark is behind now (what is not yet synced); per stream, the customer furthest behind.',
    labelNames: labels.names,
    registers: [registry],
    collect() {
      lags.exportTo(this);
    },
  });
  new Gauge({
    name: `${PREFIX}last_success_timestamp_seconds`,
    help: 'When the stream last finished a successful run (Unix seconds); per stream, the customer whose success is oldest.',
    labelNames: labels.names,
    registers: [registry],
    collect() {
      successes.exportTo(this);
    },
  });
}

/** The data-check gauges (completeness, webhook reconciliation), read from the latest figures at scrape time. */
function dataCheckGauges(registry: Registry, labels: LabelScheme, checks: () => DataCheckFigures): void {
  const { perCustomer } = labels;
  new Gauge({
    name: `${PREFIX}completeness_ratio`,
    help: "Records in the last window before the watermark against the same window a day or a week earlier (the lowest customer's, per stream).",
    labelNames: labels.names,
    registers: [registry],
    collect() {
      this.reset();
      const lowest = new Map<string, number>();
      for (const f of checks().completeness) {
        if (f.ratio === null) continue;
        if (perCustomer) this.set(labels.of(f.customerId, f.stream), f.ratio);
        else lowest.set(f.stream, Math.min(f.ratio, lowest.get(f.stream) ?? Infinity));
      }
      for (const [stream, ratio] of lowest) this.set({ stream }, ratio);
    },
  });
  new Gauge({
    name: `${PREFIX}streams_incomplete`,
    help: 'Streams whose last window holds none, or far fewer, records than a day or a week earlier (COMPLETENESS_MIN_SHARE).',
    labelNames: labels.names,
    registers: [registry],
    collect() {
      this.reset();
      for (const f of checks().completeness) {
        const flagged = f.status === 'low' || f.status === 'empty' ? 1 : 0;
        if (perCustomer) this.set(labels.of(f.customerId, f.stream), flagged);
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
        const { reconciliation } = checks();
        if (perCustomer) for (const r of reconciliation) this.set({ customer: r.customerId }, pick(r));
        else this.set(reconciliation.reduce((n, r) => n + pick(r), 0));
      },
    });
  reconciliationGauge('webhook_missed_deliveries', 'Readings of today and yesterday that polling found but no webhook delivery brought (customers with webhooks).', (r) => r.missedDeliveries);
  reconciliationGauge('webhook_unconfirmed_deliveries', 'Readings of today and yesterday that a delivery brought and polling never found, before the watermark.', (r) => r.unconfirmedDeliveries);
}

type ApiKey = keyof Required<ClientCounters>;

/** API counters: direct increments plus cumulative stats read from client objects at scrape time. */
class ApiCounters {
  readonly direct = { authCalls: 0, tokenRefreshes: 0, retries: 0 };
  private readonly retired = { authCalls: 0, tokenRefreshes: 0, retries: 0 };
  private readonly sources = new Set<() => ClientCounters>();

  constructor(registry: Registry) {
    const total = (key: ApiKey) => this.total(key);
    const counter = (name: string, help: string, key: ApiKey) =>
      new Counter({
        name: `${PREFIX}${name}`,
        help,
        registers: [registry],
        collect() {
          this.reset();
          this.inc(total(key));
        },
      });
    counter('api_retries_total', 'Retried API requests (transport errors, 429, 5xx).', 'retries');
    counter('api_auth_calls_total', 'Authentication calls made to the platform.', 'authCalls');
    counter('api_token_refreshes_total', 'Tokens refreshed before expiry or after a 401.', 'tokenRefreshes');
  }

  total(key: ApiKey): number {
    let sum = this.direct[key] + this.retired[key];
    for (const source of this.sources) sum += source()[key] ?? 0;
    return sum;
  }

  /** Adds a source; the returned function removes it, keeping its last values so counters never go down. */
  observe(source: () => ClientCounters): () => void {
    this.sources.add(source);
    return () => {
      if (!this.sources.delete(source)) return;
      const last = source();
      this.retired.authCalls += last.authCalls ?? 0;
      this.retired.tokenRefreshes += last.tokenRefreshes ?? 0;
      this.retired.retries += last.retries ?? 0;
    };
  }
}

const positive = (n: number | undefined) => (n && Number.isFinite(n) && n > 0 ? n : 0);

export function createMetrics(options: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  // Standard names (process_cpu_seconds_total, nodejs_heap_size_used_bytes, ...), as dashboards expect them.
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry });
  const labels = new LabelScheme(options.perCustomer ?? false);
  const of = (customerId: string, stream: string) => labels.of(customerId, stream);

  const { runs, pages, records, rejected, failures } = runInstruments(registry, labels.names);
  const lags = new StreamBook(labels, (values) => Math.max(...values));
  const successes = new StreamBook(labels, (values) => Math.min(...values));
  healthGauges(registry, labels, lags, successes);
  let checks: DataCheckFigures = { completeness: [], reconciliation: [] };
  dataCheckGauges(registry, labels, () => checks);
  const durations = new Histogram({
    name: `${PREFIX}run_duration_seconds`,
    help: 'How long sync runs took, by stream and status.',
    labelNames: ['stream', 'status'] as const,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  const inProgress = new Gauge({ name: `${PREFIX}sync_in_progress`, help: '1 while a scheduled sync pass is running.', registers: [registry] });
  const deliveries = new Counter({
    name: `${PREFIX}webhook_deliveries_total`,
    help: 'Webhook deliveries by outcome (accepted, duplicate, refused) and refusal reason.',
    labelNames: ['outcome', 'reason'] as const,
    registers: [registry],
  });
  const api = new ApiCounters(registry);

  return {
    registry,
    contentType: registry.contentType,
    recordRun(run) {
      const at = of(run.customerId, run.stream);
      runs.inc({ ...at, status: run.status });
      pages.inc(at, positive(run.pages));
      records.inc(at, positive(run.records));
      rejected.inc(at, positive(run.rejected));
      if (run.status === 'failed') failures.inc({ ...at, kind: run.errorKind ?? 'unknown' });
      if (run.durationSeconds !== undefined && run.status !== 'locked') durations.observe({ stream: run.stream, status: run.status }, run.durationSeconds);
      if (run.status === 'succeeded' && run.finishedAt !== undefined) successes.remember(run.customerId, run.stream, run.finishedAt);
    },
    recordPage(customerId, stream, count, pageCount = 1) {
      pages.inc(of(customerId, stream), positive(pageCount));
      records.inc(of(customerId, stream), positive(count));
    },
    recordFailure: (customerId, stream, kind) => failures.inc({ ...of(customerId, stream), kind }),
    recordRetry: (count = 1) => void (api.direct.retries += positive(count)),
    recordAuthCall: (count = 1) => void (api.direct.authCalls += positive(count)),
    recordTokenRefresh: (count = 1) => void (api.direct.tokenRefreshes += positive(count)),
    observeApiStats: (source) => api.observe(source),
    webhookOutcome: (outcome, reason) => deliveries.inc({ outcome, reason: outcome === 'refused' ? (reason ?? 'unknown') : '' }),
    setSyncLag: (customerId, stream, seconds) => lags.remember(customerId, stream, Math.max(0, seconds)),
    observeDataChecks(figures) {
      checks = figures;
    },
    observeSyncHealth(rows) {
      for (const row of rows) {
        const customerId = String(row.customer_id);
        const stream = String(row.stream);
        if (notAStream(stream)) continue;
        if (row.lag_seconds !== null && row.lag_seconds !== undefined) lags.remember(customerId, stream, Math.max(0, Number(row.lag_seconds)));
        if (row.last_success_at) successes.remember(customerId, stream, Date.parse(String(row.last_success_at)) / 1000);
      }
    },
    setSyncInProgress: (running) => inProgress.set(running ? 1 : 0),
    text: () => registry.metrics(),
  };
}
