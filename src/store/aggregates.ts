import { sql, type SQL } from '../../db/schema/drizzle.ts';
import type { Dialect } from '../config.ts';
import { StoreError } from '../errors.ts';
import { occupiedOf } from '../statuses.ts';
import { readingColumns, stateOf, timeWeightColumns, NO_HEADCOUNT, type ReadingColumns } from '../time-weight.ts';
import type { Executor } from './adapter.ts';
import { SentAhead } from './sent-ahead.ts';
import { textIn } from './key-list.ts';
import { bucketsCovering, boundsOf, calendarDays, groupSpans, holdsData, slices, KEY_CHUNK, type Bucket, type Span } from './aggregate-plan.ts';
import type { BuildingCalendar } from './aggregate-calendars.ts';
import { refreshDays, type DayRange } from './aggregate-days.ts';
import { floorOfSpaces, refreshFloors, type BucketRange } from './aggregate-floors.ts';

/**
 * The time-weighted aggregates (docs/reporting.md, "Time-weighted aggregates"), computed one way: `recomputeUnits` replaces
 * the buckets of some floor spaces over a range with ones computed from the readings as stored. A poll page or a
 * webhook delivery only records what it made stale (aggregate-page-invalidations.ts) and a refresh recomputes it (a
 * delivery's a second later: delivery-refresh.ts); a rebuild recomputes any range. Each bucket is computed from all
 * the readings that can reach it (those from a max hold before it to its end), so a refreshed bucket and a rebuilt one are equal bit
 * for bit. The figures are the pure core's (src/time-weight.ts); the buckets the plan's (aggregate-plan.ts); this file
 * only reads and writes them.
 */

/** How each dialect reads a reading's instant as epoch ms, and binds one for a comparison with it. */
/**
 * A reading's instant in epoch milliseconds on Postgres. date_part's epoch is a float8 of seconds: for an instant stored
 * to the millisecond its product by 1000 is within a thousandth of the integer, so the rounding gives it exactly in
 * years 1 to 9999 (extract's numeric is exact too, but its arithmetic took a third of the readings' read back:
 * docs/performance.md). Tested against Date.parse (test/store/aggregate-readings.test.ts).
 */
export const PG_EPOCH_MS = "round(date_part('epoch', r.observed_at) * 1000)::int8";

export const INSTANTS: Readonly<Record<Dialect, { at: SQL; column: SQL; bind(ms: number): number | string }>> = {
  sqlite: { at: sql.raw('r.observed_ms'), column: sql.raw('r.observed_ms'), bind: (ms) => ms },
  postgres: { at: sql.raw(PG_EPOCH_MS), column: sql.raw('r.observed_at'), bind: (ms) => new Date(ms).toISOString() },
};

/** calendar_days rows per INSERT: 9 values each, well under both dialects' parameter limits. */
const INSERT_CHUNK = 500;

/** Floor spaces of one building whose buckets touching [fromMs, toMs) are recomputed. */
export interface Unit {
  calendar: BuildingCalendar;
  keys: readonly number[];
  fromMs: number;
  toMs: number;
}

/** How a recompute sums what it wrote into the rollups. */
export interface RecomputeOptions {
  /** false: the floors' rows are left for the caller to sum once (a whole rebuild). */
  floors?: boolean;
  /**
   * Per floor space, a local date from which its days are not summed again: a refresh beside a run leaves a range
   * pending that starts in that date (aggregate-fronts.ts), and the refresh of that range sums the day, these buckets
   * included. Without it, such a day was summed at every refresh beside the run.
   */
  openDates?: ReadonlyMap<number, string>;
}

/** Some of a unit's floor spaces (at most KEY_CHUNK), with the unit's buckets. */
interface Part {
  unit: Unit;
  keys: readonly number[];
  buckets: Bucket[];
  bounds: number[];
}

/**
 * Recomputes the buckets of units (each a building's floor spaces over a range; a space in at most one unit) from the
 * stored readings: those rows are replaced by the buckets that hold data, each building's calendar days are extended
 * to cover them, and the days and floor rows over them are summed again. The statements serve many units at once: a
 * read of the readings, a delete and an insert of buckets per KEY_CHUNK floor spaces, then two for the days and two
 * for the floors, whichever buildings the units are of. The caller holds the buildings' locks (lockBuildings).
 */
export async function recomputeUnits(tx: Executor, customerId: string, units: readonly Unit[], options: RecomputeOptions = {}): Promise<number> {
  const { floors = true, openDates } = options;
  const { dialect } = tx;
  const parts: Part[] = [];
  for (const unit of units) {
    const buckets = bucketsCovering(unit.calendar.calendar, unit.fromMs, unit.toMs);
    if (buckets.length === 0) continue;
    const bounds = boundsOf(buckets);
    for (let i = 0; i < unit.keys.length; i += KEY_CHUNK) parts.push({ unit, keys: unit.keys.slice(i, i + KEY_CHUNK), buckets, bounds });
  }
  if (parts.length === 0) return 0;
  const occupied = await statusesOf(tx);
  const keys = [...new Set(parts.flatMap((p) => p.keys))];
  // Postgres runs a transaction's statements in the order sent, so each goes out before the work that needs its
  // answer: the floors while the readings are read, the next batch's readings while this one's figures are
  // computed, a batch's bucket writes while the next is (server and process at work together, not in turn).
  // SQLite answers each at once: the same order, nothing overlapped.
  const sent = new SentAhead();
  const on = floors ? sendAhead(sent, floorOfSpaces(tx, keys)) : undefined;
  const batches = statementBatches(parts);
  const read = (batch: readonly Part[]) => sendAhead(sent, readReadings(tx, batch.map((p) => ({ keys: p.keys, fromMs: p.bounds[0]! - p.unit.calendar.maxHoldMs, toMs: p.bounds[p.bounds.length - 1]! })), occupied));
  let written = 0;
  const spans = new Map<string, { calendar: BuildingCalendar; first: string; last: string }>();
  const days = new Map<number, DayRange>();
  const ranges: Array<{ key: number; range: BucketRange }> = [];
  try {
    let next = read(batches[0]!);
    for (let b = 0; b < batches.length; b++) {
      const readings = await next;
      if (b + 1 < batches.length) next = read(batches[b + 1]!);
      const values = bucketRows(batches[b]!, readings, { spans, days, ranges }, openDates);
      sent.send(tx.bulk(DELETE_BUCKETS[dialect], 3, batches[b]!.flatMap((p) => p.keys.flatMap((k) => [k, p.bounds[0]!, p.bounds[p.bounds.length - 1]!]))));
      if (values.length > 0) sent.send(tx.bulk(INSERT_BUCKETS[dialect], BUCKET_TYPES.length, values));
      written += values.length / BUCKET_TYPES.length;
    }
    await sent.settle();
    await extendDays(tx, customerId, [...spans.values()]);
    await refreshDays(tx, [...days.values()]);
    if (on) {
      const floorOf = await on;
      await refreshFloors(tx, ranges.flatMap(({ key, range }) => (floorOf.has(key) ? [{ floor: floorOf.get(key)!, range }] : [])));
    }
  } catch (thrown) {
    // The first statement that failed, in the order sent, is what failed: those after it saw an aborted transaction.
    throw (await sent.failures())[0] ?? thrown;
  }
  return written;
}

/** `outcome`, kept in `sent` too (its failure is reported in the order sent, and never unhandled). */
function sendAhead<T>(sent: SentAhead, outcome: Promise<T>): Promise<T> {
  sent.send(outcome);
  return outcome;
}

/** What a refresh learns from its batches for the statements after them: the days, floors and buildings touched. */
interface Touched {
  spans: Map<string, { calendar: BuildingCalendar; first: string; last: string }>;
  days: Map<number, DayRange>;
  ranges: Array<{ key: number; range: BucketRange }>;
}

/**
 * A batch's bucket rows that hold data, from its floor spaces' readings, as the flat values INSERT_BUCKETS binds
 * (BUCKET_TYPES.length a row: no object per row between the figures and the statement); what it touched recorded in
 * `touched`.
 */
function bucketRows(batch: readonly Part[], readings: ReadonlyMap<number, ReadingColumns>, touched: Touched, openDates: ReadonlyMap<number, string> | undefined): unknown[] {
  const { spans, days, ranges } = touched;
  const values: unknown[] = [];
  for (const { unit, keys, buckets, bounds } of batch) {
    const range = { fromMs: bounds[0]!, toMs: bounds[bounds.length - 1]! };
    const building = unit.calendar.buildingId;
    for (const key of keys) {
      // An open date's buckets are summed into its day by the refresh of the range left pending in it.
      const open = openDates?.get(key);
      let last = buckets.length - 1;
      if (open !== undefined) while (last >= 0 && buckets[last]!.date >= open) last--;
      if (last >= 0) {
        const day = days.get(key);
        days.set(key, { key, zone: unit.calendar.zone, first: minOf(day?.first, buckets[0]!.date), last: maxOf(day?.last, buckets[last]!.date) });
      }
      ranges.push({ key, range });
      const own = readings.get(key);
      if (!own) continue;
      const figures = timeWeightColumns(own, bounds, { maxHoldMs: unit.calendar.maxHoldMs });
      for (let q = 0; q < figures.length; q++) {
        const f = figures[q]!;
        if (!holdsData(f)) continue;
        const b = buckets[q]!;
        values.push(key, b.start, b.end, b.date, b.hour, b.weekday, b.working ? 1 : 0, f.knownMs, f.occupiedMs, f.headcountMs, f.headcountKnownMs, f.peakHeadcount, f.readings);
        const span = spans.get(building);
        if (!span) spans.set(building, { calendar: unit.calendar, first: b.date, last: b.date });
        else if (b.date < span.first) span.first = b.date;
        else if (b.date > span.last) span.last = b.date;
      }
    }
  }
  return values;
}

const minOf = (a: string | undefined, b: string) => (a === undefined || b < a ? b : a);
const maxOf = (a: string | undefined, b: string) => (a === undefined || b > a ? b : a);

/** Parts cut into statements of at most KEY_CHUNK floor spaces, each space at most once in a statement. */
function statementBatches(parts: readonly Part[]): Part[][] {
  const out: Part[][] = [];
  let batch: Part[] = [];
  let keys = new Set<number>();
  for (const part of parts) {
    if (batch.length > 0 && (keys.size + part.keys.length > KEY_CHUNK || part.keys.some((k) => keys.has(k)))) {
      out.push(batch);
      batch = [];
      keys = new Set();
    }
    batch.push(part);
    for (const k of part.keys) keys.add(k);
  }
  if (batch.length > 0) out.push(batch);
  return out;
}

/** Whether each status code is occupied, from the dictionary (a handful of rows), not joined per reading. */
async function statusesOf(tx: Executor): Promise<Map<number, boolean | null>> {
  const codes = await tx.all<{ c: number | string; s: string }>(sql`SELECT status_code AS c, occupancy_status AS s FROM occupancy_statuses`);
  return new Map(codes.map((c) => [Number(c.c), occupiedOf(c.s)]));
}

/**
 * The readings of floor spaces with an instant in their part's range (a space in one part at most), per floor space,
 * in time order, in one statement. Postgres reads one indexed range per floor space, its (space, from, to) rows bound
 * as three arrays and joined laterally (one plan however many spaces: a UNION ALL branch per part took 33 ms to
 * plan and start for 500 spaces, more than reading their readings), and sends a row per floor space, its readings as
 * three lists (a twentieth of the rows to send and parse); SQLite sends the same lists, as one text a floor space.
 */
async function readReadings(tx: Executor, parts: ReadonlyArray<{ keys: readonly number[]; fromMs: number; toMs: number }>, occupied: ReadonlyMap<number, boolean | null>): Promise<Map<number, ReadingColumns>> {
  const { dialect } = tx;
  const t = INSTANTS[dialect];
  const out = new Map<number, ReadingColumns>();
  if (dialect === 'postgres') {
    const keys: number[] = [];
    const from: string[] = [];
    const to: string[] = [];
    for (const p of parts) {
      for (const k of p.keys) {
        keys.push(k);
        from.push(new Date(p.fromMs).toISOString());
        to.push(new Date(p.toMs).toISOString());
      }
    }
    // Array literals: keys are integers and canonical instants hold no character an array literal quotes.
    // The lists are built from rows sorted by instant; they are checked to be in time order below all the same.
    const rows = await tx.all<{ k: number | string; t: string; c: string; h: string }>(sql`
      SELECT u.k, x.t, x.c, x.h
        FROM unnest(${`{${keys.join(',')}}`}::int4[], ${`{${from.join(',')}}`}::timestamptz[], ${`{${to.join(',')}}`}::timestamptz[]) AS u(k, lo, hi)
        CROSS JOIN LATERAL (
          SELECT string_agg(s.t::text, ',') AS t, string_agg(s.c::text, ',') AS c, string_agg(COALESCE(s.h::text, ''), ',') AS h
            FROM (SELECT ${t.at} AS t, r.status_code AS c, r.headcount AS h FROM occupancy_readings r
                   WHERE r.floor_space_key = u.k AND r.observed_at >= u.lo AND r.observed_at < u.hi
                   ORDER BY r.observed_at) AS s) AS x
       WHERE x.t IS NOT NULL`);
    for (const row of rows) out.set(Number(row.k), readingsOf(row.t, row.c, row.h, occupied));
    return out;
  }
  // SQLite: the same ranges as one JSON array, so the statement's text is one (prepared once, cached), however many
  // spaces; per range, one scalar subquery reads it by the primary key and sends its readings as one text of the three
  // lists, as Postgres does: no sort, and a row per floor space to hand over instead of a JS object per reading
  // (docs/performance.md). group_concat skips NULL, hence '' for a missing headcount.
  const ranges = JSON.stringify(parts.flatMap((p) => p.keys.map((k) => [k, p.fromMs, p.toMs])));
  const rows = await tx.all<{ k: number | string; x: string | null }>(sql`
    SELECT u.value ->> 0 AS k,
           (SELECT group_concat(r.observed_ms) || '|' || group_concat(r.status_code) || '|' || group_concat(ifnull(r.headcount, ''))
              FROM occupancy_readings r
             WHERE r.floor_space_key = u.value ->> 0 AND r.observed_ms >= u.value ->> 1 AND r.observed_ms < u.value ->> 2) AS x
      FROM json_each(${ranges}) AS u`);
  for (const row of rows) {
    if (row.x === null) continue;
    const [at, codes, heads] = row.x.split('|') as [string, string, string];
    out.set(Number(row.k), readingsOf(at, codes, heads, occupied));
  }
  return out;
}

/**
 * A floor space's readings, in time order, from its lists of instants, status codes and headcounts ('' : none), each
 * a comma-separated text as the read sends it. Read in place, without splitting them into a string per value.
 */
export function readingsOf(at: string, codes: string, heads: string, occupied: ReadonlyMap<number, boolean | null>): ReadingColumns {
  const instants = integers(at, 'an instant');
  const states = integers(codes, 'a status code');
  const counts = integers(heads, 'a headcount');
  if (states.length !== instants.length || counts.length !== instants.length) {
    throw new StoreError(`aggregates: a floor space's read gave ${instants.length} instants, ${states.length} status codes and ${counts.length} headcounts`);
  }
  const out: ReadingColumns = { at: instants, state: new Int8Array(instants.length), headcount: counts };
  let ordered = true;
  for (let i = 0; i < instants.length; i++) {
    out.state[i] = stateOf(occupied.get(states[i]!));
    if (Number.isNaN(counts[i]!)) counts[i] = NO_HEADCOUNT;
    if (i > 0 && instants[i]! < instants[i - 1]!) ordered = false;
  }
  // An aggregate's input order is the sorted subquery's in every plan Postgres makes, and the primary key's on SQLite,
  // but SQL does not promise it.
  return ordered ? out : sortedColumns(out);
}

/**
 * The values of a comma-separated list of integers as the read prints them (an optional minus, digits), '' as NaN.
 * Anything else in a value is read by Number, as a text the database printed otherwise (a real, an exponent).
 */
function integers(text: string, what: string): Float64Array {
  let n = 1;
  for (let i = text.indexOf(','); i !== -1; i = text.indexOf(',', i + 1)) n++;
  const out = new Float64Array(n);
  let v = 0;
  let digits = 0;
  let negative = false;
  let plain = true;
  let start = 0;
  let k = 0;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 44;
    if (c === 44) {
      out[k++] = !plain ? otherNumber(text.slice(start, i), what) : digits === 0 ? (negative ? otherNumber('-', what) : NaN) : negative ? -v : v;
      v = 0;
      digits = 0;
      negative = false;
      plain = true;
      start = i + 1;
    } else if (c >= 48 && c <= 57) {
      v = v * 10 + (c - 48);
      digits++;
    } else if (c === 45 && i === start) negative = true;
    else plain = false;
  }
  return out;
}

function otherNumber(text: string, what: string): number {
  const v = Number(text);
  if (text.trim() === '' || !Number.isFinite(v)) throw new StoreError(`aggregates: a floor space's read gave ${JSON.stringify(text)} as ${what}`);
  return v;
}

/** Columns put in time order, each reading keeping its own state and headcount. */
function sortedColumns(c: ReadingColumns): ReadingColumns {
  const order = Array.from(c.at, (_, i) => i).sort((a, b) => c.at[a]! - c.at[b]!);
  const out = readingColumns(order.length);
  order.forEach((from, to) => {
    out.at[to] = c.at[from]!;
    out.state[to] = c.state[from]!;
    out.headcount[to] = c.headcount[from]!;
  });
  return out;
}

/** A floor space's buckets starting in [from, to) deleted, one row per space (Executor.bulk). */
const DELETE_BUCKETS: Readonly<Record<Dialect, string>> = {
  sqlite: 'DELETE FROM occupancy_buckets WHERE floor_space_key = ? AND start_ms >= ? AND start_ms < ?',
  postgres:
    'DELETE FROM occupancy_buckets b USING unnest($1::int4[], $2::int8[], $3::int8[]) AS u(k, a, z) WHERE b.floor_space_key = u.k AND b.start_ms >= u.a AND b.start_ms < u.z',
};

const BUCKET_COLUMNS =
  'floor_space_key, start_ms, end_ms, local_date, local_hour, weekday, working, known_ms, occupied_ms, headcount_ms, headcount_known_ms, peak_headcount, readings';
// `working` travels as 0 or 1 on both dialects (postgres.js types an array of booleans as one boolean).
const BUCKET_TYPES = ['int4', 'int8', 'int8', 'text', 'int2', 'int2', 'int2', 'int8', 'int8', 'int8', 'int8', 'int4', 'int4'];
/**
 * The one statement that writes bucket rows (their floor spaces' range deleted first), one fixed text per dialect
 * (Executor.bulk): Postgres binds a column array each and unnests them.
 */
const INSERT_BUCKETS: Readonly<Record<Dialect, string>> = {
  sqlite: `INSERT INTO occupancy_buckets (${BUCKET_COLUMNS}) VALUES (${BUCKET_TYPES.map(() => '?').join(', ')})`,
  postgres:
    `INSERT INTO occupancy_buckets (${BUCKET_COLUMNS}) SELECT u.k, u.s, u.e, u.d, u.h, u.wd, u.w <> 0, u.kn, u.oc, u.hm, u.hk, u.pk, u.rd ` +
    `FROM unnest(${BUCKET_TYPES.map((t, i) => `$${i + 1}::${t}[]`).join(', ')}) AS u(k, s, e, d, h, wd, w, kn, oc, hm, hk, pk, rd)`,
};

/** A refresh reads a group's readings a day at a time: a bounded number of rows in memory, whatever the range. */
const SLICE_MS = 24 * 3_600_000;

/** A building's floor spaces' stale spans. */
export interface BuildingSpans {
  calendar: BuildingCalendar;
  spans: readonly Span[];
}

/**
 * Recomputes the stale spans of floor spaces of some buildings (what pages and deliveries made stale): per building,
 * spaces with alike spans once over their union, a day at a time, the first day of every group first (they share statements).
 * The caller holds the buildings' locks. Returns the buckets written (RecomputeOptions: what is summed).
 */
export async function recomputeSpans(tx: Executor, customerId: string, work: readonly BuildingSpans[], options: RecomputeOptions = {}): Promise<number> {
  const units: Array<Unit & { slice: number }> = [];
  for (const { calendar, spans } of work) {
    for (const group of groupSpans(spans)) {
      slices(group.fromMs, group.toMs, SLICE_MS).forEach(([fromMs, toMs], slice) => units.push({ calendar, keys: group.keys, fromMs, toMs, slice }));
    }
  }
  // Stable: within a slice, in the order given.
  units.sort((a, b) => a.slice - b.slice);
  // A month of slices at a time: what a recompute plans and holds (its buckets, days and floor ranges) is bounded
  // however long a span is (a space's readings years apart), and a refresh of hours is one call as before.
  let buckets = 0;
  for (let i = 0; i < units.length; ) {
    let end = i;
    while (end < units.length && units[end]!.slice < units[i]!.slice + SLICES_PER_CALL) end++;
    buckets += await recomputeUnits(tx, customerId, units.slice(i, end), options);
    i = end;
  }
  return buckets;
}

/** Day slices planned and computed by one recomputeUnits call of recomputeSpans. */
const SLICES_PER_CALL = 31;

/**
 * calendar_days covers each local date of a building from the first its aggregates held to the last, without a
 * gap: a day no sensor measured still has its working time, which is what coverage is measured against. Days are
 * only ever added (until the building's calendar changes), so commits and rebuilds make the same ones. One read of
 * what the buildings have and one insert for all of them.
 */
export async function extendDays(tx: Executor, customerId: string, spans: ReadonlyArray<{ calendar: BuildingCalendar; first: string; last: string }>): Promise<void> {
  const { dialect } = tx;
  if (spans.length === 0) return;
  const rows = await tx.all<{ b: string; lo: string; hi: string }>(sql`
    SELECT building_id AS b, min(local_date) AS lo, max(local_date) AS hi FROM calendar_days
     WHERE customer_id = ${customerId} AND ${textIn(dialect, sql`building_id`, spans.map((s) => s.calendar.buildingId))} GROUP BY building_id`);
  const have = new Map(rows.map((r) => [r.b, r]));
  const flag = dialect === 'postgres' ? (b: boolean) => b : (b: boolean) => (b ? 1 : 0);
  const values: SQL[] = [];
  for (const { calendar, first: firstDate, last: lastDate } of spans) {
    const lo = have.get(calendar.buildingId)?.lo ?? null;
    const hi = have.get(calendar.buildingId)?.hi ?? null;
    const days =
      lo === null || hi === null
        ? calendarDays(calendar.calendar, firstDate, lastDate)
        : [
            ...(firstDate < lo ? calendarDays(calendar.calendar, firstDate, lo).filter((d) => d.date < lo) : []),
            ...(lastDate > hi ? calendarDays(calendar.calendar, hi, lastDate).filter((d) => d.date > hi) : []),
          ];
    for (const d of days) values.push(sql`(${customerId}, ${calendar.buildingId}, ${d.date}, ${d.start}, ${d.end}, ${d.weekday}, ${d.workingMs}, ${flag(d.holiday)}, ${calendar.zone})`);
  }
  for (let i = 0; i < values.length; i += INSERT_CHUNK) {
    await tx.run(sql`
      INSERT INTO calendar_days (customer_id, building_id, local_date, start_ms, end_ms, weekday, working_ms, holiday, time_zone)
      VALUES ${sql.join(values.slice(i, i + INSERT_CHUNK), sql`, `)} ON CONFLICT (customer_id, building_id, local_date) DO NOTHING`);
  }
}
