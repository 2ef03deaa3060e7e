import { sql } from '../../db/schema/drizzle.ts';
import { localDays, startOfLocalDate } from '../working-time.ts';
import type { Executor } from './adapter.ts';
import { KEY_CHUNK } from './aggregate-plan.ts';

/**
 * The daily rollup occupancy_days (docs/reporting.md, "The daily rollup"): per floor space and local date, the sums
 * of that day's buckets, over all of them and over the working ones. It is derived from occupancy_buckets alone and
 * refreshed in SQL, in the transaction that wrote the buckets: the touched days are deleted and summed again from the
 * buckets (a day left with no bucket keeps no row), so a maintained row and a rebuilt one are the same sums of the
 * same buckets. The same statements run on both dialects (`working` is a boolean or 0/1, both true in CASE WHEN).
 */

const SUMS = sql.raw(`
  SELECT floor_space_key, local_date, SUM(known_ms), SUM(occupied_ms), SUM(headcount_ms), SUM(headcount_known_ms), SUM(readings),
         MAX(peak_headcount),
         SUM(CASE WHEN working THEN known_ms ELSE 0 END), SUM(CASE WHEN working THEN occupied_ms ELSE 0 END),
         SUM(CASE WHEN working THEN headcount_ms ELSE 0 END), SUM(CASE WHEN working THEN headcount_known_ms ELSE 0 END),
         MAX(CASE WHEN working THEN peak_headcount END)
    FROM occupancy_buckets`);
const COLUMNS = sql.raw(`
  INSERT INTO occupancy_days (floor_space_key, local_date, known_ms, occupied_ms, headcount_ms, headcount_known_ms, readings,
                              peak_headcount, working_known_ms, working_occupied_ms, working_headcount_ms,
                              working_headcount_known_ms, working_peak_headcount)`);

const keyList = (keys: readonly number[]) => sql.join(keys.map((k) => sql`${k}`), sql`, `);

/**
 * Sums again the days of `keys` (floor spaces of the building of `zone`) from local date `first` to `last`
 * (inclusive) from their buckets: a bucket belongs to the day its start is in, so the buckets read are those
 * starting in those days.
 */
export async function refreshDays(tx: Executor, zone: string, keys: readonly number[], first: string, last: string): Promise<void> {
  if (keys.length === 0 || last < first) return;
  const days = localDays(zone, startOfLocalDate(zone, first), startOfLocalDate(zone, last) + 1);
  if (days.length === 0) return;
  const lo = days[0]!.start;
  const hi = days[days.length - 1]!.end;
  for (let i = 0; i < keys.length; i += KEY_CHUNK) {
    const chunk = keyList(keys.slice(i, i + KEY_CHUNK));
    await tx.run(sql`DELETE FROM occupancy_days WHERE floor_space_key IN (${chunk}) AND local_date >= ${first} AND local_date <= ${last}`);
    await tx.run(sql`${COLUMNS} ${SUMS} WHERE floor_space_key IN (${chunk}) AND start_ms >= ${lo} AND start_ms < ${hi} GROUP BY floor_space_key, local_date`);
  }
}

/** Deletes every day of these floor spaces (before their buckets are all made again). */
export async function clearDays(tx: Executor, keys: readonly number[]): Promise<void> {
  for (let i = 0; i < keys.length; i += KEY_CHUNK) {
    await tx.run(sql`DELETE FROM occupancy_days WHERE floor_space_key IN (${keyList(keys.slice(i, i + KEY_CHUNK))})`);
  }
}
