import { sql } from '../../db/schema/drizzle.ts';
import type { Executor } from './adapter.ts';
import { keyIn } from './key-list.ts';
import { KEY_CHUNK, type Span } from './aggregate-plan.ts';
import type { BuildingCalendar } from './aggregate-calendars.ts';
import { clearDays } from './aggregate-days.ts';
import { bucketRangeOf, clearBuildingFloors, refreshFloorsOf, type BucketRange } from './aggregate-floors.ts';
import { INSTANTS, recomputeSpans } from './aggregates.ts';

/**
 * Rebuilds (`aggregates rebuild`, a calendar that changed, a floor space moved to another building): the buckets of
 * floor spaces recomputed from all their readings, or over a range, with aggregates.ts's recomputeSpans.
 */

/** The floor spaces of a customer's building ('' : of no known building), by key. */
export async function spacesOf(tx: Executor, customerId: string, buildingId: string): Promise<number[]> {
  const rows = await tx.all<{ k: number | string }>(sql`
    SELECT floor_space_key AS k FROM floor_spaces WHERE customer_id = ${customerId} AND COALESCE(building_id, '') = ${buildingId} ORDER BY floor_space_key`);
  return rows.map((r) => Number(r.k));
}

/**
 * Recomputes a building's aggregates from its readings: all of them (every bucket and calendar day of the building
 * replaced), or the buckets touching [fromMs, toMs). The caller holds the building's lock.
 */
export async function rebuildBuilding(tx: Executor, customerId: string, calendar: BuildingCalendar, options: { range?: { fromMs: number; toMs: number }; calendarChanged: boolean }): Promise<{ spaces: number; buckets: number }> {
  const keys = await spacesOf(tx, customerId, calendar.buildingId);
  const { range } = options;
  if (range) {
    // What the spaces hold bounds the work, whatever was asked (an open end is the start or end of time), and it is
    // done a day at a time, as a refresh does: a year of a building's readings is never held at once.
    const held = await heldRangeOf(tx, keys, calendar.maxHoldMs);
    const fromMs = Math.max(range.fromMs, held?.fromMs ?? range.toMs);
    const toMs = Math.min(range.toMs, held?.toMs ?? range.fromMs);
    if (fromMs >= toMs) return { spaces: keys.length, buckets: 0 };
    return { spaces: keys.length, buckets: await recomputeSpans(tx, customerId, [{ calendar, spans: keys.map((key) => ({ key, fromMs, toMs })) }]) };
  }
  // Days stay once made (a commit never removes one); only another calendar makes them all again.
  if (options.calendarChanged) await tx.run(sql`DELETE FROM calendar_days WHERE customer_id = ${customerId} AND building_id = ${calendar.buildingId}`);
  // Every floor row of the building is made again from its spaces' buckets (rebuildSpaces sums their whole range).
  await clearBuildingFloors(tx, customerId, calendar.buildingId);
  return { spaces: keys.length, buckets: await rebuildSpaces(tx, customerId, calendar, keys) };
}

/**
 * The range in which these floor spaces hold anything a rebuild can change: from their first reading or bucket to a
 * max hold past their last reading, or their last bucket.
 */
async function heldRangeOf(tx: Executor, keys: readonly number[], maxHoldMs: number): Promise<BucketRange | undefined> {
  let lo = Infinity;
  let hi = -Infinity;
  for (const span of await readingSpansOf(tx, keys, maxHoldMs)) {
    lo = Math.min(lo, span.fromMs);
    hi = Math.max(hi, span.toMs);
  }
  const buckets = await bucketRangeOf(tx, keys);
  if (buckets) {
    lo = Math.min(lo, buckets.fromMs);
    hi = Math.max(hi, buckets.toMs);
  }
  return lo < hi ? { fromMs: lo, toMs: hi } : undefined;
}

/**
 * Each floor space's readings' span: from its first reading to a max hold past its last (a space without readings has
 * none). The ends are read by the primary key, one descent each, however many readings a space holds; KEY_CHUNK
 * spaces a statement.
 */
async function readingSpansOf(tx: Executor, keys: readonly number[], maxHoldMs: number): Promise<Span[]> {
  const { dialect } = tx;
  const t = INSTANTS[dialect];
  const out: Span[] = [];
  for (let i = 0; i < keys.length; i += KEY_CHUNK) {
    const chunk = keys.slice(i, i + KEY_CHUNK);
    // Ordered by the stored column, not the expression: the primary key serves both ends.
    const first = sql`(SELECT ${t.at} FROM occupancy_readings r WHERE r.floor_space_key = u.k ORDER BY ${t.column} LIMIT 1)`;
    const last = sql`(SELECT ${t.at} FROM occupancy_readings r WHERE r.floor_space_key = u.k ORDER BY ${t.column} DESC LIMIT 1)`;
    const spaces = dialect === 'postgres' ? sql`unnest(${`{${chunk.join(',')}}`}::int4[]) AS u(k)` : sql`(SELECT value AS k FROM json_each(${JSON.stringify(chunk)})) AS u`;
    const rows = await tx.all<{ k: number | string; lo: number | string | null; hi: number | string | null }>(sql`SELECT u.k AS k, ${first} AS lo, ${last} AS hi FROM ${spaces}`);
    for (const row of rows) {
      if (row.lo === null || row.hi === null) continue;
      out.push({ key: Number(row.k), fromMs: Number(row.lo), toMs: Number(row.hi) + maxHoldMs });
    }
  }
  return out;
}

/** Replaces every bucket of these floor spaces (of the building of `calendar`) with ones computed from all their readings. */
export async function rebuildSpaces(tx: Executor, customerId: string, calendar: BuildingCalendar, keys: readonly number[]): Promise<number> {
  const { dialect } = tx;
  // Their floors' rows are summed again once at the end, over the buckets they held and hold now (not once per space:
  // a floor's rows would be summed as many times as it has spaces).
  const held = await bucketRangeOf(tx, keys);
  if (keys.length > 0) await tx.run(sql`DELETE FROM occupancy_buckets WHERE ${keyIn(dialect, sql`floor_space_key`, keys)}`);
  await clearDays(tx, keys);
  // Recomputed as a refresh is, a day at a time and a month of days a call, the spaces with alike spans together:
  // what is held is bounded however long a space's history (a year of 1-minute readings, or two readings a century
  // apart), and a building's spaces share their statements.
  const buckets = await recomputeSpans(tx, customerId, [{ calendar, spans: await readingSpansOf(tx, keys, calendar.maxHoldMs) }], { floors: false });
  const holds = await bucketRangeOf(tx, keys);
  const range = held && holds ? { fromMs: Math.min(held.fromMs, holds.fromMs), toMs: Math.max(held.toMs, holds.toMs) } : (held ?? holds);
  if (range) await refreshFloorsOf(tx, keys, range);
  return buckets;
}
