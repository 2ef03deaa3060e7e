import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import { freshDatabase, type Dialect, type TestDatabase } from '../test/support/databases.ts';
import { runBench, spawnBench } from './child.ts';
import { timeReports, reportAsks, openReader, explain, type ReportTiming } from './portfolio-reports.ts';
import type { PortfolioLoad, PortfolioLoadResult } from './portfolio-worker.ts';
import type { SandboxInfo } from './sandbox-process.ts';
import { median } from './stats.ts';
import { perReading, storageSize, type BytesPerReading } from './storage-size.ts';
import { BENCH_PG_URL, dataStart, SyncBench } from './sync-bench.ts';

/**
 * The portfolio benchmark (issue 40): a generated portfolio loaded through the real sync path (bench/portfolio-worker.ts:
 * what `backfill` does, listings and readings, the aggregates kept by every commit), then the report's three asks
 * timed cold and warm (bench/portfolio-reports.ts), the bytes per reading with the aggregates, and how each figure
 * grows from a quarter of the period to all of it: the first quarter of the days is loaded and measured, then the
 * rest is loaded into the same database (an ordinary later backfill) and everything is measured again. So the
 * building-month and floor-week ask the same range of a database holding four times the data, and the portfolio ask
 * a range four times as long.
 *
 * The portfolio's sensors report hourly (the sandbox's interval, declared to the sync as `samplingInterval: 60m` in a
 * definitions file, as a user would): the aggregates hold one row per floor space and local hour whatever the
 * sensors' interval, and the reports read only those, so 2,000 spaces x 180 days is the bucket count of a 5-minute
 * portfolio of that size, with a twelfth of its readings (104 million readings would not load on this machine in a
 * reasonable time). What keeping the aggregates costs the sync is measured apart, with 5-minute sensors and the
 * default settings (the sync as a user runs it), each run on a fresh database, with and without the aggregates.
 *
 * Sizes (bench/run.ts): full mode loads the issue's 2,000 floor spaces x 180 days on Postgres, 8.64 M readings, with
 * the aggregates as the product keeps them; the load is Postgres's work more than the sync's or the sandbox's
 * (bench/portfolio-load-profile.ts), and takes 10 to 15 minutes on this 2-core machine idle. SQLite loads 500 spaces
 * x 180 days (2.16 M): one writer, and a quarter of the spaces keeps the whole part within the time of the Postgres
 * load. The load settings are those a user loading a portfolio this size sets (PORTFOLIO_LOAD_ENV).
 */

export interface PortfolioSize {
  buildings: number;
  spacesPerBuilding: number;
  days: number;
}

export interface PortfolioPlan {
  sizes: Partial<Record<Dialect, PortfolioSize>>;
  /** Warm repetitions of each ask (the median is shown). */
  warmRuns: number;
  /** Restart Postgres before each cold ask (only when no other client is connected). */
  restart: boolean;
  /** The cost of keeping the aggregates: readings per run (5-minute sensors, 1,250 spaces) and runs of each side. */
  cost: { readings: number; runs: number };
  /** A statement of an ask still running after this long is cancelled (Postgres) and the ask shown as at least that. */
  timeoutMs: number;
  /** Print EXPLAIN ANALYZE of each ask at full size. */
  explain: boolean;
  /**
   * How the portfolio's aggregates are made: `kept` by the sync's commits (the product's default), or `rebuilt` by
   * `aggregates rebuild` after a sync that keeps none (bit for bit the same buckets, test/store/aggregates*.test.ts;
   * several times faster while keeping them costs what the cost figure shows).
   */
  aggregates: 'kept' | 'rebuilt';
}

export interface StageFigures {
  days: number;
  readings: number;
  /** This stage's load (the quarter: the first quarter of the days; full: the rest). */
  load: PortfolioLoadResult;
  reports: ReportTiming[];
  bytes: BytesPerReading;
  /** Bytes of the aggregates' tables and indexes per reading, and their rows. */
  aggregateBytesPerReading: number;
  buckets: number;
}

export interface DialectPortfolio {
  size: PortfolioSize;
  spaces: number;
  quarter: StageFigures;
  full: StageFigures;
  explain?: string;
}

export interface AggregateCost {
  readings: number;
  with: PortfolioLoadResult[];
  without: PortfolioLoadResult[];
  /** Medians, rows per second. */
  withRate: number;
  withoutRate: number;
  /** 1 - with / without: the share of throughput the aggregates cost. */
  cost: number;
}

export interface PortfolioFigures {
  plan: PortfolioPlan;
  dialects: Partial<Record<Dialect, DialectPortfolio>>;
  cost: Partial<Record<Dialect, AggregateCost>>;
  /** The plans of the asks at full size (Markdown), when the plan asked for them. */
  explain?: string;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/**
 * Big pages (the API's maximum) and day windows: what a user loading a portfolio this size sets (docs/performance.md,
 * "Page size"). A day of 2,000 hourly spaces is 48,000 readings, ten pages, and the default 8 windows run at once.
 */
export const PORTFOLIO_LOAD_ENV = { SYNC_PAGE_SIZE: '5000', SYNC_STEP: '1d' };
/** A stage's load: three quarters of the full size take about 8 minutes idle; a busy machine several times that. */
const LOAD_TIMEOUT_MS = 60 * 60_000;
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
/**
 * The aggregates' relations and their indexes: the hourly buckets, the daily rollup (when the schema has it), the
 * floor rollup, the calendars, and what pages mark stale until the refresh (aggregate_invalidations: empty after a
 * run, its pages kept). SQLite names a table's primary key or unique index after the table (sqlite_autoindex_<table>_N).
 */
export const AGGREGATE_TABLES = /^(sqlite_autoindex_)?(occupancy_buckets|occupancy_days|occupancy_floor_hours|calendar_days|aggregate_)/;

/**
 * The portfolio's definitions file, in a temporary directory: the built-in occupancy stream declaring the sensors' interval,
 * and the floors and floor spaces listings of the sandbox's hierarchy (the queries it serves; the floor spaces one is
 * docs/examples/api-per-space's), so every floor space has its building and floor. A built-in stream of the same name
 * is replaced by these, so the benchmark reads the same hierarchy whatever the built-ins list.
 */
export function portfolioDefinitions(samplingInterval: '60m' | '5m'): { file: string; remove(): void } {
  const jobs = fileURLToPath(new URL('../jobs/', import.meta.url));
  const example = fileURLToPath(new URL('../docs/examples/api-per-space/', import.meta.url));
  const read = (dir: string) => parse(readFileSync(join(dir, dir === jobs ? 'streams.yaml' : 'occupancy-sync.streams.yaml'), 'utf8')) as { version: number; streams: Array<Record<string, unknown>> };
  const builtIn = read(jobs);
  const occupancy = builtIn.streams.find((s) => s.name === 'occupancy');
  const floorSpaces = read(example).streams.find((s) => s.name === 'floor-spaces');
  if (!occupancy || !floorSpaces) throw new Error('jobs/streams.yaml has no occupancy stream, or docs/examples/api-per-space no floor-spaces stream');
  const dir = mkdtempSync(join(tmpdir(), 'occupancy-sync-portfolio-'));
  const file = join(dir, 'occupancy-sync.streams.yaml');
  writeFileSync(join(dir, 'floors.graphql'), 'query Floors {\n  floors {\n    id\n    buildingId\n    name\n  }\n}\n');
  const floors = {
    name: 'floors',
    document: 'floors.graphql',
    sink: 'floors',
    kind: 'full',
    paging: { style: 'single', records: 'floors', maxPageSize: 10000 },
    record: {
      id: { path: 'id', type: 'id' },
      buildingId: { path: 'buildingId', type: 'id', nullable: true },
      // The level is left out: a signed whole number is no type of this release's definitions (basements are -1).
      name: { path: 'name', type: 'string', nullable: true },
    },
    softDelete: { completeWhenUnset: [] },
  };
  const streams = [
    { ...occupancy, document: join(jobs, String(occupancy.document)), sampling: 'interval', samplingInterval },
    floors,
    { ...floorSpaces, document: join(example, String(floorSpaces.document)) },
  ];
  writeFileSync(file, stringify({ version: builtIn.version, streams }));
  return { file, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The arguments of bench/sandbox-process.ts serving a portfolio of `size`, readings from `start` (ISO). */
export function portfolioSandboxArgs(start: string, size: PortfolioSize): string[] {
  return ['--data-start', start, '--buildings', String(size.buildings), '--spaces', String(size.spacesPerBuilding), '--interval-ms', String(HOUR_MS)];
}

/** One load of a portfolio in a fresh process (bench/portfolio-worker.ts): what `backfill --from --to [--restart]` does. */
export async function loadPortfolio(sandbox: SandboxInfo, db: TestDatabase, from: number, to: number, expectedRows: number, maintain: boolean, env: Record<string, string>, later = false): Promise<PortfolioLoadResult> {
  // Local dates one day wider than the UTC range: every zone's days that the range's readings reach (offsets < 24 h).
  const rebuild = maintain ? undefined : { from: day(from - DAY_MS), to: day(to + DAY_MS) };
  const job: PortfolioLoad = { sandbox, from, to, databaseUrl: db.url, maintain, restart: later, expectedRows, env, ...(rebuild && { rebuild }) };
  return runBench<PortfolioLoadResult>('portfolio-worker.ts', ['--job', JSON.stringify(job)], { timeoutMs: LOAD_TIMEOUT_MS });
}

/**
 * The portfolio's load outside the benchmark (bench/portfolio-bytes.ts, bench/planner-statistics.ts): the first quarter
 * of `days`, then the rest as `backfill --restart` does, the aggregates kept, into one database; each stage logged.
 */
export async function loadQuarterThenRest(info: SandboxInfo, db: TestDatabase, days: number, definitionsFile: string, log: (line: string) => void): Promise<void> {
  const start = Date.parse(info.dataStart);
  const env = { ...PORTFOLIO_LOAD_ENV, DEFINITIONS_FILE: definitionsFile };
  const quarter = Math.max(1, Math.round(days / 4));
  for (const [from, to] of [[0, quarter], [quarter, days]] as const) {
    const readings = ((to * DAY_MS) / HOUR_MS) * info.floorSpaces;
    const loaded = await loadPortfolio(info, db, start + from * DAY_MS, start + to * DAY_MS, readings, true, env, from > 0);
    log(`days ${from} to ${to} loaded in ${(loaded.ms / 1000).toFixed(1)} s (${readings.toLocaleString('en-US')} readings stored)`);
  }
}

async function aggregateRows(databaseUrl: string): Promise<number> {
  const store = await openReader(databaseUrl);
  try {
    const [row] = await store.query<{ n: number | string }>('SELECT count(*) AS n FROM occupancy_buckets');
    return Number(row!.n);
  } finally {
    await store.close();
  }
}

async function measureDialect(dialect: Dialect, size: PortfolioSize, plan: PortfolioPlan, definitions: string, log: (line: string) => void): Promise<DialectPortfolio> {
  const sandbox = spawnBench<SandboxInfo>('sandbox-process.ts', portfolioSandboxArgs(dataStart(), size));
  const db = await freshDatabase(dialect, `portfolio_${dialect}`, { migrate: true, baseUrl: BENCH_PG_URL, schemaPrefix: 'osbench_' });
  try {
    const info = await sandbox.message;
    const empty = await storageSize(db.url);
    const start = Date.parse(info.dataStart);
    const env = { ...PORTFOLIO_LOAD_ENV, DEFINITIONS_FILE: definitions };
    const quarterDays = Math.max(1, Math.round(size.days / 4));
    const stage = async (days: number, from: number): Promise<StageFigures> => {
      const to = start + days * DAY_MS;
      const readings = (days * DAY_MS / HOUR_MS) * info.floorSpaces;
      log(`  ${dialect}: loading days ${Math.round((from - start) / DAY_MS)} to ${days} (${info.floorSpaces} spaces, ${readings.toLocaleString('en-US')} readings stored after it)`);
      const loaded = await loadPortfolio(info, db, from, to, readings, plan.aggregates === 'kept', env, from > start);
      const rate = (readings - ((from - start) / HOUR_MS) * info.floorSpaces) / (loaded.ms / 1000);
      const rebuilt = loaded.rebuildMs === undefined ? '' : `, aggregates rebuilt in ${(loaded.rebuildMs / 1000).toFixed(1)} s (${loaded.buckets!.toLocaleString('en-US')} buckets)`;
      log(`  ${dialect}: loaded in ${(loaded.ms / 1000).toFixed(1)} s = ${Math.round(rate).toLocaleString('en-US')} readings/s${rebuilt}, peak RSS ${Math.round(loaded.maxRssBytes / 1048576)} MiB`);
      const size = await storageSize(db.url);
      const bytes = perReading(size, empty, readings);
      const aggregateBytesPerReading = bytes.relations.filter((r) => AGGREGATE_TABLES.test(r.name)).reduce((a, r) => a + r.perReading, 0);
      const buckets = await aggregateRows(db.url);
      log(`  ${dialect}: ${bytes.perReading.toFixed(1)} bytes per reading, of which aggregates ${aggregateBytesPerReading.toFixed(1)} (${buckets.toLocaleString('en-US')} buckets)`);
      const reader = await openReader(db.url);
      const asks = await reportAsks(reader, info.customerId, start, to).finally(() => reader.close());
      const reports = await timeReports(db.url, asks, { dialect, warmRuns: plan.warmRuns, restart: plan.restart, restartWaitMs: 5_000, timeoutMs: plan.timeoutMs, log });
      return { days, readings, load: loaded, reports, bytes, aggregateBytesPerReading, buckets };
    };
    const quarter = await stage(quarterDays, start);
    const full = await stage(size.days, start + quarterDays * DAY_MS);
    const out: DialectPortfolio = { size, spaces: info.floorSpaces, quarter, full };
    if (plan.explain) {
      const reader = await openReader(db.url);
      const asks = await reportAsks(reader, info.customerId, start, start + size.days * DAY_MS).finally(() => reader.close());
      const plans: string[] = [];
      for (const ask of asks) plans.push(`-- ${ask.name}: ${ask.label}\n${await explain(db.url, dialect, ask, plan.timeoutMs)}`);
      out.explain = plans.join('\n\n');
      log(out.explain);
    }
    return out;
  } finally {
    await db.drop();
    await sandbox.stop();
  }
}

/**
 * Sync throughput with and without the aggregates: 5-minute sensors, default settings (page, window), the listings
 * read first (untimed), fresh databases, alternating.
 */
export async function measureCost(dialect: Dialect, plan: Pick<PortfolioPlan, 'cost'>, sync: SyncBench, definitions: string, log: (line: string) => void): Promise<AggregateCost> {
  const runs: Record<'with' | 'without', PortfolioLoadResult[]> = { with: [], without: [] };
  for (let i = 0; i < plan.cost.runs; i++) {
    for (const maintain of i % 2 === 0 ? [false, true] : [true, false]) {
      const db = await freshDatabase(dialect, `aggcost_${dialect}`, { migrate: true, baseUrl: BENCH_PG_URL, schemaPrefix: 'osbench_' });
      try {
        const job = await sync.job(plan.cost.readings, db.url);
        const result = await loadPortfolio(job.sandbox, db, job.from, job.to, job.expectedRows, maintain, { DEFINITIONS_FILE: definitions });
        log(`  ${dialect} ${maintain ? 'with   ' : 'without'} aggregates: ${result.rows} readings in ${(result.ms / 1000).toFixed(2)} s = ${Math.round((result.rows / result.ms) * 1000)} readings/s`);
        runs[maintain ? 'with' : 'without'].push(result);
      } finally {
        await db.drop();
      }
    }
  }
  const rate = (list: PortfolioLoadResult[]) => median(list.map((r) => (r.rows / r.ms) * 1000));
  const withRate = rate(runs.with);
  const withoutRate = rate(runs.without);
  return { readings: runs.with[0]!.rows, ...runs, withRate, withoutRate, cost: 1 - withRate / withoutRate };
}

export async function measurePortfolio(plan: PortfolioPlan, dialects: readonly Dialect[], log: (line: string) => void): Promise<PortfolioFigures> {
  const figures: PortfolioFigures = { plan, dialects: {}, cost: {} };
  const definitions = portfolioDefinitions('60m');
  // The cost's runs read the same listings, over 5-minute sensors.
  const fiveMinute = portfolioDefinitions('5m');
  // The 5-minute sandbox of the cost's runs starts while the first portfolio loads.
  const starting = plan.cost.runs > 0 ? SyncBench.start(log) : undefined;
  starting?.catch(() => undefined);
  try {
    for (const dialect of dialects) {
      const size = plan.sizes[dialect];
      if (!size) continue;
      log(`Portfolio on ${dialect}: ${size.buildings} buildings x ${size.spacesPerBuilding} floor spaces, ${size.days} days of hourly readings`);
      figures.dialects[dialect] = await measureDialect(dialect, size, plan, definitions.file, log);
      const sync = await starting;
      if (sync) {
        log(`Cost of keeping the aggregates on ${dialect}: ${plan.cost.runs} run(s) each, ${plan.cost.readings.toLocaleString('en-US')} readings of 5-minute sensors`);
        figures.cost[dialect] = await measureCost(dialect, plan, sync, fiveMinute.file, log);
      }
    }
  } finally {
    definitions.remove();
    fiveMinute.remove();
    await (await starting?.catch(() => undefined))?.close();
  }
  const plans = dialects.flatMap((d) => (figures.dialects[d]?.explain ? [`${d === 'postgres' ? 'Postgres' : 'SQLite'}, full size:\n\n\`\`\`\n${figures.dialects[d]!.explain}\n\`\`\``] : []));
  if (plans.length) figures.explain = plans.join('\n\n');
  return figures;
}
