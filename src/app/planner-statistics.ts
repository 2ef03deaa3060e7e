import { messageOf } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { Store } from '../store/types.ts';

/**
 * After a run (a sync, a backfill, a daemon's job, `aggregates rebuild`) or a receiver's deliveries (`after` names
 * which in the log): the planner's statistics of the tables they changed much are brought up to date
 * (src/store/planner-statistics.ts), so that the reports read next are planned with them. Housekeeping: a failure is
 * one warning and never the run's outcome; the next run, or autovacuum, does it.
 */
export async function updatePlannerStatisticsAfterRun(store: Store, logger: Logger, after = 'the run'): Promise<void> {
  try {
    const tables = await store.updatePlannerStatistics();
    if (tables.length > 0) logger.debug({ tables }, `analyzed ${tables.length} table(s) ${after} changed much, for the query planner: ${tables.join(', ')}`);
  } catch (error) {
    logger.warn({ err: error }, `the query planner's statistics were not brought up to date after ${after} (the next run or autovacuum does it): ${messageOf(error)}`);
  }
}
