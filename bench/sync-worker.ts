import { fetchAllPages } from './baseline-fetch.ts';
import { flags, report, required } from './child.ts';
import { oursBackfill } from './ours.ts';
import { countReadings, openWriter } from './raw-writers.ts';
import type { SyncJob, SyncResult } from './sync-job.ts';

/**
 * One sync measurement in a fresh process: `--impl ours|raw --job '<SyncJob JSON>'`. The database is already
 * migrated and empty. Times the whole sync (authentication included, process start and migration excluded), then
 * checks that the table holds every expected row, and reports SyncResult with the peak RSS of the process.
 */

const args = flags();
const impl = required(args, 'impl');
const job = JSON.parse(required(args, 'job')) as SyncJob;

const started = performance.now();
if (impl === 'ours') await oursBackfill(job);
else if (impl === 'raw') await raw();
else throw new Error(`--impl must be ours or raw, got ${impl}`);
const ms = performance.now() - started;
const maxRssBytes = process.resourceUsage().maxRSS * 1024;

const rows = await countReadings(job.databaseUrl);
if (rows !== job.expectedRows) throw new Error(`${impl}: the table holds ${rows} rows, expected ${job.expectedRows}`);
report({ rows, ms, rowsPerSecond: (rows / ms) * 1000, maxRssBytes } satisfies SyncResult);

/** The raw baseline: bench/baseline-fetch.ts's pages, bench/raw-writers.ts's writes (SQLite upsert per row, Postgres unnest per page). */
async function raw(): Promise<void> {
  const writer = openWriter(job.databaseUrl, job.sandbox.customerId, 'unnest');
  try {
    await fetchAllPages(job, (nodes) => writer.write(nodes));
  } finally {
    await writer.close();
  }
}
