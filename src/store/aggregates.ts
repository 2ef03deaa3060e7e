import { sql, type SQL } from '../../db/schema/drizzle.ts';
import type { Dialect } from '../config.ts';
import { occupiedOf } from '../statuses.ts';
import { timeWeight, type Reading } from '../time-weight.ts';
import type { Executor } from './adapter.ts';
import { bucketsCovering, boundsOf, calendarDays, groupSpans, holdsData, slices, KEY_CHUNK, type BucketRow, type Span } from './aggregate-plan.ts';
import type { BuildingCalendar } from './aggregate-calendars.ts';
import { clearDays, refreshDays } from './aggregate-days.ts';
import { bucketRangeOf, clearBuildingFloors, refreshFloorsOf } from './aggregate-floors.ts';

/**
 * The time-weighted aggregates (docs/reporting.md, "Time-weighted aggregates"), computed one way: `recompute` replaces
 * the buckets of some floor spaces over a range with ones computed from the readings as stored. A poll page only
 * records what it made stale (aggregate-invalidations.ts) and a refresh recomputes it; a webhook delivery recomputes
 * its own few buckets in its transaction; a rebuild recomputes any range. Each bucket is computed from all the readings
 * that can reach it (those from a max hold before it to its end), so a refreshed bucket and a rebuilt one are equal bit
 * for bit. The figures are the pure core's (src/time-weight.ts); the buckets the plan's (aggregate-plan.ts); this file
 * only reads and writes them.
 */

/** How each dialect reads a reading's instant as epoch ms, and binds one for a comparison with it. */
const INSTANTS: Readonly<Record<Dialect, { at: SQL; column: SQL; bind(ms: number): number | string }>> = {
  sqlite: { at: sql.raw('r.observed_ms'), column: sql.raw('r.observed_ms'), bind: (ms) => ms },
  // extract(epoch ...) is numeric (exact) since Postgres 14; times are stored to the millisecond.
  postgres: { at: sql.raw('(extract(epoch from r.observed_at) * 1000)::int8'), column: sql.raw('r.observed_at'), bind: (ms) => new Date(ms).toISOString() },
};

/** calendar_days rows per INSERT: 9 values each, well under both dialects' parameter limits. */
const INSERT_CHUNK = 500;

/** A building's floor spaces whose buckets in [fromMs, toMs) are recomputed. */
interface Work {
  keys: number[];
  fromMs: number;
  toMs: number;
}

/**
 * Recomputes the buckets of `work.keys` (floor spaces of one building) that touch [fromMs, toMs) from the stored
 * readings: those rows are replaced by the buckets that hold data, and the building's calendar days are extended to
 * cover them. The caller holds the building's lock (lockBuildings).
 */
export async function recompute(tx: Executor, dialect: Dialect, customerId: string, calendar: BuildingCalendar, work: Work, floors = true): Promise<number> {
  const buckets = bucketsCovering(calendar.calendar, work.fromMs, work.toMs);
  if (buckets.length === 0 || work.keys.length === 0) return 0;
  const bounds = boundsOf(buckets);
  const first = bounds[0]!;
  const end = bounds[bounds.length - 1]!;
  let written = 0;
  let firstDate: string | undefined;
  let lastDate: string | undefined;
  for (let i = 0; i < work.keys.length; i += KEY_CHUNK) {
    const keys = work.keys.slice(i, i + KEY_CHUNK);
    const readings = await readReadings(tx, dialect, keys, first - calendar.maxHoldMs, end);
    const rows: Array<{ key: number; row: BucketRow }> = [];
    for (const key of keys) {
      const own = readings.get(key);
      if (!own) continue;
      const figures = timeWeight(own, bounds, { maxHoldMs: calendar.maxHoldMs });
      for (let q = 0; q < figures.length; q++) {
        const f = figures[q]!;
        if (!holdsData(f)) continue;
        const { start: _s, end: _e, ...rest } = f;
        rows.push({ key, row: { ...rest, bucket: buckets[q]! } });
      }
    }
    await tx.run(sql`DELETE FROM occupancy_buckets WHERE floor_space_key IN (${sql.join(keys.map((k) => sql`${k}`), sql`, `)}) AND start_ms >= ${first} AND start_ms < ${end}`);
    await insertBuckets(tx, dialect, rows);
    written += rows.length;
    for (const { row } of rows) {
      if (firstDate === undefined || row.bucket.date < firstDate) firstDate = row.bucket.date;
      if (lastDate === undefined || row.bucket.date > lastDate) lastDate = row.bucket.date;
    }
  }
  if (firstDate !== undefined) await extendDays(tx, dialect, customerId, calendar, firstDate, lastDate!);
  await refreshDays(tx, calendar.zone, work.keys, buckets[0]!.date, buckets[buckets.length - 1]!.date);
  if (floors) await refreshFloorsOf(tx, dialect, work.keys, { fromMs: first, toMs: end });
  return written;
}

/**
 * The readings of `keys` with an instant in [fromMs, toMs), per floor space, in time order. Statuses are read as
 * their codes and told occupied or not once per code (the dictionary is a handful of rows), not joined per reading.
 */
export async function readReadings(tx: Executor, dialect: Dialect, keys: readonly number[], fromMs: number, toMs: number): Promise<Map<number, Reading[]>> {
  const t = INSTANTS[dialect];
  const codes = await tx.all<{ c: number | string; s: string }>(sql`SELECT status_code AS c, occupancy_status AS s FROM occupancy_statuses`);
  const occupied = new Map(codes.map((c) => [Number(c.c), occupiedOf(c.s)]));
  const rows = await tx.all<{ k: number | string; t: number | string; c: number | string; h: number | null }>(sql`
    SELECT r.floor_space_key AS k, ${t.at} AS t, r.status_code AS c, r.headcount AS h FROM occupancy_readings r
     WHERE r.floor_space_key IN (${sql.join(keys.map((k) => sql`${k}`), sql`, `)})
       AND ${t.column} >= ${t.bind(fromMs)} AND ${t.column} < ${t.bind(toMs)}
     ORDER BY r.floor_space_key, ${t.column}`);
  const out = new Map<number, Reading[]>();
  let key = NaN;
  let list: Reading[] = [];
  for (const row of rows) {
    const k = Number(row.k);
    if (k !== key) {
      key = k;
      list = [];
      out.set(k, list);
    }
    list.push({ at: Number(row.t), occupied: occupied.get(Number(row.c)) ?? null, headcount: row.h === null ? null : Number(row.h) });
  }
  return out;
}

const BUCKET_COLUMNS =
  'floor_space_key, start_ms, end_ms, local_date, local_hour, weekday, working, known_ms, occupied_ms, headcount_ms, headcount_known_ms, peak_headcount, readings';
// `working` travels as 0 or 1 on both dialects (postgres.js types an array of booleans as one boolean).
const BUCKET_TYPES = ['int4', 'int8', 'int8', 'text', 'int2', 'int2', 'int2', 'int8', 'int8', 'int8', 'int8', 'int4', 'int4'];
/** One fixed statement per dialect (Executor.bulk): Postgres binds a column array each and unnests them. */
const INSERT_BUCKETS: Readonly<Record<Dialect, string>> = {
  sqlite: `INSERT INTO occupancy_buckets (${BUCKET_COLUMNS}) VALUES (${BUCKET_TYPES.map(() => '?').join(', ')})`,
  postgres:
    `INSERT INTO occupancy_buckets (${BUCKET_COLUMNS}) SELECT u.k, u.s, u.e, u.d, u.h, u.wd, u.w <> 0, u.kn, u.oc, u.hm, u.hk, u.pk, u.rd ` +
    `FROM unnest(${BUCKET_TYPES.map((t, i) => `$${i + 1}::${t}[]`).join(', ')}) AS u(k, s, e, d, h, wd, w, kn, oc, hm, hk, pk, rd)`,
};

/** The one place bucket rows are written (the rows of their floor spaces and range were deleted first). */
async function insertBuckets(tx: Executor, dialect: Dialect, rows: ReadonlyArray<{ key: number; row: BucketRow }>): Promise<void> {
  if (rows.length === 0) return;
  const values = new Array<unknown>(rows.length * BUCKET_TYPES.length);
  let i = 0;
  for (const { key, row: r } of rows) {
    const b = r.bucket;
    values[i++] = key;
    values[i++] = b.start;
    values[i++] = b.end;
    values[i++] = b.date;
    values[i++] = b.hour;
    values[i++] = b.weekday;
    values[i++] = b.working ? 1 : 0;
    values[i++] = r.knownMs;
    values[i++] = r.occupiedMs;
    values[i++] = r.headcountMs;
    values[i++] = r.headcountKnownMs;
    values[i++] = r.peakHeadcount;
    values[i++] = r.readings;
  }
  await tx.bulk(INSERT_BUCKETS[dialect], BUCKET_TYPES.length, values);
}

/** A refresh reads a group's readings a day at a time: a bounded number of rows in memory, whatever the range. */
const SLICE_MS = 24 * 3_600_000;

/**
 * Recomputes the stale spans of floor spaces of one building (invalidations, deliveries): spaces with alike spans
 * once over their union, a day at a time. The caller holds the building's lock. Returns the buckets written.
 */
export async function recomputeSpans(tx: Executor, dialect: Dialect, customerId: string, calendar: BuildingCalendar, spans: readonly Span[]): Promise<number> {
  let written = 0;
  for (const group of groupSpans(spans)) {
    for (const [fromMs, toMs] of slices(group.fromMs, group.toMs, SLICE_MS)) written += await recompute(tx, dialect, customerId, calendar, { keys: group.keys, fromMs, toMs });
  }
  return written;
}

/**
 * calendar_days covers each local date of a building from the first its aggregates held to the last, without a
 * gap: a day no sensor measured still has its working time, which is what coverage is measured against. Days are
 * only ever added (until the building's calendar changes), so commits and rebuilds make the same ones.
 */
export async function extendDays(tx: Executor, dialect: Dialect, customerId: string, calendar: BuildingCalendar, firstDate: string, lastDate: string): Promise<void> {
  const [have] = await tx.all<{ lo: string | null; hi: string | null }>(sql`
    SELECT min(local_date) AS lo, max(local_date) AS hi FROM calendar_days WHERE customer_id = ${customerId} AND building_id = ${calendar.buildingId}`);
  const lo = have?.lo ?? null;
  const hi = have?.hi ?? null;
  const days =
    lo === null || hi === null
      ? calendarDays(calendar.calendar, firstDate, lastDate)
      : [
          ...(firstDate < lo ? calendarDays(calendar.calendar, firstDate, lo).filter((d) => d.date < lo) : []),
          ...(lastDate > hi ? calendarDays(calendar.calendar, hi, lastDate).filter((d) => d.date > hi) : []),
        ];
  const flag = dialect === 'postgres' ? (b: boolean) => b : (b: boolean) => (b ? 1 : 0);
  for (let i = 0; i < days.length; i += INSERT_CHUNK) {
    const values = days.slice(i, i + INSERT_CHUNK).map(
      (d) => sql`(${customerId}, ${calendar.buildingId}, ${d.date}, ${d.start}, ${d.end}, ${d.weekday}, ${d.workingMs}, ${flag(d.holiday)}, ${calendar.zone})`,
    );
    await tx.run(sql`
      INSERT INTO calendar_days (customer_id, building_id, local_date, start_ms, end_ms, weekday, working_ms, holiday, time_zone)
      VALUES ${sql.join(values, sql`, `)} ON CONFLICT (customer_id, building_id, local_date) DO NOTHING`);
  }
}

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
export async function rebuildBuilding(tx: Executor, dialect: Dialect, customerId: string, calendar: BuildingCalendar, options: { range?: { fromMs: number; toMs: number }; calendarChanged: boolean }): Promise<{ spaces: number; buckets: number }> {
  const keys = await spacesOf(tx, customerId, calendar.buildingId);
  const { range } = options;
  if (range) return { spaces: keys.length, buckets: await recompute(tx, dialect, customerId, calendar, { keys, ...range }) };
  // Days stay once made (a commit never removes one); only another calendar makes them all again.
  if (options.calendarChanged) await tx.run(sql`DELETE FROM calendar_days WHERE customer_id = ${customerId} AND building_id = ${calendar.buildingId}`);
  // Every floor row of the building is made again from its spaces' buckets (rebuildSpaces sums their whole range).
  await clearBuildingFloors(tx, customerId, calendar.buildingId);
  return { spaces: keys.length, buckets: await rebuildSpaces(tx, dialect, customerId, calendar, keys) };
}

/** Replaces every bucket of these floor spaces (of the building of `calendar`) with ones computed from all their readings. */
export async function rebuildSpaces(tx: Executor, dialect: Dialect, customerId: string, calendar: BuildingCalendar, keys: readonly number[]): Promise<number> {
  // Their floors' rows are summed again once at the end, over the buckets they held and hold now (not once per space:
  // a floor's rows would be summed as many times as it has spaces).
  const held = await bucketRangeOf(tx, keys);
  for (let i = 0; i < keys.length; i += KEY_CHUNK) {
    await tx.run(sql`DELETE FROM occupancy_buckets WHERE floor_space_key IN (${sql.join(keys.slice(i, i + KEY_CHUNK).map((k) => sql`${k}`), sql`, `)})`);
  }
  await clearDays(tx, keys);
  const t = INSTANTS[dialect];
  let buckets = 0;
  // One floor space at a time: a year of a space's readings is held, not a building's.
  for (const key of keys) {
    // Ordered by the stored column, not the expression: the primary key serves both ends.
    const [lo] = await tx.all<{ t: number | string }>(sql`SELECT ${t.at} AS t FROM occupancy_readings r WHERE r.floor_space_key = ${key} ORDER BY ${t.column} LIMIT 1`);
    if (lo === undefined) continue;
    const [hi] = await tx.all<{ t: number | string }>(sql`SELECT ${t.at} AS t FROM occupancy_readings r WHERE r.floor_space_key = ${key} ORDER BY ${t.column} DESC LIMIT 1`);
    buckets += await recompute(tx, dialect, customerId, calendar, { keys: [key], fromMs: Number(lo.t), toMs: Number(hi!.t) + calendar.maxHoldMs }, false);
  }
  const holds = await bucketRangeOf(tx, keys);
  const range = held && holds ? { fromMs: Math.min(held.fromMs, holds.fromMs), toMs: Math.max(held.toMs, holds.toMs) } : (held ?? holds);
  if (range) await refreshFloorsOf(tx, dialect, keys, range);
  return buckets;
}
