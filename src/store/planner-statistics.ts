import type { Adapter } from './adapter.ts';
import { quoted } from './identifiers.ts';

/**
 * The planner's statistics of the tables a run changed much (docs/reporting.md, "Planner statistics"). The reporting
 * views join the floor spaces, the calendar and the daily rollup; planned without statistics (a table loaded but never
 * analyzed), Postgres nests those joins and a portfolio's report takes several times as long as it does once the
 * tables are analyzed. Autovacuum analyzes a table once it has changed by its threshold, but it may be off (or behind a
 * backfill), and it never analyzes a partitioned table's parent (occupancy_readings), which is what a query of the whole
 * table is planned with. So after a run the store analyzes, in its own schema:
 * - each table changed since its last analysis by more than autovacuum's threshold (autovacuum_analyze_threshold +
 *   autovacuum_analyze_scale_factor x its rows, the server's settings), whether or not autovacuum is on;
 * - each partitioned table whose partitions' rows differ from what its last analysis counted by that threshold (or
 *   that was never analyzed and holds rows).
 * ANALYZE samples a bounded number of rows of each table (default_statistics_target), so its cost does not grow with
 * a table's rows (a partitioned table's: a sample per partition). SKIP_LOCKED passes over a table another session is
 * analyzing or altering: that one is done next time.
 *
 * Never the queues of stale ranges (QUEUES): they hold what is pending at one instant, nothing at the end of most
 * runs, over pages of dead rows; statistics taken then say empty while the next run fills them, and a statement
 * planned for an empty table reads a full one (the refresh's delete is written to be immune: aggregate-invalidations.ts).
 *
 * SQLite is left as it is: its views are written for its planner without statistics (db/views/sqlite.sql), and a
 * portfolio's report read the same with the tables analyzed (`PRAGMA optimize`) as without (docs/performance.md).
 */

/** The store's queues: left to autovacuum, whose statistics of them matter to no statement. */
const QUEUES = ['aggregate_invalidations', 'aggregate_page_invalidations'];

/** The tables of the store's schema whose statistics are out of date by autovacuum's rule, QUEUES ($1) aside. */
const STALE_POSTGRES = `
  WITH rule AS (SELECT current_setting('autovacuum_analyze_threshold')::float8 AS base,
                       current_setting('autovacuum_analyze_scale_factor')::float8 AS scale)
  SELECT c.relname AS name, (SELECT p.relname FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent WHERE i.inhrelid = c.oid) AS parent
    FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid CROSS JOIN rule
   WHERE s.schemaname = current_schema() AND c.relkind = 'r' AND c.relname <> ALL($1::text[])
     AND s.n_mod_since_analyze > rule.base + rule.scale * GREATEST(c.reltuples, 0)
  UNION ALL
  SELECT p.relname AS name, NULL AS parent
    FROM pg_class p JOIN pg_namespace n ON n.oid = p.relnamespace CROSS JOIN rule
   WHERE n.nspname = current_schema() AND p.relkind = 'p'
     AND ABS((SELECT COALESCE(SUM(s.n_live_tup), 0) FROM pg_inherits i JOIN pg_stat_user_tables s ON s.relid = i.inhrelid
               WHERE i.inhparent = p.oid) - GREATEST(p.reltuples, 0)) > rule.base + rule.scale * GREATEST(p.reltuples, 0)
   ORDER BY name`;

/**
 * Brings the planner's statistics up to date where a run changed them much; resolves to the tables named to ANALYZE
 * (a partitioned table stands for its partitions).
 */
export async function updatePlannerStatistics(db: Adapter): Promise<string[]> {
  if (db.dialect === 'sqlite') return [];
  const stale = await db.query<{ name: string; parent: string | null }>(STALE_POSTGRES, [QUEUES]);
  // ANALYZE of a partitioned table analyzes each of its partitions too: a partition is not named beside its parent.
  const named = new Set(stale.map((t) => t.name));
  const tables = stale.filter((t) => t.parent === null || !named.has(t.parent)).map((t) => t.name);
  if (tables.length === 0) return [];
  await db.exec(`ANALYZE (SKIP_LOCKED) ${tables.map(quoted).join(', ')}`);
  return tables;
}
