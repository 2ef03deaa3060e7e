import Database from 'better-sqlite3';
import postgres from 'postgres';
import { rawPostgres } from './baseline-postgres.ts';
import { rawSqlite } from './baseline-sqlite.ts';
import { flags, report, required } from './child.ts';
import { oursBackfill } from './ours.ts';
import type { SyncJob, SyncResult } from './sync-job.ts';

/**
 * One sync measurement in a fresh process: `--impl ours|raw --job '<SyncJob JSON>'`. The database is already
 * migrated and empty. Times the whole sync (authentication included, process start and migration excluded), then
 * checks that the table holds every expected row, and reports SyncResult with the peak RSS of the process.
 */

const args = flags();
const impl = required(args, 'impl');
const job = JSON.parse(required(args, 'job')) as SyncJob;
const sqlitePath = job.databaseUrl.startsWith('file:') ? job.databaseUrl.slice('file:'.length) : undefined;

const started = performance.now();
if (impl === 'ours') await oursBackfill(job);
else if (impl === 'raw' && sqlitePath) await rawSqlite(job, sqlitePath);
else if (impl === 'raw') await rawPostgres(job);
else throw new Error(`--impl must be ours or raw, got ${impl}`);
const ms = performance.now() - started;
const maxRssBytes = process.resourceUsage().maxRSS * 1024;

const rows = await countRows();
if (rows !== job.expectedRows) throw new Error(`${impl}: the table holds ${rows} rows, expected ${job.expectedRows}`);
report({ rows, ms, rowsPerSecond: (rows / ms) * 1000, maxRssBytes } satisfies SyncResult);

async function countRows(): Promise<number> {
  if (sqlitePath) {
    const db = new Database(sqlitePath, { readonly: true });
    try {
      return (db.prepare('SELECT count(*) AS n FROM occupancy').get() as { n: number }).n;
    } finally {
      db.close();
    }
  }
  const url = new URL(job.databaseUrl);
  const schema = url.searchParams.get('schema')!;
  url.searchParams.delete('schema');
  const sql = postgres(url.toString(), { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql.unsafe<{ n: string }[]>(`SELECT count(*) AS n FROM "${schema}".occupancy`);
    return Number(row!.n);
  } finally {
    await sql.end({ timeout: 5 });
  }
}
