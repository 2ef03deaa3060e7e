import postgres from 'postgres';
import { freshDatabase } from '../test/support/databases.ts';
import { flags, spawnBench } from './child.ts';
import { loadQuarterThenRest, portfolioDefinitions, portfolioSandboxArgs } from './portfolio.ts';
import { openReader, reportAsks, timeReports, type ReportTiming } from './portfolio-reports.ts';
import { target } from './raw-writers.ts';
import type { SandboxInfo } from './sandbox-process.ts';
import { BENCH_PG_URL, dataStart } from './sync-bench.ts';

/**
 * What the planner's statistics are worth to the reports (docs/reporting.md, "Planner statistics"; figures in
 * docs/performance.md): the portfolio benchmark's load on Postgres (hourly sensors, the quarter then the rest, each a
 * backfill, which analyzes what it changed at its end), then its whole-portfolio report timed three ways on the same
 * database, in one run:
 * 1. as the load left it (the tables analyzed by the backfill's end);
 * 2. blind: the statistics of the run's schema removed (its pg_statistic rows deleted, pg_class's reltuples set to -1
 *    and relpages and relallvisible to 0: what a table created empty, then loaded and never vacuumed or analyzed, has;
 *    this needs a superuser, as BENCH_PG_URL is);
 * 3. after `ANALYZE` again.
 * Warm figures (median of `--runs`); prints them, writes nothing, drops the database.
 *
 *   node --import tsx bench/planner-statistics.ts [--buildings 40] [--spaces 50] [--days 180] [--runs 3]
 */

const DAY_MS = 86_400_000;
const options = flags();
const size = { buildings: Number(options.get('buildings') ?? 40), spacesPerBuilding: Number(options.get('spaces') ?? 50), days: Number(options.get('days') ?? 180) };
const runs = Number(options.get('runs') ?? 3);
const log = (line: string) => process.stdout.write(`${line}\n`);

async function inSchema(url: string, statements: (sql: postgres.Sql, schema: string) => Promise<unknown>): Promise<void> {
  const t = target(url);
  if (t.dialect !== 'postgres') throw new Error(`not a Postgres URL: ${url}`);
  const sql = postgres(t.url, { max: 1, onnotice: () => {} });
  try {
    await statements(sql, t.schema ?? 'public');
  } finally {
    await sql.end({ timeout: 5 });
  }
}

const definitions = portfolioDefinitions('60m');
const sandbox = spawnBench<SandboxInfo>('sandbox-process.ts', portfolioSandboxArgs(dataStart(), size));
const db = await freshDatabase('postgres', 'planner_statistics', { migrate: true, baseUrl: BENCH_PG_URL, schemaPrefix: 'osbench_' });
try {
  const info = await sandbox.message;
  const start = Date.parse(info.dataStart);
  await loadQuarterThenRest(info, db, size.days, definitions.file, log);
  const reader = await openReader(db.url);
  const asks = await reportAsks(reader, info.customerId, start, start + size.days * DAY_MS).finally(() => reader.close());
  const portfolio = asks.filter((a) => a.name === 'portfolio');
  const time = async (label: string): Promise<ReportTiming> => {
    log(label);
    const [timing] = await timeReports(db.url, portfolio, { dialect: 'postgres', warmRuns: runs, restart: false, restartWaitMs: 0, timeoutMs: 120_000, log });
    return timing!;
  };
  const analyzed = await time('as the load left it (analyzed at the end of each backfill):');
  await inSchema(db.url, async (sql, schema) => {
    await sql`DELETE FROM pg_statistic WHERE starelid IN (SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ${schema})`;
    await sql`UPDATE pg_class SET reltuples = -1, relpages = 0, relallvisible = 0
               WHERE relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = ${schema}) AND relkind IN ('r', 'p', 'i')`;
  });
  const blind = await time('blind (no statistics, as a table loaded and never analyzed):');
  await inSchema(db.url, async (sql, schema) => {
    await sql.unsafe(`SET search_path = "${schema}"`);
    await sql.unsafe('ANALYZE');
  });
  const again = await time('after ANALYZE:');
  const ms = (t: ReportTiming) => `${t.timedOut ? 'over ' : ''}${t.warmMs.toFixed(0)} ms${t.timedOut ? ' (cancelled)' : ''}`;
  log(`\n${size.buildings} x ${size.spacesPerBuilding} floor spaces x ${size.days} days: the whole portfolio's report, warm (median of ${runs}): ` +
    `${ms(analyzed)} as loaded, ${ms(blind)} blind, ${ms(again)} after ANALYZE`);
} finally {
  await db.drop();
  await sandbox.stop();
  definitions.remove();
}
