import { sql } from '../../db/schema/drizzle.ts';
import type { Dialect } from '../config.ts';
import { occupiedOf } from '../statuses.ts';
import { timeWeight, type BucketFigures, type Reading } from '../time-weight.ts';
import type { Executor } from './adapter.ts';
import { calendarsFor, lockBuildings, type AggregateSettings, type BuildingCalendar } from './aggregate-calendars.ts';
import { bucketsCovering, holdsData, type Bucket } from './aggregate-plan.ts';
import { extendDays, KEY_CHUNK, readReadings, recompute } from './aggregates.ts';
import type { OccupancyRecord } from './types.ts';

/**
 * A commit's share of keeping the aggregates, without reading back whole buckets of readings. A page's readings of a
 * floor space, from `a` (its first) to `b` (its last), change only R = [a, b + max hold) (`invalidatedRange`). So the
 * commit reads, before it writes the page, the space's stored readings that can reach into R (from a max hold before
 * `a` to R's end: for a backfill in time order, the one or few readings before the page), and computes R's figures
 * twice, from those readings (O) and from them with the page's laid over (N, as the upsert leaves the table):
 * - a bucket wholly inside R gets N's figures;
 * - a bucket R cuts gets N's figures less O's added to what it holds (integers: exact in any order). Its peak is the
 *   larger of the stored one and N's, which is exact unless O's peak in R was larger than N's and nothing outside R
 *   is known to reach it: that bucket alone is recomputed from its readings.
 * The result is the bucket a full recomputation gives, bit for bit (test/store/aggregates.test.ts compares them).
 */

interface Space {
  key: number;
  building: string;
  /** The page's first and last instant of the space. */
  a: number;
  b: number;
  page: Reading[];
}

/** What the commit learnt before the page was written. */
export interface BeforePage {
  spaces: Map<string, Space | undefined>;
  /** The page's readings of each floor space id, in page order. */
  pages: Map<string, Reading[]>;
  settings: AggregateSettings;
  at: string;
  calendars: Map<string, BuildingCalendar>;
  /** The stored readings that can reach into each known space's R, before the page. */
  old: Map<number, Reading[]>;
}

/**
 * The calendar days a store knows are stored, per customer, building and calendar (first and last date): a day once
 * stored stays (a rebuild makes every day its data covers), so a commit inside them need not ask.
 */
export type DaysKnown = Map<string, [string, string]>;

function readingOf(r: OccupancyRecord): Reading {
  const headcount = r.headcount ?? null;
  return { at: Date.parse(r.observedAt), occupied: occupiedOf(r.occupancyStatus), headcount };
}

/** Before the page's upsert: the spaces, their buildings locked, and the stored readings O. */
export async function beforePage(tx: Executor, dialect: Dialect, customerId: string, records: ReadonlyArray<OccupancyRecord>, settings: AggregateSettings, at: string): Promise<BeforePage | undefined> {
  if (records.length === 0) return undefined;
  const byId = new Map<string, Reading[]>();
  for (const r of records) {
    const reading = readingOf(r);
    // A record the upsert refuses (it names the record and field) is left to it.
    if (typeof r.floorSpaceId !== 'string' || !Number.isSafeInteger(reading.at)) continue;
    const list = byId.get(r.floorSpaceId);
    if (list) list.push(reading);
    else byId.set(r.floorSpaceId, [reading]);
  }
  if (byId.size === 0) return undefined;
  const ids = [...byId.keys()];
  const spaces = new Map<string, Space | undefined>(ids.map((id) => [id, undefined]));
  for (let i = 0; i < ids.length; i += KEY_CHUNK) {
    const chunk = ids.slice(i, i + KEY_CHUNK);
    const rows = await tx.all<{ k: number | string; id: string; b: string | null }>(sql`
      SELECT floor_space_key AS k, floor_space_id AS id, building_id AS b FROM floor_spaces
       WHERE customer_id = ${customerId} AND floor_space_id IN (${sql.join(chunk.map((id) => sql`${id}`), sql`, `)})`);
    for (const row of rows) spaces.set(row.id, space(Number(row.k), row.b ?? '', byId.get(row.id)!));
  }
  // A space the page names first is made by the upsert, in no building: the default calendar.
  const buildings = new Set<string>();
  for (const s of spaces.values()) buildings.add(s ? s.building : '');
  const list = [...buildings];
  await lockBuildings(tx, dialect, customerId, list);
  const calendars = await calendarsFor(tx, customerId, list, settings, at);
  const old = new Map<number, Reading[]>();
  const groups = new Map<string, Space[]>();
  for (const s of spaces.values()) if (s) groups.set(s.building, [...(groups.get(s.building) ?? []), s]);
  for (const [building, members] of groups) {
    const hold = calendars.get(building)!.maxHoldMs;
    for (let i = 0; i < members.length; i += KEY_CHUNK) {
      const chunk = members.slice(i, i + KEY_CHUNK);
      const from = Math.min(...chunk.map((s) => s.a)) - hold;
      // To R's end included: a reading exactly there ends the hold of the one before it.
      const to = Math.max(...chunk.map((s) => s.b)) + hold + 1;
      for (const [key, readings] of await readReadings(tx, dialect, chunk.map((s) => s.key), from, to)) old.set(key, readings);
    }
  }
  return { spaces, pages: byId, settings, at, calendars, old };
}

function space(key: number, building: string, page: Reading[]): Space {
  let a = Infinity;
  let b = -Infinity;
  for (const r of page) {
    if (r.at < a) a = r.at;
    if (r.at > b) b = r.at;
  }
  return { key, building, a, b, page };
}

/** The stored readings with the page's laid over them (the upsert's result: the page wins, its last of an instant). */
function merged(old: readonly Reading[], page: readonly Reading[]): Reading[] {
  const byAt = new Map<number, Reading>();
  for (const r of old) byAt.set(r.at, r);
  for (const r of page) byAt.set(r.at, r);
  return [...byAt.values()].sort((x, y) => x.at - y.at);
}

interface Row {
  key: number;
  bucket: Bucket;
  f: Omit<BucketFigures, 'start' | 'end'>;
}

const ZERO = { knownMs: 0, occupiedMs: 0, headcountMs: 0, headcountKnownMs: 0, peakHeadcount: null as number | null, readings: 0 };

/** The figures of R's pieces summed per bucket. */
function perBucket(figures: readonly BucketFigures[], owner: readonly number[], buckets: number): Array<typeof ZERO> {
  const out = Array.from({ length: buckets }, () => ({ ...ZERO }));
  figures.forEach((f, i) => {
    const o = out[owner[i]!]!;
    o.knownMs += f.knownMs;
    o.occupiedMs += f.occupiedMs;
    o.headcountMs += f.headcountMs;
    o.headcountKnownMs += f.headcountKnownMs;
    o.readings += f.readings;
    if (f.peakHeadcount !== null && (o.peakHeadcount === null || f.peakHeadcount > o.peakHeadcount)) o.peakHeadcount = f.peakHeadcount;
  });
  return out;
}

/**
 * The largest headcount known to be held, with the page written, somewhere in `bucket` outside R: the hold of the
 * last reading before R (from before `a` up to `a`) and of the last reading before R's end (past it). -1: none known.
 */
function heldOutside(n: readonly Reading[], bucket: Bucket, a: number, end: number, hold: number): number {
  let g = -1;
  let before: Reading | undefined;
  let last: Reading | undefined;
  let next: Reading | undefined;
  for (const r of n) {
    if (r.at < a) before = r;
    if (r.at < end) last = r;
    else if (next === undefined) next = r;
  }
  if (before && before.headcount !== null && bucket.start < a) {
    // Nothing of the page is before a: `before` holds until a or its max hold.
    const holdEnd = Math.min(a, before.at + hold);
    if (holdEnd > Math.max(before.at, bucket.start)) g = before.headcount;
  }
  if (last && last.headcount !== null && bucket.end > end) {
    const holdEnd = Math.min(next ? next.at : Infinity, last.at + hold);
    if (holdEnd > end) g = Math.max(g, last.headcount);
  }
  return g;
}

/** What a commit writes to the buckets, sorted by how. */
interface Writes {
  set: Row[];
  add: Row[];
  /** Buckets inside R that hold no data now, and buckets whose figures fell and may hold none. */
  cleared: Array<{ key: number; start: number }>;
  emptied: Array<{ key: number; start: number }>;
  /** Buckets to recompute from their readings: their peak may have fallen. */
  fallback: Array<{ building: string; key: number; bucket: Bucket }>;
  /** The first and last local date written, per building. */
  dates: Map<string, [string, string]>;
}

function note(writes: Writes, building: string, date: string): void {
  const d = writes.dates.get(building);
  if (!d) writes.dates.set(building, [date, date]);
  else if (date < d[0]) d[0] = date;
  else if (date > d[1]) d[1] = date;
}

/** One floor space's buckets in R, from its stored readings (O) and with the page's laid over them (N). */
function plan(s: Space, calendar: BuildingCalendar, old: readonly Reading[], writes: Writes): void {
  const { key, a, b } = s;
  const hold = calendar.maxHoldMs;
  const end = b + hold;
  const buckets = bucketsCovering(calendar.calendar, a, end);
  // R cut at the buckets' edges; owner[i] is the bucket of piece i.
  const bounds = [a];
  const owner: number[] = [];
  buckets.forEach((bucket, j) => {
    if (bucket.end > a && bucket.start < end) {
      owner.push(j);
      bounds.push(Math.min(bucket.end, end));
    }
  });
  const n = merged(old, s.page);
  const fo = perBucket(timeWeight(old, bounds, { maxHoldMs: hold }), owner, buckets.length);
  const fn = perBucket(timeWeight(n, bounds, { maxHoldMs: hold }), owner, buckets.length);
  buckets.forEach((bucket, j) => {
    const o = fo[j]!;
    const f = fn[j]!;
    if (bucket.start >= a && bucket.end <= end) {
      // Wholly inside R: N's figures are the bucket's.
      if (holdsData({ ...f, start: 0, end: 0 })) {
        writes.set.push({ key, bucket, f });
        note(writes, s.building, bucket.date);
      } else writes.cleared.push({ key, start: bucket.start });
      return;
    }
    const d = {
      knownMs: f.knownMs - o.knownMs,
      occupiedMs: f.occupiedMs - o.occupiedMs,
      headcountMs: f.headcountMs - o.headcountMs,
      headcountKnownMs: f.headcountKnownMs - o.headcountKnownMs,
      readings: f.readings - o.readings,
      peakHeadcount: f.peakHeadcount,
    };
    const peakFalls = o.peakHeadcount !== null && (f.peakHeadcount === null || f.peakHeadcount < o.peakHeadcount);
    if (!peakFalls && d.knownMs === 0 && d.occupiedMs === 0 && d.headcountMs === 0 && d.headcountKnownMs === 0 && d.readings === 0 && f.peakHeadcount === o.peakHeadcount) return;
    if (peakFalls && heldOutside(n, bucket, a, end, hold) < o.peakHeadcount!) {
      writes.fallback.push({ building: s.building, key, bucket });
      return;
    }
    writes.add.push({ key, bucket, f: d });
    if (d.readings < 0 || d.knownMs < 0 || d.headcountKnownMs < 0) writes.emptied.push({ key, start: bucket.start });
    else note(writes, s.building, bucket.date);
  });
}

/** After the page's upsert: the buckets R touches, written from O and N. */
export async function afterPage(tx: Executor, dialect: Dialect, customerId: string, before: BeforePage, daysKnown: DaysKnown): Promise<void> {
  const unknown = [...before.spaces].filter(([, s]) => s === undefined).map(([id]) => id);
  if (unknown.length > 0) await resolveNew(tx, dialect, customerId, unknown, before);
  const writes: Writes = { set: [], add: [], cleared: [], emptied: [], fallback: [], dates: new Map() };
  for (const s of before.spaces.values()) plan(s!, before.calendars.get(s!.building)!, before.old.get(s!.key) ?? [], writes);
  await writeRows(tx, dialect, writes.set, 'set');
  await writeRows(tx, dialect, writes.add, 'add');
  // A bucket left with no data has no row (a rebuild would make none).
  await deleteRows(tx, dialect, writes.cleared, 'clear');
  await deleteRows(tx, dialect, writes.emptied, 'empty');
  for (const { building, key, bucket } of writes.fallback) {
    await recompute(tx, dialect, customerId, before.calendars.get(building)!, { keys: [key], fromMs: bucket.start, toMs: bucket.end });
  }
  for (const [building, [first, last]] of writes.dates) {
    const calendar = before.calendars.get(building)!;
    const cacheKey = `${customerId}\u0000${building}\u0000${calendar.zone}\u0000${calendar.canonical}`;
    const known = daysKnown.get(cacheKey);
    if (known && known[0] <= first && known[1] >= last) continue;
    await extendDays(tx, dialect, customerId, calendar, first, last);
    if (daysKnown.size > 10_000) daysKnown.clear();
    daysKnown.set(cacheKey, known ? [first < known[0] ? first : known[0], last > known[1] ? last : known[1]] : [first, last]);
  }
}

/** The keys of the spaces the page's upsert made (in no building: no listing has placed them). */
async function resolveNew(tx: Executor, dialect: Dialect, customerId: string, ids: readonly string[], before: BeforePage): Promise<void> {
  for (let i = 0; i < ids.length; i += KEY_CHUNK) {
    const chunk = ids.slice(i, i + KEY_CHUNK);
    const rows = await tx.all<{ k: number | string; id: string; b: string | null }>(sql`
      SELECT floor_space_key AS k, floor_space_id AS id, building_id AS b FROM floor_spaces
       WHERE customer_id = ${customerId} AND floor_space_id IN (${sql.join(chunk.map((id) => sql`${id}`), sql`, `)})`);
    for (const row of rows) {
      const building = row.b ?? '';
      if (!before.calendars.has(building)) {
        await lockBuildings(tx, dialect, customerId, [building]);
        for (const [b, c] of await calendarsFor(tx, customerId, [building], before.settings, before.at)) before.calendars.set(b, c);
      }
      before.spaces.set(row.id, space(Number(row.k), building, before.pages.get(row.id)!));
    }
  }
}

const COLUMNS = 'floor_space_key, start_ms, end_ms, local_date, local_hour, weekday, working, known_ms, occupied_ms, headcount_ms, headcount_known_ms, peak_headcount, readings';
// `working` travels as 0 or 1 on both dialects (postgres.js types an array of booleans as one boolean).
const TYPES = ['int4', 'int8', 'int8', 'text', 'int2', 'int2', 'int2', 'int8', 'int8', 'int8', 'int8', 'int4', 'int4'];
const UNNEST =
  `SELECT u.k, u.s, u.e, u.d, u.h, u.wd, u.w <> 0, u.kn, u.oc, u.hm, u.hk, u.pk, u.rd FROM unnest(${TYPES.map((t, i) => `$${i + 1}::${t}[]`).join(', ')}) ` +
  'AS u(k, s, e, d, h, wd, w, kn, oc, hm, hk, pk, rd)';
const SET =
  'known_ms = excluded.known_ms, occupied_ms = excluded.occupied_ms, headcount_ms = excluded.headcount_ms, ' +
  'headcount_known_ms = excluded.headcount_known_ms, peak_headcount = excluded.peak_headcount, readings = excluded.readings';
const ADD =
  'known_ms = occupancy_buckets.known_ms + excluded.known_ms, occupied_ms = occupancy_buckets.occupied_ms + excluded.occupied_ms, ' +
  'headcount_ms = occupancy_buckets.headcount_ms + excluded.headcount_ms, ' +
  'headcount_known_ms = occupancy_buckets.headcount_known_ms + excluded.headcount_known_ms, ' +
  'readings = occupancy_buckets.readings + excluded.readings, ' +
  'peak_headcount = CASE WHEN excluded.peak_headcount IS NULL THEN occupancy_buckets.peak_headcount ' +
  'WHEN occupancy_buckets.peak_headcount IS NULL OR excluded.peak_headcount > occupancy_buckets.peak_headcount THEN excluded.peak_headcount ' +
  'ELSE occupancy_buckets.peak_headcount END';

/** The writes of a commit's buckets, each one fixed statement per dialect (Executor.bulk). */
const STATEMENTS: Readonly<Record<Dialect, { set: string; add: string; clear: string; empty: string }>> = {
  sqlite: {
    set: `INSERT INTO occupancy_buckets (${COLUMNS}) VALUES (${TYPES.map(() => '?').join(', ')}) ON CONFLICT (floor_space_key, start_ms) DO UPDATE SET ${SET}`,
    add: `INSERT INTO occupancy_buckets (${COLUMNS}) VALUES (${TYPES.map(() => '?').join(', ')}) ON CONFLICT (floor_space_key, start_ms) DO UPDATE SET ${ADD}`,
    clear: 'DELETE FROM occupancy_buckets WHERE floor_space_key = ? AND start_ms = ?',
    empty: 'DELETE FROM occupancy_buckets WHERE floor_space_key = ? AND start_ms = ? AND readings = 0 AND known_ms = 0 AND headcount_known_ms = 0',
  },
  postgres: {
    set: `INSERT INTO occupancy_buckets (${COLUMNS}) ${UNNEST} ON CONFLICT (floor_space_key, start_ms) DO UPDATE SET ${SET}`,
    add: `INSERT INTO occupancy_buckets (${COLUMNS}) ${UNNEST} ON CONFLICT (floor_space_key, start_ms) DO UPDATE SET ${ADD}`,
    clear: 'DELETE FROM occupancy_buckets b USING unnest($1::int4[], $2::int8[]) AS u(k, s) WHERE b.floor_space_key = u.k AND b.start_ms = u.s',
    empty:
      'DELETE FROM occupancy_buckets b USING unnest($1::int4[], $2::int8[]) AS u(k, s) WHERE b.floor_space_key = u.k AND b.start_ms = u.s ' +
      'AND b.readings = 0 AND b.known_ms = 0 AND b.headcount_known_ms = 0',
  },
};

/**
 * Writes bucket rows: `set` replaces a row's figures; `add` adds them to what it holds (a new row takes them as they
 * are) and keeps the larger peak.
 */
async function writeRows(tx: Executor, dialect: Dialect, rows: readonly Row[], mode: 'set' | 'add'): Promise<void> {
  if (rows.length === 0) return;
  const values = new Array<unknown>(rows.length * TYPES.length);
  let i = 0;
  for (const { key, bucket: b, f } of rows) {
    values[i++] = key;
    values[i++] = b.start;
    values[i++] = b.end;
    values[i++] = b.date;
    values[i++] = b.hour;
    values[i++] = b.weekday;
    values[i++] = b.working ? 1 : 0;
    values[i++] = f.knownMs;
    values[i++] = f.occupiedMs;
    values[i++] = f.headcountMs;
    values[i++] = f.headcountKnownMs;
    values[i++] = f.peakHeadcount;
    values[i++] = f.readings;
  }
  await tx.bulk(STATEMENTS[dialect][mode], TYPES.length, values);
}

/** Deletes bucket rows (`empty`: only those left with no data). */
async function deleteRows(tx: Executor, dialect: Dialect, rows: ReadonlyArray<{ key: number; start: number }>, mode: 'clear' | 'empty'): Promise<void> {
  if (rows.length === 0) return;
  await tx.bulk(STATEMENTS[dialect][mode], 2, rows.flatMap((r) => [r.key, r.start]));
}
