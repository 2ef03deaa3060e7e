/**
 * The proposal of docs/performance.md ("A portfolio's reports", where the time goes), measured: a Postgres portfolio
 * of 100 floor spaces x 120 days of hourly readings loaded as the portfolio benchmark loads it, then the working
 * sums of space_day_sums over the last 30 days and over all 120, as the view is and with its bucket join written as
 * a LATERAL range per floor space and day (which the primary key (floor_space_key, start_ms) answers). Prints both
 * times and both results (equal); writes nothing.
 *
 *   node --import tsx bench/portfolio-lateral.ts
 */
import postgres from 'postgres';
import { freshDatabase } from '../test/support/databases.ts';
import { runBench, spawnBench } from './child.ts';
import { portfolioDefinitions } from './portfolio.ts';
import type { SandboxInfo } from './sandbox-process.ts';
import { BENCH_PG_URL, dataStart } from './sync-bench.ts';
const days = 120;
const sandbox = spawnBench<SandboxInfo>('sandbox-process.ts', ['--data-start', dataStart(), '--buildings', '4', '--spaces', '25', '--interval-ms', '3600000']);
const db = await freshDatabase('postgres', 'lateral', { migrate: true, baseUrl: BENCH_PG_URL, schemaPrefix: 'osbench_' });
const defs = portfolioDefinitions('60m');
try {
  const info = await sandbox.message;
  const from = Date.parse(info.dataStart);
  await runBench('portfolio-worker.ts', ['--job', JSON.stringify({ sandbox: info, from, to: from + days * 86400000, databaseUrl: db.url, maintain: true, restart: false, expectedRows: days * 24 * 100, env: { SYNC_PAGE_SIZE: '5000', SYNC_STEP: '1d', DEFINITIONS_FILE: defs.file } })], { timeoutMs: 1_200_000 });
  const sql = postgres(BENCH_PG_URL, { max: 1, onnotice: () => {}, connection: { search_path: db.schema! } });
  await sql.unsafe('VACUUM ANALYZE occupancy_buckets');
  const day = (n: number) => new Date(from + n * 86400000).toISOString().slice(0, 10);
  const current = (a: string, b: string) => sql.unsafe(`SELECT SUM(working_known_ms) AS k, SUM(working_occupied_ms) AS o, COUNT(*) AS n FROM space_day_sums WHERE local_date >= '${a}' AND local_date < '${b}'`);
  const lateral = (a: string, b: string) => sql.unsafe(`SELECT SUM(x.k) AS k, SUM(x.o) AS o, COUNT(*) AS n FROM space_service_days s
    LEFT JOIN LATERAL (SELECT COALESCE(SUM(CASE WHEN b.working THEN b.known_ms END), 0) AS k, COALESCE(SUM(CASE WHEN b.working THEN b.occupied_ms END), 0) AS o
                         FROM occupancy_buckets b WHERE b.floor_space_key = s.floor_space_key AND b.start_ms >= s.start_ms AND b.start_ms < s.end_ms) x ON true
    WHERE s.local_date >= '${a}' AND s.local_date < '${b}'`);
  for (const [label, a, b] of [['30 days', day(days - 30), day(days)], ['120 days', day(0), day(days)]] as const) {
    for (const [name, q] of [['space_day_sums (as is)', current], ['LATERAL range per space-day', lateral]] as const) {
      await q(a, b);
      const t = performance.now(); const r = await q(a, b); const ms = performance.now() - t;
      console.log(`${label.padEnd(9)} ${name.padEnd(30)} ${ms.toFixed(0).padStart(6)} ms  ${JSON.stringify(r[0])}`);
    }
  }
  await sql.end();
} finally { defs.remove(); await db.drop(); await sandbox.stop(); }
