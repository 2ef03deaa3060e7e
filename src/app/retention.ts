import type { Clock } from '../clock.ts';
import type { Logger } from '../logger.ts';
import type { Store } from '../store/types.ts';
import { toIsoUtc } from '../time.ts';

/**
 * Retention for the daemons (`serve`, `schedule`): at start and then every hour,
 * - finished runs older than RUN_HISTORY_RETENTION are deleted in batches (the latest run and the latest success of
 *   every stream stay, so status and /healthz never lose what they show). At 1,000 customers and two streams synced
 *   every 5 minutes, sync_runs grows by about 576,000 rows a day without it;
 * - readings observed longer ago than READINGS_RETENTION (off by default) go: on Postgres a month wholly older is its
 *   partition dropped, the month at the edge deleted row-wise in batches; on SQLite row-wise (docs/operations.md).
 */

export const RETENTION_EVERY_MS = 3_600_000;
const BATCH = 5_000;

export interface Retention {
  /** One pass now; resolves to the number of runs deleted. */
  prune(): Promise<number>;
  stop(): Promise<void>;
}

export interface RetentionOptions {
  store: Store;
  /** RUN_HISTORY_RETENTION; 0 keeps every run. */
  retentionMs: number;
  /** READINGS_RETENTION; 0 (the default) keeps every reading. */
  readingsRetentionMs?: number;
  clock: Clock;
  logger: Logger;
  everyMs?: number;
}

export function startRetention(options: RetentionOptions): Retention {
  const { store, retentionMs, clock, logger } = options;
  const readingsMs = options.readingsRetentionMs ?? 0;
  let running: Promise<number> | undefined;
  let stopped = false;

  const pruneRuns = async (): Promise<number> => {
    const before = toIsoUtc(clock.now() - retentionMs);
    let total = 0;
    for (;;) {
      const deleted = await store.pruneRuns(before, BATCH);
      total += deleted;
      if (deleted < BATCH || stopped) break;
    }
    if (total > 0) logger.info({ deleted: total, before }, `deleted ${total} run(s) that finished before ${before} (RUN_HISTORY_RETENTION)`);
    return total;
  };
  const pruneReadings = async (): Promise<void> => {
    const before = toIsoUtc(clock.now() - readingsMs);
    const partitions: string[] = [];
    let rows = 0;
    for (;;) {
      const pass = await store.pruneReadings(before, BATCH);
      partitions.push(...pass.partitions);
      rows += pass.rows;
      if (pass.rows < BATCH || stopped) break;
    }
    if (partitions.length > 0) logger.info({ partitions, before }, `dropped ${partitions.length} partition(s) of readings observed before ${before}: ${partitions.join(', ')} (READINGS_RETENTION)`);
    if (rows > 0) logger.info({ deleted: rows, before }, `deleted ${rows} reading(s) observed before ${before} (READINGS_RETENTION)`);
  };

  const prune = (): Promise<number> => {
    if (stopped || (retentionMs <= 0 && readingsMs <= 0)) return Promise.resolve(0);
    running ??= (async () => {
      const runs = retentionMs > 0 ? await pruneRuns() : 0;
      if (readingsMs > 0 && !stopped) await pruneReadings();
      return runs;
    })().finally(() => (running = undefined));
    return running;
  };
  const pass = () => void prune().catch((error: unknown) => logger.warn({ err: error }, 'could not delete old runs or readings; the next pass retries'));

  const timer = retentionMs > 0 || readingsMs > 0 ? setInterval(pass, options.everyMs ?? RETENTION_EVERY_MS) : undefined;
  timer?.unref();
  pass();
  return {
    prune,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running?.catch(() => 0);
    },
  };
}
