import { sql } from '../../db/schema/drizzle.ts';
import type { Adapter, Executor } from './adapter.ts';
import type { ReadingPartitions } from './reading-partitions.ts';
import type { IsoUtc, PrunedReadings } from './types.ts';

/**
 * Readings retention, one pass of at most `limit` rows deleted. On Postgres each month partition wholly older than the
 * cutoff is dropped first, whatever it holds (reading-partitions.ts); what is left older than the cutoff (the month at
 * the edge, the partition 0013 made of a migrated table until its last month is past, the default partition; every
 * row on SQLite, which keeps one table) is deleted row-wise, oldest first through the time index. The time-weighted
 * aggregates of the hours before the cutoff are left as they are (`aggregates rebuild` of a range makes them follow:
 * docs/reporting.md). Those after it that a deleted reading's hold reached (a max hold past the cutoff) were computed
 * with it: in the delete's transaction their floor spaces are marked stale from the cutoff, so the next refresh
 * computes them from the readings kept, as a rebuild does (kept and rebuilt stay equal).
 */

/** The readings' time as the time index serves it, compared with canonical text (db/migrations/sqlite/0009). */
const INDEXED_TIME = {
  sqlite: sql.raw(`strftime('%Y-%m-%dT%H:%M:%fZ', observed_ms / 1000.0, 'unixepoch')`),
  postgres: sql.raw('observed_at'),
};
const KEY = { sqlite: sql.raw('floor_space_key, observed_ms'), postgres: sql.raw('floor_space_key, observed_at') };

export async function pruneReadings(db: Adapter, partitions: ReadingPartitions, before: IsoUtc, limit: number, at: IsoUtc): Promise<PrunedReadings> {
  const dropped = await partitions.dropBefore(Date.parse(before));
  const time = INDEXED_TIME[db.dialect];
  const key = KEY[db.dialect];
  return db.transaction(async (tx) => {
    const rows = await tx.run(sql`
      DELETE FROM occupancy_readings WHERE (${key}) IN (
        SELECT ${key} FROM occupancy_readings WHERE ${time} < ${before} ORDER BY ${time} LIMIT ${limit})`);
    if (rows > 0 || dropped.length > 0) await staleAfterCutoff(tx, Date.parse(before), at);
    return { partitions: dropped, rows };
  });
}

/**
 * Marks stale, from the cutoff, every floor space with a bucket that a reading before the cutoff could reach: from the
 * bucket holding the cutoff (an hour before it at most) to the longest max hold any building's buckets were computed
 * with past it. One page row a customer, as a poll page records its own (aggregate-page-invalidations.ts).
 */
async function staleAfterCutoff(tx: Executor, cutoffMs: number, at: IsoUtc): Promise<void> {
  const rows = await tx.all<{ c: string; k: number | string }>(sql`
    SELECT DISTINCT f.customer_id AS c, b.floor_space_key AS k FROM occupancy_buckets b JOIN floor_spaces f ON f.floor_space_key = b.floor_space_key
     WHERE b.start_ms >= ${cutoffMs - HOUR_MS} AND b.start_ms < ${cutoffMs} + (SELECT COALESCE(max(max_hold_ms), 0) FROM aggregate_calendars)
     ORDER BY c, k`);
  const byCustomer = new Map<string, number[]>();
  for (const r of rows) {
    const keys = byCustomer.get(r.c);
    if (keys) keys.push(Number(r.k));
    else byCustomer.set(r.c, [Number(r.k)]);
  }
  for (const [customerId, keys] of byCustomer) {
    await tx.run(sql`INSERT INTO aggregate_page_invalidations (customer_id, spans, invalidated_at) VALUES (${customerId}, ${JSON.stringify([[cutoffMs, cutoffMs, ...keys]])}, ${at})`);
  }
}

const HOUR_MS = 3_600_000;
