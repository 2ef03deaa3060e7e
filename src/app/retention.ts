import type { Clock } from '../clock.ts';
import type { Logger } from '../logger.ts';
import type { Store } from '../store/types.ts';
import { toIsoUtc } from '../time.ts';

/**
 * Retention: the daemons (`serve`, `schedule`) at start and then every hour, `occupancy-sync prune` once,
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

/**
 * What one retention pass deleted: runs (undefined: RUN_HISTORY_RETENTION off) and readings (READINGS_RETENTION off,
 * or the pass stopped before them), and whether `stopped` cut it short (the next pass deletes the rest).
 */
export interface Pruned {
  runs?: { deleted: number; before: string };
  readings?: { partitions: string[]; rows: number; before: string };
  stopped: boolean;
}

/**
 * One pass, in batches of BATCH rows until a batch comes back short (or `stopped` says so between two): finished runs
 * older than `retentionMs`, then readings observed before `readingsRetentionMs` ago. The daemons run it every hour
 * (startRetention); `occupancy-sync prune` runs it once, for cron and systemd timers.
 */
export async function pruneOnce(options: Omit<RetentionOptions, 'logger' | 'everyMs'>, stopped: () => boolean = () => false): Promise<Pruned> {
  const { store, retentionMs, clock } = options;
  const readingsMs = options.readingsRetentionMs ?? 0;
  const out: Pruned = { stopped: false };
  if (retentionMs > 0) {
    const before = toIsoUtc(clock.now() - retentionMs);
    let deleted = 0;
    for (;;) {
      const batch = await store.pruneRuns(before, BATCH);
      deleted += batch;
      if (batch < BATCH) break;
      if (stopped()) return { ...out, runs: { deleted, before }, stopped: true };
    }
    out.runs = { deleted, before };
  }
  if (readingsMs > 0) {
    if (stopped()) return { ...out, stopped: true };
    const before = toIsoUtc(clock.now() - readingsMs);
    const partitions: string[] = [];
    let rows = 0;
    for (;;) {
      const pass = await store.pruneReadings(before, BATCH);
      partitions.push(...pass.partitions);
      rows += pass.rows;
      if (pass.rows < BATCH) break;
      if (stopped()) return { ...out, readings: { partitions, rows, before }, stopped: true };
    }
    out.readings = { partitions, rows, before };
  }
  return out;
}

/** The log lines of a pass (none for what deleted nothing), as the daemons write them. */
export function logPruned(logger: Logger, pruned: Pruned): void {
  const { runs, readings } = pruned;
  if (runs && runs.deleted > 0) logger.info({ deleted: runs.deleted, before: runs.before }, `deleted ${runs.deleted} run(s) that finished before ${runs.before} (RUN_HISTORY_RETENTION)`);
  if (readings && readings.partitions.length > 0) {
    logger.info({ partitions: readings.partitions, before: readings.before }, `dropped ${readings.partitions.length} partition(s) of readings observed before ${readings.before}: ${readings.partitions.join(', ')} (READINGS_RETENTION)`);
  }
  if (readings && readings.rows > 0) logger.info({ deleted: readings.rows, before: readings.before }, `deleted ${readings.rows} reading(s) observed before ${readings.before} (READINGS_RETENTION)`);
}

export function startRetention(options: RetentionOptions): Retention {
  const { retentionMs, logger } = options;
  const readingsMs = options.readingsRetentionMs ?? 0;
  let running: Promise<number> | undefined;
  let stopped = false;

  const prune = (): Promise<number> => {
    if (stopped || (retentionMs <= 0 && readingsMs <= 0)) return Promise.resolve(0);
    running ??= (async () => {
      const pruned = await pruneOnce(options, () => stopped);
      logPruned(logger, pruned);
      return pruned.runs?.deleted ?? 0;
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
