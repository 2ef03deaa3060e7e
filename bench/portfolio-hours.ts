/**
 * The hour views' weekday x hour profiles (the profile statement the report sent over building_hours and floor_hours
 * until it read the rollup and the counts by its range itself, src/store/report-queries.ts), measured on a
 * Postgres (or, --dialect sqlite, SQLite) portfolio of floor spaces x 120 days of hourly readings loaded as the portfolio benchmark loads it: with
 * floor_hours and building_hour_sums as main had them (the floor spaces counted by a correlated subquery per hour
 * row, from `git show <ref>:db/views/<dialect>.sql`) and as this checkout's db/views has them. Prints the EXPLAIN
 * ANALYZE execution time of each (SQLite: a second read's time) and whether both answer the same rows; writes nothing.
 *
 *   node --import tsx bench/portfolio-hours.ts [--dialect postgres|sqlite] [--before <git ref>] [--buildings 4] [--spaces 25]
 *
 * PLAN=1 prints the 120-day plans' nodes; KEEP=1 keeps the schema (named at the end) for psql.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { freshDatabase } from '../test/support/databases.ts';
import { runBench, spawnBench } from './child.ts';
import { portfolioDefinitions } from './portfolio.ts';
import type { SandboxInfo } from './sandbox-process.ts';
import { BENCH_PG_URL, dataStart } from './sync-bench.ts';
const { values } = parseArgs({ options: { before: { type: 'string', default: 'fb38fbc' }, dialect: { type: 'string', default: 'postgres' }, buildings: { type: 'string', default: '4' }, spaces: { type: 'string', default: '25' } } });
const days = 120;
const spaces = Number(values.buildings) * Number(values.spaces);
/** The statements of floor_hours and building_hour_sums in a views script, as CREATE OR REPLACE VIEW. */
function hourViews(script: string): string[] {
  return script.split('--> statement-breakpoint').filter((s) => /CREATE VIEW (floor_hours|building_hour_sums) AS/.test(s)).map((s) => s.replace('CREATE VIEW', 'CREATE OR REPLACE VIEW'));
}
const dialect = values.dialect === 'sqlite' ? 'sqlite' : 'postgres';
const file = dialect === 'sqlite' ? 'sqlite' : 'pg';
const before = hourViews(execFileSync('git', ['show', `${values.before}:db/views/${file}.sql`], { encoding: 'utf8' }));
const after = hourViews(readFileSync(new URL(`../db/views/${file}.sql`, import.meta.url), 'utf8'));
const sandbox = spawnBench<SandboxInfo>('sandbox-process.ts', ['--data-start', dataStart(), '--buildings', values.buildings!, '--spaces', values.spaces!, '--interval-ms', '3600000']);
const db = await freshDatabase(dialect, 'hours', { migrate: true, baseUrl: BENCH_PG_URL, schemaPrefix: 'osbench_' });
const defs = portfolioDefinitions('60m');
try {
  const info = await sandbox.message;
  const from = Date.parse(info.dataStart);
  await runBench('portfolio-worker.ts', ['--job', JSON.stringify({ sandbox: info, from, to: from + days * 86400000, databaseUrl: db.url, maintain: true, restart: false, expectedRows: days * 24 * spaces, env: { SYNC_PAGE_SIZE: '5000', SYNC_STEP: '1d', DEFINITIONS_FILE: defs.file } })], { timeoutMs: 1_200_000 });
  const lite = dialect === 'sqlite' ? new Database(db.path!) : undefined;
  const sql = lite ? undefined : postgres(BENCH_PG_URL, { max: 1, onnotice: () => {}, connection: { search_path: db.schema! } });
  if (lite) lite.exec('ANALYZE'); else await sql!.unsafe('VACUUM ANALYZE');
  /** Replaces a view: CREATE OR REPLACE on Postgres, DROP and CREATE on SQLite (its views are resolved when read). */
  const apply = async (statement: string) => {
    if (!lite) return void (await sql!.unsafe(statement));
    const name = /VIEW (\w+) AS/.exec(statement)![1];
    lite.exec(`DROP VIEW ${name}; ${statement.replace('CREATE OR REPLACE VIEW', 'CREATE VIEW')}`);
  };
  /** The rows and the execution time: EXPLAIN ANALYZE's on Postgres, the second read's on SQLite. */
  const measure = async (q: string): Promise<{ ms: number; rows: string; plan?: unknown }> => {
    if (lite) {
      const rows = JSON.stringify(lite.prepare(q).all());
      const t = performance.now(); lite.prepare(q).all(); return { ms: performance.now() - t, rows };
    }
    const rows = JSON.stringify(await sql!.unsafe(q));
    const plan = await sql!.unsafe(`EXPLAIN (ANALYZE, FORMAT JSON) ${q}`);
    return { ms: (plan[0]!['QUERY PLAN'] as [{ 'Execution Time': number }])[0]['Execution Time'], rows, plan: plan[0]!['QUERY PLAN'] };
  };
  const day = (n: number) => new Date(from + n * 86400000).toISOString().slice(0, 10);
  const profile = (level: 'building' | 'floor', a: string, b: string) => {
    const names = level === 'building' ? 'customer_id, building_id' : 'customer_id, building_id, floor_id';
    return `SELECT ${names}, weekday, local_hour, SUM(period_seconds) AS period_seconds, SUM(known_seconds) AS known_seconds,
                   SUM(occupied_seconds) AS occupied_seconds, MAX(peak_utilization) AS peak_utilization, COUNT(*) AS days
              FROM ${level}_hours WHERE local_date >= '${a}' AND local_date < '${b}' AND working = TRUE
             GROUP BY ${names}, weekday, local_hour ORDER BY ${names}, weekday, local_hour`;
  };
  const runs: Record<string, { ms: number; rows: string }> = {};
  for (const [version, statements] of [['before', before], ['after', after]] as const) {
    for (const s of statements) await apply(s);
    for (const level of ['building', 'floor'] as const) {
      for (const [label, a, b] of [['30 days', day(days - 30), day(days)], ['120 days', day(0), day(days)]] as const) {
        const q = profile(level, a, b);
        const { ms, rows, plan } = await measure(q);
        runs[`${version} ${level} ${label}`] = { ms, rows };
        if (process.env.PLAN && plan && label === '120 days') console.log(JSON.stringify(plan, null, 1).split('\n').filter((l) => /"(Node Type|Actual Total Time|Actual Loops|Join Filter|Hash Cond|Relation Name)"/.test(l)).join('\n'));
        const same = version === 'after' ? (runs[`before ${level} ${label}`]!.rows === rows ? 'same rows' : 'ROWS DIFFER') : '';
        console.log(`${dialect} ${spaces} spaces x ${days} days  ${version.padEnd(6)} ${`${level}_hours profile`.padEnd(24)} ${label.padEnd(9)} ${ms.toFixed(0).padStart(7)} ms  ${same}`);
      }
    }
  }
  lite?.close(); await sql?.end();
} finally { defs.remove(); if (process.env.KEEP) console.log(`kept schema ${db.schema}`); else await db.drop(); await sandbox.stop(); }
