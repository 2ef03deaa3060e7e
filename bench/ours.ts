import { resolveConfig } from '../src/config.ts';
import { silentLogger } from '../src/logger.ts';
import { openForWriting as openDatabase } from '../src/app/database.ts';
import { openStore } from '../src/store/index.ts';
import { runOnce } from '../src/app/run-once.ts';
import { selectStreams } from '../src/app/streams.ts';
import type { RunRequest } from '../src/sync/engine.ts';
import type { SyncJob } from './sync-job.ts';

/**
 * Our side: exactly what `occupancy-sync backfill --from F --to T` does after parsing its flags: resolveConfig from
 * the environment, open (and migrate) the database, select the backfillable streams, runOnce, close. Only the
 * progress reporter and the summary printing are left out.
 *
 * BENCH_AGGREGATES=off (in the bench's environment) opens the store without keeping the time-weighted aggregates, to
 * measure what keeping them costs (docs/performance.md): nothing else changes.
 */
export function benchEnv(job: SyncJob): Record<string, string> {
  return {
    API_BASE_URL: job.sandbox.url,
    API_KEY: job.sandbox.apiKey,
    API_SECRET: job.sandbox.apiSecret,
    CUSTOMER_ID: job.sandbox.customerId,
    DATABASE_URL: job.databaseUrl,
    ...(!job.defaultSettings && { SYNC_PAGE_SIZE: String(job.pageSize), SYNC_STEP: `${job.stepMs}ms` }),
    LOG_LEVEL: 'silent',
  };
}

export async function oursBackfill(job: SyncJob): Promise<void> {
  const config = resolveConfig(benchEnv(job));
  if (job.defaultSettings && (config.sync.pageSize !== job.pageSize || config.sync.stepMs !== job.stepMs)) {
    throw new Error(`the replay was recorded with pages of ${job.pageSize} and windows of ${job.stepMs} ms, but the defaults are ${config.sync.pageSize} and ${config.sync.stepMs} ms`);
  }
  const request: RunRequest = { mode: 'backfill', from: job.from, to: job.to };
  const store = process.env.BENCH_AGGREGATES === 'off' ? await withoutAggregates(config.database) : await openDatabase(config.database);
  try {
    const result = await runOnce({
      config,
      store,
      logger: silentLogger,
      customers: config.customers,
      streams: selectStreams('occupancy', request),
      request,
    });
    const failed = result.outcomes.find((o) => o.status !== 'succeeded');
    if (failed) throw new Error(`backfill ${failed.status}: ${String((failed.error as Error | undefined)?.message ?? failed.note)}`, { cause: failed.error });
  } finally {
    await store.close();
  }
}

async function withoutAggregates(database: Parameters<typeof openStore>[0]) {
  const store = await openStore(database, { maintainAggregates: false });
  await store.migrate();
  return store;
}
