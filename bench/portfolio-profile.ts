import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { freshDatabase } from '../test/support/databases.ts';
import { flags, runBench } from './child.ts';
import { formatFrames, summarize, topOwnTotal, topSelf } from './cpuprofile.ts';
import type { PortfolioLoad, PortfolioLoadResult } from './portfolio-worker.ts';
import { portfolioDefinitions } from './portfolio.ts';
import { BENCH_PG_URL, SyncBench } from './sync-bench.ts';

/**
 * Where keeping the aggregates spends the sync's time, on Postgres (docs/performance.md, "A portfolio's reports"):
 * the same backfill as the portfolio benchmark's cost figure (5-minute sensors, 1,250 floor spaces listed first,
 * default settings, a fresh database), with and without the aggregates, each under node --cpu-prof, while this process samples
 * pg_stat_activity every 20 ms (what the server is doing, by statement and wait). Afterwards, pg_stat_user_tables
 * says how many bucket rows were written for each one kept. Prints the figures; writes nothing.
 *
 *   node --import tsx bench/portfolio-profile.ts [--readings 50000]
 *
 * The sampler keeps the backends holding a lock on a table of the run's schema (other clients of a shared server are
 * left out): a statement counts once it has opened a table of ours.
 */

const readings = Number(flags().get('readings') ?? 50_000);

async function profiled(sync: SyncBench, maintain: boolean, definitions: string): Promise<void> {
  const db = await freshDatabase('postgres', `aggprofile`, { migrate: true, baseUrl: BENCH_PG_URL, schemaPrefix: 'osbench_' });
  const dir = mkdtempSync(join(tmpdir(), 'occupancy-sync-aggprofile-'));
  const pg = postgres(BENCH_PG_URL, { max: 1, onnotice: () => {} });
  try {
    const job = await sync.job(readings, db.url);
    const load: PortfolioLoad = { sandbox: job.sandbox, from: job.from, to: job.to, databaseUrl: db.url, maintain, restart: false, expectedRows: job.expectedRows, env: { DEFINITIONS_FILE: definitions } };
    const seen = new Map<string, number>();
    let sampling = true;
    let samples = 0;
    const sampler = (async () => {
      while (sampling) {
        samples++;
        const rows = await pg<{ query: string; wait: string }[]>`
          SELECT a.query, COALESCE(a.wait_event_type || ':' || a.wait_event, 'running') AS wait FROM pg_stat_activity a
           WHERE a.state = 'active' AND a.pid <> pg_backend_pid() AND a.backend_type = 'client backend'
             AND EXISTS (SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation JOIN pg_namespace n ON n.oid = c.relnamespace
                          WHERE l.pid = a.pid AND n.nspname = ${db.schema!})`;
        for (const r of rows) {
          const key = `${r.wait.padEnd(22)} ${r.query.replace(/\s+/g, ' ').trim().slice(0, 100)}`;
          seen.set(key, (seen.get(key) ?? 0) + 1);
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    let result: PortfolioLoadResult;
    try {
      result = await runBench<PortfolioLoadResult>('portfolio-worker.ts', ['--job', JSON.stringify(load)], { nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${dir}`] });
    } finally {
      sampling = false;
      await sampler;
    }
    console.log(`\n## ${maintain ? 'With' : 'Without'} the aggregates: ${result.rows} readings in ${(result.ms / 1000).toFixed(2)} s, ${(result.cpuMs / 1000).toFixed(2)} CPU s (process)`);
    const tables = await pg.unsafe<{ relname: string; n_tup_ins: string; n_tup_del: string; n_live_tup: string }[]>(
      // The readings may be partitioned by month: a partitioned table's rows are counted in its partitions.
      `SELECT CASE WHEN relname LIKE 'occupancy_readings%' THEN 'occupancy_readings' ELSE relname END AS relname,
              SUM(n_tup_ins) AS n_tup_ins, SUM(n_tup_del) AS n_tup_del, SUM(n_live_tup) AS n_live_tup
         FROM pg_stat_user_tables WHERE schemaname = $1 AND (relname LIKE 'occupancy_readings%' OR relname = 'occupancy_buckets') GROUP BY 1 ORDER BY 1`,
      [db.schema!],
    );
    for (const t of tables) console.log(`${t.relname}: ${t.n_tup_ins} rows inserted, ${t.n_tup_del} deleted, ${t.n_live_tup} kept`);
    console.log(`\nServer, ${samples} samples of pg_stat_activity (one per 20 ms; a sample may hold several backends):`);
    for (const [key, n] of [...seen].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`${String(n).padStart(5)} ${key}`);
    const profile = summarize(join(dir, readdirSync(dir)[0]!));
    console.log('\nClient, by self time:');
    console.log(formatFrames(topSelf(profile.frames, 12), 'self').join('\n'));
    console.log('\nClient, our frames by total time:');
    console.log(formatFrames(topOwnTotal(profile.frames, 15), 'total').join('\n'));
  } finally {
    await pg.end({ timeout: 5 });
    rmSync(dir, { recursive: true, force: true });
    await db.drop();
  }
}

const sync = await SyncBench.start((line) => process.stderr.write(`${line}\n`));
const definitions = portfolioDefinitions('5m');
try {
  await profiled(sync, false, definitions.file);
  await profiled(sync, true, definitions.file);
} finally {
  definitions.remove();
  await sync.close();
}
