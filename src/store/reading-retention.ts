import { sql } from '../../db/schema/drizzle.ts';
import type { Adapter } from './adapter.ts';
import type { ReadingPartitions } from './reading-partitions.ts';
import type { IsoUtc, PrunedReadings } from './types.ts';

/**
 * Readings retention, one pass of at most `limit` rows deleted. On Postgres each month partition wholly older than the
 * cutoff is dropped first, whatever it holds (reading-partitions.ts); what is left older than the cutoff (the month at
 * the edge, the partition 0013 made of a migrated table until its last month is past, the default partition; every
 * row on SQLite, which keeps one table) is deleted row-wise, oldest first through the time index. The time-weighted
 * aggregates are left as they are: `aggregates rebuild` of a range makes them follow (docs/reporting.md).
 */

/** The readings' time as the time index serves it, compared with canonical text (db/migrations/sqlite/0009). */
const INDEXED_TIME = {
  sqlite: sql.raw(`strftime('%Y-%m-%dT%H:%M:%fZ', observed_ms / 1000.0, 'unixepoch')`),
  postgres: sql.raw('observed_at'),
};
const KEY = { sqlite: sql.raw('floor_space_key, observed_ms'), postgres: sql.raw('floor_space_key, observed_at') };

export async function pruneReadings(db: Adapter, partitions: ReadingPartitions, before: IsoUtc, limit: number): Promise<PrunedReadings> {
  const dropped = await partitions.dropBefore(Date.parse(before));
  const time = INDEXED_TIME[db.dialect];
  const key = KEY[db.dialect];
  const rows = await db.run(sql`
    DELETE FROM occupancy_readings WHERE (${key}) IN (
      SELECT ${key} FROM occupancy_readings WHERE ${time} < ${before} ORDER BY ${time} LIMIT ${limit})`);
  return { partitions: dropped, rows };
}
