import { resolveConfig } from '../src/config.ts';
import { parseDocumentSource } from '../src/api/documents.ts';
import { silentLogger } from '../src/logger.ts';
import { rebuildAggregates } from '../src/app/aggregates.ts';
import { runOnce } from '../src/app/run-once.ts';
import { loadStreams, selectStreams } from '../src/app/streams.ts';
import { openStore } from '../src/store/index.ts';
import type { Store } from '../src/store/types.ts';
import type { RunRequest } from '../src/sync/engine.ts';
import { flags, report, required } from './child.ts';
import { countReadings } from './raw-writers.ts';
import type { SandboxInfo } from './sandbox-process.ts';

/**
 * One load of the portfolio benchmark in a fresh process: `--job '<PortfolioLoad JSON>'`. It does what
 * `occupancy-sync backfill --from F --to T [--restart]` does after parsing its flags (resolveConfig from the environment, the
 * built-in streams with DEFINITIONS_FILE over them, the database opened and migrated, every stream: the listings
 * refreshed and the readings' range loaded, runOnce), with the aggregates kept by every commit (the default) or not
 * (`maintain: false`, openStore's maintainAggregates, which exists for this measurement). Times runOnce alone
 * (process start and migration excluded), then checks the readings stored, and prints one PortfolioLoadResult line.
 */

export interface PortfolioLoad {
  sandbox: SandboxInfo;
  /** Epoch ms: the backfill's range [from, to). */
  from: number;
  to: number;
  databaseUrl: string;
  /** A later range of a database already loaded: `backfill --restart` (the stored range is done; its rows stay). */
  restart: boolean;
  /** Keep the aggregates with every commit (the product's only behaviour) or not (the cost's baseline). */
  maintain: boolean;
  /**
   * After a load without them: the aggregates of local dates [from, to) made as `occupancy-sync aggregates rebuild
   * --from --to` makes them (rebuildAggregates), timed apart (rebuildMs).
   */
  rebuild?: { from: string; to: string };
  /** Readings the database must hold after the load (all loads so far). */
  expectedRows: number;
  /** Settings a user of a portfolio this size sets (SYNC_PAGE_SIZE, SYNC_STEP, DEFINITIONS_FILE), else the defaults. */
  env: Record<string, string>;
}

export interface PortfolioLoadResult {
  rows: number;
  /** runOnce alone. */
  ms: number;
  /** The rebuild after it, when asked. */
  rebuildMs?: number;
  buckets?: number;
  cpuMs: number;
  maxRssBytes: number;
}

/**
 * Without the aggregates, the run's closing reconciliation would find every building without a recorded calendar
 * and rebuild its aggregates from the readings: a different cost (a rebuild after the load). The baseline keeps no
 * aggregates at all, so its store answers that nothing needs rebuilding.
 */
function withoutAggregates(store: Store): Store {
  return new Proxy(store, {
    get(target, property) {
      if (property === 'reconcileAggregates') return async () => [];
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

const job = JSON.parse(required(flags(), 'job')) as PortfolioLoad;
const config = resolveConfig({
  API_BASE_URL: job.sandbox.url,
  API_KEY: job.sandbox.apiKey,
  API_SECRET: job.sandbox.apiSecret,
  CUSTOMER_ID: job.sandbox.customerId,
  DATABASE_URL: job.databaseUrl,
  LOG_LEVEL: 'silent',
  ...job.env,
});
const request: RunRequest = { mode: 'backfill', from: job.from, to: job.to, ...(job.restart && { restart: true }) };
const streams = selectStreams(undefined, request, loadStreams(config, { parseDocument: parseDocumentSource }).streams);
const opened = await openStore(config.database, { maintainAggregates: job.maintain });
await opened.migrate();
const store = job.maintain ? opened : withoutAggregates(opened);
if (!job.restart) {
  // Before the first load, untimed: the listings (buildings, floors, floor spaces), as `occupancy-sync sync --stream`
  // of each would, so every reading's floor space already has its building when its commit keeps the aggregates
  // (a user stream new to the built-ins runs after them, and so after the readings, in a backfill of everything).
  const listings = streams.filter((s) => s.kind === 'full');
  const listed = await runOnce({ config, store, logger: silentLogger, customers: config.customers, streams: listings, request: { mode: 'incremental' } });
  const failed = listed.outcomes.find((o) => o.status !== 'succeeded');
  if (failed) throw new Error(`listing ${failed.stateKey} ${failed.status}: ${String((failed.error as Error | undefined)?.message ?? failed.note)}`, { cause: failed.error });
}
const cpu = process.cpuUsage();
const started = performance.now();
let ms: number;
let rebuilt: Pick<PortfolioLoadResult, 'rebuildMs' | 'buckets'> = {};
try {
  const result = await runOnce({ config, store, logger: silentLogger, customers: config.customers, streams, request });
  const failed = result.outcomes.find((o) => o.status !== 'succeeded');
  if (failed) throw new Error(`backfill ${failed.stateKey} ${failed.status}: ${String((failed.error as Error | undefined)?.message ?? failed.note)}`, { cause: failed.error });
  ms = performance.now() - started;
  if (job.rebuild) {
    const from = performance.now();
    const buildings = await rebuildAggregates({ store: opened, config, streams, customerIds: config.customers.map((c) => c.id), ...job.rebuild });
    rebuilt = { rebuildMs: performance.now() - from, buckets: buildings.reduce((a, b) => a + b.buckets, 0) };
  }
} finally {
  await opened.close();
}
const used = process.cpuUsage(cpu);
const rows = await countReadings(job.databaseUrl);
if (rows !== job.expectedRows) throw new Error(`the database holds ${rows} readings after the load, expected ${job.expectedRows}`);
report({ rows, ms, ...rebuilt, cpuMs: (used.user + used.system) / 1000, maxRssBytes: process.resourceUsage().maxRSS * 1024 } satisfies PortfolioLoadResult);
