import type { Logger } from '../logger.ts';
import type { Store } from '../store/types.ts';
import { toIsoUtc } from '../store/types.ts';

export const ABANDONED_RUN_ERROR = 'process ended without recording an outcome (killed?)';

/**
 * Closes the sync_runs rows of (customer, stream) still marked 'running'. Call it only while holding that pair's
 * lock and before starting a run: the lock dies with its holder (kill -9 included), so a 'running' row nobody holds
 * the lock for belongs to a process that ended without recording its outcome. Uses only the store's public
 * methods (a read-only query to find them, finishRun to close them). Returns how many rows were closed.
 */
export async function closeAbandonedRuns(store: Store, customerId: string, stream: string, now: number, logger: Logger): Promise<number> {
  const rows = await store.query<{ id: number | string }>(
    `SELECT id FROM sync_runs WHERE customer_id = $1 AND stream = $2 AND status = 'running' ORDER BY id`,
    [customerId, stream],
  );
  for (const row of rows) {
    await store.finishRun(Number(row.id), { status: 'interrupted', finishedAt: toIsoUtc(now), error: ABANDONED_RUN_ERROR });
  }
  if (rows.length > 0) {
    logger.warn({ customer: customerId, stream, runs: rows.map((r) => Number(r.id)) }, `marked ${rows.length} run(s) left 'running' by an ended process as interrupted`);
  }
  return rows.length;
}
