import { sql } from '../../db/schema/drizzle.ts';
import type { Dialect } from '../config.ts';
import type { Executor } from './adapter.ts';
import { keyIn } from './key-list.ts';

/**
 * The floor-level hourly rollup occupancy_floor_hours (docs/reporting.md, "The floor-level hourly rollup"): per
 * customer, building, floor and bucket, the sums of the buckets of the floor's spaces, which floor_hours and
 * building_hour_sums read. Its capacity figures use each space's current capacity and its rows follow each space's
 * current building and floor, so it is derived from occupancy_buckets and floor_spaces together: a floor's rows over a
 * range are deleted and summed again from the buckets of every space now on that floor, in the transaction that wrote
 * the buckets or changed the listing, so a maintained row and a rebuilt one are the same sums of the same buckets.
 * A floor is what floor_hours groups by: COALESCE(floor_id, '') and floor_id, a NULL floor apart from a '' one.
 */

/** A floor of a customer's building ('' : of no known building; floorId null: of no floor). */
export interface Floor {
  customerId: string;
  buildingId: string;
  floorId: string | null;
}

/** A bucket range: starts in [fromMs, toMs). */
export interface BucketRange {
  fromMs: number;
  toMs: number;
}

/** How each dialect divides a peak by a capacity as the views did (the same float, bit for bit). */
const PEAK_UTILIZATION: Readonly<Record<Dialect, string>> = {
  postgres: 'MAX(b.peak_headcount::float8 / NULLIF(f.capacity, 0))',
  sqlite: 'MAX(1.0 * b.peak_headcount / NULLIF(f.capacity, 0))',
};

const COLUMNS = `
  INSERT INTO occupancy_floor_hours (customer_id, building_id, floor_id, floor_key, start_ms, end_ms, local_date, local_hour, weekday, working,
                                     known_ms, occupied_ms, headcount_ms, headcount_known_ms, capacity_ms, capacity_headcount_ms, readings,
                                     peak_headcount, peak_utilization)`;
const SUMS = `
  SELECT f.customer_id, COALESCE(f.building_id, ''), f.floor_id, COALESCE(f.floor_id, ''), b.start_ms, MAX(b.end_ms),
         b.local_date, b.local_hour, b.weekday, b.working,
         SUM(b.known_ms), SUM(b.occupied_ms), SUM(b.headcount_ms), SUM(b.headcount_known_ms),
         SUM(NULLIF(f.capacity, 0) * b.headcount_known_ms), SUM(CASE WHEN f.capacity > 0 THEN b.headcount_ms END), SUM(b.readings),
         MAX(b.peak_headcount),`;
const GROUPS = `
   GROUP BY f.customer_id, COALESCE(f.building_id, ''), COALESCE(f.floor_id, ''), f.floor_id, b.start_ms, b.local_date, b.local_hour, b.weekday, b.working`;

/**
 * The two statements of a refresh of floors, one row per floor and range (Executor.bulk): customer, building, floor
 * key (COALESCE(floor_id, '')), whether the floor is NULL (0 or 1: a NULL floor apart from a '' one), the range of
 * bucket starts. Rows deleted, then summed again from the buckets of every space on the floor now.
 */
const STATEMENTS: Readonly<Record<Dialect, { remove: string; sum: string }>> = {
  // SQLite: the rows as one JSON array (one statement each however many floors, prepared once): a statement per floor
  // cost more to run than its rows did (docs/performance.md).
  sqlite: {
    remove:
      'DELETE FROM occupancy_floor_hours WHERE rowid IN (SELECT h.rowid FROM json_each(?) AS u JOIN occupancy_floor_hours h ' +
      'ON h.customer_id = u.value ->> 0 AND h.building_id = u.value ->> 1 AND h.floor_key = u.value ->> 2 AND (h.floor_id IS NULL) = (u.value ->> 3 <> 0) ' +
      'AND h.start_ms >= u.value ->> 4 AND h.start_ms < u.value ->> 5)',
    sum:
      `${COLUMNS} ${SUMS} ${PEAK_UTILIZATION.sqlite} FROM json_each(?) AS u ` +
      "JOIN floor_spaces f ON f.customer_id = u.value ->> 0 AND COALESCE(f.building_id, '') = u.value ->> 1 AND COALESCE(f.floor_id, '') = u.value ->> 2 AND (f.floor_id IS NULL) = (u.value ->> 3 <> 0) " +
      `JOIN occupancy_buckets b ON b.floor_space_key = f.floor_space_key AND b.start_ms >= u.value ->> 4 AND b.start_ms < u.value ->> 5 ${GROUPS}`,
  },
  postgres: {
    remove:
      'DELETE FROM occupancy_floor_hours h USING unnest($1::text[], $2::text[], $3::text[], $4::int2[], $5::int8[], $6::int8[]) AS u(c, bd, fk, n, a, z) ' +
      'WHERE h.customer_id = u.c AND h.building_id = u.bd AND h.floor_key = u.fk AND (h.floor_id IS NULL) = (u.n <> 0) AND h.start_ms >= u.a AND h.start_ms < u.z',
    sum:
      `${COLUMNS} ${SUMS} ${PEAK_UTILIZATION.postgres} FROM unnest($1::text[], $2::text[], $3::text[], $4::int2[], $5::int8[], $6::int8[]) AS u(c, bd, fk, n, a, z) ` +
      "JOIN floor_spaces f ON f.customer_id = u.c AND COALESCE(f.building_id, '') = u.bd AND COALESCE(f.floor_id, '') = u.fk AND (f.floor_id IS NULL) = (u.n <> 0) " +
      `JOIN occupancy_buckets b ON b.floor_space_key = f.floor_space_key AND b.start_ms >= u.a AND b.start_ms < u.z ${GROUPS}`,
  },
};

/** The floors these floor spaces are on now. */
export async function floorsOf(tx: Executor, keys: readonly number[]): Promise<Floor[]> {
  const { dialect } = tx;
  const out = new Map<string, Floor>();
  if (keys.length === 0) return [];
  const rows = await tx.all<{ c: string; b: string; f: string | null }>(sql`
    SELECT DISTINCT customer_id AS c, COALESCE(building_id, '') AS b, floor_id AS f FROM floor_spaces WHERE ${keyIn(dialect, sql`floor_space_key`, keys)}`);
  for (const r of rows) out.set(floorId(r.c, r.b, r.f), { customerId: r.c, buildingId: r.b, floorId: r.f });
  return [...out.values()];
}

/** A floor as one string (a map key): NULL and '' apart. */
export function floorId(customerId: string, buildingId: string, floor: string | null): string {
  return JSON.stringify([customerId, buildingId, floor]);
}

/** The range of the buckets these floor spaces hold now, or undefined when they hold none. */
export async function bucketRangeOf(tx: Executor, keys: readonly number[]): Promise<BucketRange | undefined> {
  const { dialect } = tx;
  if (keys.length === 0) return undefined;
  const [row] = await tx.all<{ lo: number | string | null; hi: number | string | null }>(sql`
    SELECT MIN(start_ms) AS lo, MAX(start_ms) AS hi FROM occupancy_buckets WHERE ${keyIn(dialect, sql`floor_space_key`, keys)}`);
  if (row?.lo === null || row?.lo === undefined || row.hi === null) return undefined;
  return { fromMs: Number(row.lo), toMs: Number(row.hi) + 1 };
}

/** A floor and a range of its bucket starts to sum again. */
export interface FloorRange {
  floor: Floor;
  range: BucketRange;
}

/**
 * Sums again the rows of floors over ranges of bucket starts from the buckets of every space on them now: two
 * statements for all of them. A floor's ranges are merged where they overlap or touch first, so no bucket start is
 * summed twice.
 */
export async function refreshFloors(tx: Executor, ranges: readonly FloorRange[]): Promise<void> {
  const { dialect } = tx;
  const byFloor = new Map<string, { floor: Floor; ranges: BucketRange[] }>();
  for (const { floor, range } of ranges) {
    if (range.toMs <= range.fromMs) continue;
    const id = floorId(floor.customerId, floor.buildingId, floor.floorId);
    const entry = byFloor.get(id);
    if (entry) entry.ranges.push(range);
    else byFloor.set(id, { floor, ranges: [range] });
  }
  const values: unknown[] = [];
  for (const { floor, ranges: own } of byFloor.values()) {
    for (const range of mergeRanges(own)) values.push(floor.customerId, floor.buildingId, floor.floorId ?? '', floor.floorId === null ? 1 : 0, range.fromMs, range.toMs);
  }
  if (values.length === 0) return;
  const statements = STATEMENTS[dialect];
  if (dialect === 'sqlite') {
    const rows = JSON.stringify(Array.from({ length: values.length / 6 }, (_, i) => values.slice(i * 6, i * 6 + 6)));
    await tx.bulk(statements.remove, 1, [rows]);
    await tx.bulk(statements.sum, 1, [rows]);
    return;
  }
  await tx.bulk(statements.remove, 6, values);
  await tx.bulk(statements.sum, 6, values);
}

/** Ranges merged where they overlap or touch, in order. */
export function mergeRanges(ranges: readonly BucketRange[]): BucketRange[] {
  const out: BucketRange[] = [];
  for (const r of [...ranges].sort((a, b) => a.fromMs - b.fromMs)) {
    const last = out[out.length - 1];
    if (last && r.fromMs <= last.toMs) last.toMs = Math.max(last.toMs, r.toMs);
    else out.push({ ...r });
  }
  return out;
}

/** The floor each of these floor spaces is on now, by key. */
export async function floorOfSpaces(tx: Executor, keys: readonly number[]): Promise<Map<number, Floor>> {
  const { dialect } = tx;
  const out = new Map<number, Floor>();
  if (keys.length === 0) return out;
  const rows = await tx.all<{ k: number | string; c: string; b: string; f: string | null }>(sql`
    SELECT floor_space_key AS k, customer_id AS c, COALESCE(building_id, '') AS b, floor_id AS f FROM floor_spaces WHERE ${keyIn(dialect, sql`floor_space_key`, keys)}`);
  for (const r of rows) out.set(Number(r.k), { customerId: r.c, buildingId: r.b, floorId: r.f });
  return out;
}

/** Sums again the rows of the floors these floor spaces are on now over [fromMs, toMs). */
export async function refreshFloorsOf(tx: Executor, keys: readonly number[], range: BucketRange): Promise<void> {
  if (keys.length === 0 || range.toMs <= range.fromMs) return;
  await refreshFloors(tx, (await floorsOf(tx, keys)).map((floor) => ({ floor, range })));
}

/** Deletes every row of a building's floors (before all its spaces' buckets are made again). */
export async function clearBuildingFloors(tx: Executor, customerId: string, buildingId: string): Promise<void> {
  await tx.run(sql`DELETE FROM occupancy_floor_hours WHERE customer_id = ${customerId} AND building_id = ${buildingId}`);
}
