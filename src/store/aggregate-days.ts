import { sql } from '../../db/schema/drizzle.ts';
import type { Dialect } from '../config.ts';
import { localDays, startOfLocalDate } from '../working-time.ts';
import type { Executor } from './adapter.ts';
import { keyIn } from './key-list.ts';

/**
 * The daily rollup occupancy_days (docs/reporting.md, "The daily rollup"): per floor space and local date, the sums
 * of that day's buckets, over all of them and over the working ones. It is derived from occupancy_buckets alone and
 * refreshed in SQL, in the transaction that wrote the buckets: the touched days are deleted and summed again from the
 * buckets (a day left with no bucket keeps no row), so a maintained row and a rebuilt one are the same sums of the
 * same buckets. The same sums run on both dialects (`working` is a boolean or 0/1, both true in CASE WHEN).
 */

const SUMS = `
  SELECT b.floor_space_key, b.local_date, SUM(b.known_ms), SUM(b.occupied_ms), SUM(b.headcount_ms), SUM(b.headcount_known_ms), SUM(b.readings),
         MAX(b.peak_headcount),
         SUM(CASE WHEN b.working THEN b.known_ms ELSE 0 END), SUM(CASE WHEN b.working THEN b.occupied_ms ELSE 0 END),
         SUM(CASE WHEN b.working THEN b.headcount_ms ELSE 0 END), SUM(CASE WHEN b.working THEN b.headcount_known_ms ELSE 0 END),
         MAX(CASE WHEN b.working THEN b.peak_headcount END)`;
const COLUMNS = `
  INSERT INTO occupancy_days (floor_space_key, local_date, known_ms, occupied_ms, headcount_ms, headcount_known_ms, readings,
                              peak_headcount, working_known_ms, working_occupied_ms, working_headcount_ms,
                              working_headcount_known_ms, working_peak_headcount)`;

/**
 * The two statements of a refresh of days (Executor.bulk): each floor space's days from local date `first` to `last`
 * (inclusive) deleted, a row per space, then summed again from the buckets starting in those days ([lo, hi)) in one
 * statement: Postgres unnests a row per space, SQLite reads them as one JSON array of [key, lo, hi] (`json_each`
 * outside, the buckets' primary key inside); an INSERT ... SELECT per space cost SQLite a sort per space, 60 us each.
 */
const STATEMENTS: Readonly<Record<Dialect, { remove: string; sum: string }>> = {
  sqlite: {
    remove: 'DELETE FROM occupancy_days WHERE floor_space_key = ? AND local_date >= ? AND local_date <= ?',
    sum:
      `${COLUMNS} ${SUMS} FROM json_each(?) AS u CROSS JOIN occupancy_buckets b ` +
      'ON b.floor_space_key = u.value ->> 0 AND b.start_ms >= u.value ->> 1 AND b.start_ms < u.value ->> 2 GROUP BY b.floor_space_key, b.local_date',
  },
  postgres: {
    remove: 'DELETE FROM occupancy_days d USING unnest($1::int4[], $2::text[], $3::text[]) AS u(k, a, z) WHERE d.floor_space_key = u.k AND d.local_date >= u.a AND d.local_date <= u.z',
    sum:
      `${COLUMNS} ${SUMS} FROM unnest($1::int4[], $2::int8[], $3::int8[]) AS u(k, lo, hi) ` +
      'JOIN occupancy_buckets b ON b.floor_space_key = u.k AND b.start_ms >= u.lo AND b.start_ms < u.hi GROUP BY b.floor_space_key, b.local_date',
  },
};

/** A floor space's days to sum again: local dates `first` to `last` (inclusive) of its building's `zone`. */
export interface DayRange {
  key: number;
  zone: string;
  first: string;
  last: string;
}

/**
 * Sums again the days of floor spaces from their buckets (each space at most once in `ranges`): a bucket belongs to
 * the day its start is in, so the buckets read are those starting in those days. Two statements for all of them.
 */
export async function refreshDays(tx: Executor, ranges: readonly DayRange[]): Promise<void> {
  const { dialect } = tx;
  const removed: unknown[] = [];
  const summed: Array<[key: number, lo: number, hi: number]> = [];
  // The spaces of a building refreshed together share their dates: each zone's dates become instants once.
  const bounds = new Map<string, [number, number] | undefined>();
  for (const r of ranges) {
    if (r.last < r.first) continue;
    const id = `${r.zone}\u0000${r.first}\u0000${r.last}`;
    if (!bounds.has(id)) {
      const days = localDays(r.zone, startOfLocalDate(r.zone, r.first), startOfLocalDate(r.zone, r.last) + 1);
      bounds.set(id, days.length === 0 ? undefined : [days[0]!.start, days[days.length - 1]!.end]);
    }
    const span = bounds.get(id);
    if (!span) continue;
    removed.push(r.key, r.first, r.last);
    summed.push([r.key, span[0], span[1]]);
  }
  if (summed.length === 0) return;
  const statements = STATEMENTS[dialect];
  await tx.bulk(statements.remove, 3, removed);
  if (dialect === 'sqlite') await tx.bulk(statements.sum, 1, [JSON.stringify(summed)]);
  else await tx.bulk(statements.sum, 3, summed.flat());
}

/** Deletes every day of these floor spaces (before their buckets are all made again). */
export async function clearDays(tx: Executor, keys: readonly number[]): Promise<void> {
  if (keys.length > 0) await tx.run(sql`DELETE FROM occupancy_days WHERE ${keyIn(tx.dialect, sql`floor_space_key`, keys)}`);
}
