import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import { startSandbox } from '../sandbox/index.ts';
import type { Store } from '../store/types.ts';
import { customerDataCounts } from '../store/status-queries.ts';
import type { SyncReport } from '../sync/engine.ts';
import { toIsoUtc } from '../time.ts';
import { openForWriting } from './database.ts';
import { runOnce } from './run-once.ts';
import { allStreams } from './streams.ts';
import { formatCount } from '../numbers.ts';

const DAY = 86_400_000;

export interface DemoCustomerSummary {
  customerId: string;
  buildings: number;
  floors: number;
  /** Floor spaces the platform listed (with their names, floors and capacity). */
  floorSpaces: number;
  observations: number;
  first: string | null;
  last: string | null;
  watermark: string | null;
}

export interface DemoResult {
  report: SyncReport;
  customers: DemoCustomerSummary[];
}

/** Days the demo's data spans, rounded up: what `report --from <n>d` needs to cover it. */
function days(result: DemoResult): number {
  const first = result.customers.map((c) => c.first).filter((f): f is string => f !== null).sort()[0];
  return first ? Math.max(1, Math.ceil((Date.now() - Date.parse(first)) / DAY)) : 1;
}

const iso = (value: unknown): string | null => (value === null || value === undefined ? null : toIsoUtc(value as string | Date));

/** What landed in the database, per customer: the numbers a reader can check against their own SQL. */
export async function summarize(store: Store, customerIds: string[]): Promise<DemoCustomerSummary[]> {
  const out: DemoCustomerSummary[] = [];
  for (const customerId of customerIds) {
    const counts = await customerDataCounts(store, customerId);
    const state = await store.getState(customerId, 'occupancy');
    out.push({
      customerId,
      buildings: Number(counts.buildings ?? 0),
      floors: Number(counts.floors ?? 0),
      floorSpaces: Number(counts.floorSpaces ?? 0),
      observations: Number(counts.observations ?? 0),
      first: iso(counts.first),
      last: iso(counts.last),
      watermark: state?.watermark ?? null,
    });
  }
  return out;
}

/**
 * Starts the sandbox in this process, syncs `days` of data for two customers into `database`, and summarizes.
 * The sandbox's read-only keys stand in for the customers' API keys.
 */
export async function runDemo(options: {
  config: Config;
  database: Config['database'];
  logger: Logger;
  signal?: AbortSignal;
  days?: number;
  customers?: number;
}): Promise<DemoResult> {
  const days = options.days ?? 3;
  const now = Date.now();
  // Aligned on the sandbox's 5-minute tick, so observation times are the same grid on every demo run.
  const dataStart = Math.floor((now - days * DAY) / 300_000) * 300_000;
  const sandbox = await startSandbox({ customers: options.customers ?? 2, dataStart, logger: options.logger.child({ component: 'sandbox' }) });
  try {
    const config: Config = {
      ...options.config,
      apiBaseUrl: sandbox.url,
      database: options.database,
      customers: sandbox.customers.map((c) => ({ id: c.id, apiKey: c.readKey.key, apiSecret: c.readKey.secret, webhookSecrets: [], webhookHeaders: {} })),
      // Reach back to the start of the sandbox's data on the first run.
      sync: { ...options.config.sync, initialHistoryMs: Math.max(options.config.sync.initialHistoryMs, days * DAY + DAY) },
      token: { ...options.config.token, cacheFile: undefined },
    };
    const store = await openForWriting(options.database);
    try {
      const report = await runOnce({ config, store, logger: options.logger, customers: config.customers, streams: allStreams, signal: options.signal, baseUrl: sandbox.url });
      return { report, customers: await summarize(store, config.customers.map((c) => c.id)) };
    } finally {
      await store.close();
    }
  } finally {
    await sandbox.close();
  }
}

/** `program` is how to spell the command in the hints (see cli/invocation.ts). */
export function formatDemo(result: DemoResult, databaseUrl: string, program = 'occupancy-sync'): string {
  const lines = ['', `What landed in ${databaseUrl}:`];
  for (const c of result.customers) {
    lines.push(
      `  customer ${c.customerId}: ${c.buildings} buildings, ${c.floors} floors, ${c.floorSpaces} floor spaces, ${formatCount(c.observations)} observations` +
        (c.first ? ` from ${c.first} to ${c.last}` : '') +
        `, watermark ${c.watermark ?? '(none)'}`,
    );
  }
  lines.push(
    '',
    'Next:',
    `  DATABASE_URL=${databaseUrl} ${program} status`,
    `  DATABASE_URL=${databaseUrl} ${program} report --from ${days(result)}d`,
    '',
  );
  return lines.join('\n');
}
