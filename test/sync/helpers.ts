import { createApiClient } from '../../src/api/client.ts';
import { engineSettings } from '../../src/app/engine-settings.ts';
import { loadDocument } from '../../src/api/documents.ts';
import type { Clock } from '../../src/clock.ts';
import type { Config } from '../../src/config.ts';
import { silentLogger, type Logger } from '../../src/logger.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import type { Store } from '../../src/store/types.ts';
import { runSync, type RunRequest, type SyncReport } from '../../src/sync/engine.ts';
import type { AnyStream } from '../../src/sync/stream.ts';
import { streams as allStreams } from '../../jobs/index.ts';

export const MIN = 60_000;
export const HOUR = 60 * MIN;
export const DAY = 24 * HOUR;

/** Environment for a child `occupancy-sync` talking to `sandbox` with its first customer. */
export function childEnv(sandbox: Sandbox, databaseUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  const customer = sandbox.customers[0]!;
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    API_BASE_URL: sandbox.url,
    API_KEY: customer.readKey.key,
    API_SECRET: customer.readKey.secret,
    CUSTOMER_ID: customer.id,
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'warn',
    HTTP_BACKOFF_MIN: '10ms',
    HTTP_BACKOFF_MAX: '50ms',
    ...extra,
  };
}

export function syncSettings(overrides: Partial<Config['sync']> = {}): Config['sync'] {
  return {
    lookbackMs: 15 * MIN,
    settleDelayMs: MIN,
    stepMs: 6 * HOUR,
    pageSize: 200,
    initialHistoryMs: 2 * DAY,
    buildingsNameLike: undefined,
    cron: '*/5 * * * *',
    maxClockSkewMs: 5 * MIN,
    rejectedRecords: 'quarantine',
    maxRejectedShare: 0.5,
    maxPagesPerWindow: 10_000,
    concurrency: 4,
    queueConcurrency: 4,
    // One window at a time unless a test asks: the in-process tests pin page-by-page behaviour; the CLI tests run the
    // default (SYNC_WINDOW_CONCURRENCY).
    windowConcurrency: 1,
    maxPendingRecords: 16_000,
    completenessMinShare: 0.5,
    completenessWindowMs: HOUR,
    runHistoryRetentionMs: 28 * DAY,
    readingsRetentionMs: 0,
    ...overrides,
  };
}

export const FAST_HTTP: Config['http'] = { timeoutMs: 10_000, maxAttempts: 3, backoffMinMs: 1, backoffMaxMs: 5 };

/** One engine run against the sandbox for the given customers (default: all, with their read keys). */
export async function syncOnce(input: {
  store: Store;
  sandbox: Sandbox;
  clock: Clock;
  settings?: Config['sync'];
  streams?: ReadonlyArray<AnyStream>;
  request?: RunRequest;
  signal?: AbortSignal;
  customers?: Array<{ id: string; key: string; secret: string }>;
  logger?: Logger;
  onProgress?: Parameters<typeof runSync>[0]['onProgress'];
}): Promise<SyncReport> {
  const customers = input.customers ?? input.sandbox.customers.map((c) => ({ id: c.id, key: c.readKey.key, secret: c.readKey.secret }));
  const targets = customers.map((c) => ({
    customerId: c.id,
    client: createApiClient({ baseUrl: input.sandbox.url, apiKey: c.key, apiSecret: c.secret, clock: input.clock, http: FAST_HTTP }),
  }));
  try {
    return await runSync({
      store: input.store,
      clock: input.clock,
      logger: input.logger ?? silentLogger,
      settings: engineSettings({ sync: input.settings ?? syncSettings() }),
      streams: input.streams ?? allStreams,
      targets,
      loadDocument,
      request: input.request,
      signal: input.signal,
      onProgress: input.onProgress,
    });
  } finally {
    await Promise.all(targets.map((t) => t.client.close()));
  }
}

export interface Row {
  floorSpaceId: string;
  observedAt: string;
  occupancyStatus: string;
  /** null: none was sent (presence-only sensors). */
  headcount: number | null;
  eventId: string | null;
}

const iso = (v: unknown) => new Date(v as string).toISOString();

/** The customer's occupancy rows in [from, to), in key order. */
export async function dbRows(store: Store, customerId: string, range: { from?: number; to?: number } = {}): Promise<Row[]> {
  const rows = await store.query<Record<string, unknown>>(
    'SELECT floor_space_id, observed_at, occupancy_status, headcount, event_id FROM occupancy WHERE customer_id = $1 ORDER BY observed_at, floor_space_id',
    [customerId],
  );
  return rows
    .map((r) => ({
      floorSpaceId: String(r.floor_space_id),
      observedAt: iso(r.observed_at),
      occupancyStatus: String(r.occupancy_status),
      headcount: r.headcount === null ? null : Number(r.headcount),
      eventId: r.event_id === null ? null : String(r.event_id),
    }))
    .filter((r) => (range.from === undefined || Date.parse(r.observedAt) >= range.from) && (range.to === undefined || Date.parse(r.observedAt) < range.to));
}

/** The sandbox's ground truth for [from, to) as visible now, in the same shape and order as dbRows. */
export function truthRows(sandbox: Sandbox, customerId: string, range: { from?: number; to: number; visibleAt?: number }): Row[] {
  return [...sandbox.truth.observations(customerId, range)]
    .map((o) => ({ floorSpaceId: o.floorSpaceId, observedAt: o.created, occupancyStatus: o.occupancyStatus, headcount: o.headcount, eventId: o.id }))
    .sort((a, b) => (a.observedAt < b.observedAt ? -1 : a.observedAt > b.observedAt ? 1 : a.floorSpaceId < b.floorSpaceId ? -1 : a.floorSpaceId > b.floorSpaceId ? 1 : 0));
}

/**
 * Stored rows against the sandbox's truth after a sync: `stored` (the rows before the watermark) must equal `truth`
 * (the truth from `from`, by default the first stored row, up to the watermark), and `strays` (rows at or after the
 * watermark that are not the truth's) must be empty. A run's last window may end past its watermark: the watermark
 * stops at the platform's time minus the settle delay, read from a `Date` header in whole seconds (src/sync/run/plan.ts,
 * watermarkLimit), so a tick of that second is stored and lies at the watermark. Comparing every stored row with the
 * truth up to the watermark failed whenever a run ended within a second after a tick.
 */
export function againstTruth(rows: readonly Row[], sandbox: Sandbox, customerId: string, watermark: string, from?: number): { stored: Row[]; truth: Row[]; strays: Row[] } {
  const w = Date.parse(watermark);
  const start = from ?? (rows.length > 0 ? Date.parse(rows[0]!.observedAt) : w);
  const stored = rows.filter((r) => Date.parse(r.observedAt) < w);
  const after = truthRows(sandbox, customerId, { from: w, to: Number.MAX_SAFE_INTEGER });
  const known = new Set(after.map((r) => JSON.stringify(r)));
  return { stored, truth: truthRows(sandbox, customerId, { from: start, to: w }), strays: rows.filter((r) => Date.parse(r.observedAt) >= w && !known.has(JSON.stringify(r))) };
}

export async function countRows(store: Store, customerId?: string): Promise<number> {
  const [row] = customerId
    ? await store.query<{ n: unknown }>('SELECT count(*) AS n FROM occupancy WHERE customer_id = $1', [customerId])
    : await store.query<{ n: unknown }>('SELECT count(*) AS n FROM occupancy');
  return Number(row?.n ?? 0);
}
