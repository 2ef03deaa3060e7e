import { sql } from '../../db/schema/drizzle.ts';
import type { Dialect } from '../config.ts';
import type { Adapter, Executor } from './adapter.ts';
import { keyIn } from './key-list.ts';
import { calendarsFor, lockBuildings, type AggregateSettings, type BuildingCalendar } from './aggregate-calendars.ts';
import { addRange, allRanges, hoursOf, KEY_CHUNK, type Ranges, type Span } from './aggregate-plan.ts';
import { claimPageInvalidations, recordRanges, type ClaimedPage } from './aggregate-page-invalidations.ts';
import { frontsSince, holdFronts } from './aggregate-fronts.ts';
import { recomputeSpans, type BuildingSpans } from './aggregates.ts';
import type { AggregateRefresh, PendingAggregates } from './types.ts';

/**
 * The aggregates a poll page made stale, kept until a refresh recomputes them (Timescale's invalidation log and
 * refresh). A page's transaction appends one row of its floor spaces' ranges (aggregate-page-invalidations.ts); a
 * refresh (`refreshInvalidations`) claims them and, when nothing else is pending and they fit one transaction,
 * recomputes their floor spaces in the claim's transaction; otherwise it folds them into a row per floor space and
 * stale range here (Ranges: a backfill's windows stay apart; keyed by `first_ms`, `last_ms` merged by max, a
 * `revision` counted per fold), then recomputes each space's ranges [first, last + max hold) once from the stored
 * readings, building by building under the buildings' locks (on Postgres, a large refresh's groups of whole
 * buildings side by side: concurrencyFor), and deletes the rows it did only if no fold wrote them since it read them
 * (`revision`): a range a concurrent commit widened stays pending.
 * The page commits its readings and their invalidation together, so a killed run leaves nothing stale unrecorded.
 */

const MERGE = 'last_ms = max(%t.last_ms, excluded.last_ms), revision = %t.revision + 1';
/** The upsert of folded invalidations: SQLite row by row (prepared once), Postgres one unnest in key order. */
const RECORD: Readonly<Record<Dialect, { text: string; row(customerId: string, key: number, span: [number, number], at: string): unknown[] }>> = {
  sqlite: {
    // WHERE makes SQLite read ON CONFLICT as the upsert's, not the SELECT's join.
    text:
      'INSERT INTO aggregate_invalidations (floor_space_key, customer_id, first_ms, last_ms, revision, invalidated_at) ' +
      'SELECT floor_space_key, customer_id, ?, ?, 1, ? FROM floor_spaces WHERE customer_id = ? AND floor_space_key = ? ' +
      `ON CONFLICT (floor_space_key, first_ms) DO UPDATE SET ${MERGE.replaceAll('%t', 'aggregate_invalidations')}`,
    row: (customerId, key, [a, b], at) => [a, b, at, customerId, key],
  },
  postgres: {
    // Rows are locked in key order, as the refresh's compare-and-delete locks them: two processes never deadlock here.
    text:
      'INSERT INTO aggregate_invalidations (floor_space_key, customer_id, first_ms, last_ms, revision, invalidated_at) ' +
      'SELECT f.floor_space_key, f.customer_id, u.a, u.b, 1, u.t FROM unnest($1::text[], $2::int4[], $3::int8[], $4::int8[], $5::timestamptz[]) AS u(c, k, a, b, t) ' +
      'JOIN floor_spaces f ON f.floor_space_key = u.k AND f.customer_id = u.c ORDER BY f.floor_space_key, u.a ' +
      `ON CONFLICT (floor_space_key, first_ms) DO UPDATE SET ${MERGE.replaceAll('%t', 'aggregate_invalidations').replace('max(', 'GREATEST(')}`,
    row: (customerId, key, [a, b], at) => [customerId, key, a, b, at],
  },
};

/**
 * Merges floor spaces' ranges (by floor space key: its Ranges, and `since`: the commit time of the oldest page that
 * named it) into what is pending: a row per space and range (of this customer's: the join to floor_spaces checks the
 * key), a range that starts where a pending one does widening it.
 */
async function mergeInvalidations(tx: Executor, customerId: string, spans: ReadonlyMap<number, Ranges>, since: ReadonlyMap<number, string>): Promise<void> {
  const { dialect } = tx;
  if (spans.size === 0) return;
  const statement = RECORD[dialect];
  const values: unknown[] = [];
  let rows = 0;
  for (const [key, ranges] of spans) {
    for (const range of ranges) values.push(...statement.row(customerId, key, range, since.get(key)!));
    rows += ranges.length;
  }
  await tx.bulk(statement.text, values.length / rows, values);
}

/**
 * Deletes a refreshed row only if no page wrote it since the refresh read it (Postgres: locked in key order first).
 * On Postgres each row is found by its primary key, one descent per row asked, whatever the table's statistics say:
 * this table is a queue, empty at the end of most refreshes, and statistics taken then (an ANALYZE, autovacuum's
 * too) say it is empty while its pages hold the dead rows. Written as a join of the list with the table, that
 * estimate let the planner scan the table once per row of the list: minutes for a portfolio's backfill. The
 * LATERAL's LIMIT keeps the lookup from being flattened into such a join (the key is unique: one row at most).
 */
export const DELETE_REFRESHED: Readonly<Record<Dialect, { lock?: string; text: string }>> = {
  sqlite: { text: 'DELETE FROM aggregate_invalidations WHERE floor_space_key = ? AND first_ms = ? AND revision = ?' },
  postgres: {
    lock: 'SELECT floor_space_key FROM aggregate_invalidations WHERE floor_space_key = ANY($1::int4[]) ORDER BY floor_space_key, first_ms FOR UPDATE',
    text:
      'DELETE FROM aggregate_invalidations WHERE ctid = ANY (ARRAY(SELECT x.ctid FROM unnest($1::int4[], $2::int8[], $3::int8[]) AS u(k, f, r) ' +
      'CROSS JOIN LATERAL (SELECT a.ctid FROM aggregate_invalidations a WHERE a.floor_space_key = u.k AND a.first_ms = u.f AND a.revision = u.r LIMIT 1) x))',
  },
};

interface Pending {
  key: number;
  first: number;
  last: number;
  revision: number;
}

/**
 * What a refresh recomputes per transaction: floor spaces of one or more buildings, this many at most (a building with
 * more is cut). Several small buildings share a transaction: one lock statement, one read of the pending rows, one
 * compare-and-delete and one commit for all of them instead of one each. The readings and buckets still go KEY_CHUNK
 * spaces a statement (what is held at once), the statements around them (locks, calendars, pending rows, days, floors,
 * the compare-and-delete) once for four such chunks: a long lock on many buildings against a dozen round trips fewer
 * per chunk.
 */
export const SPACES_PER_TRANSACTION = 4 * KEY_CHUNK;

/** Buildings' floor spaces (ordered by building) cut into transactions of at most `size` spaces. */
function batches(byBuilding: ReadonlyMap<string, number[]>, size: number): Array<Map<string, number[]>> {
  const out: Array<Map<string, number[]>> = [];
  let batch = new Map<string, number[]>();
  let count = 0;
  for (const [building, keys] of byBuilding) {
    for (let i = 0; i < keys.length; ) {
      if (count === size) {
        out.push(batch);
        batch = new Map();
        count = 0;
      }
      const part = keys.slice(i, i + size - count);
      batch.set(building, part);
      count += part.length;
      i += part.length;
    }
  }
  if (count > 0) out.push(batch);
  return out;
}

/** Page rows folded per transaction: at most this many pages' floor space ranges held at once. */
const FOLD_PAGES = 100;

/** How a refresh is asked. */
export interface RefreshOptions {
  /**
   * A refresh beside a run (run-refresh.ts): it leaves the hour holding each floor space's last reading, and what
   * follows, pending for the next refresh (aggregate-fronts.ts). Only where the claim is recomputed in its own
   * transaction; a folded claim is recomputed whole.
   */
  holdFronts?: boolean;
}

/**
 * Recomputes everything pending of a customer, building by building (spaces of no known building: ''), in
 * transactions of a few buildings' spaces under their locks, and deletes the invalidations it did (compare-and-delete).
 */
export async function refreshInvalidations(db: Adapter, customerId: string, settings: AggregateSettings, at: string, options: RefreshOptions = {}): Promise<AggregateRefresh> {
  // The common case (a run's end, a delivery's refresh) leaves nothing from before and fits one transaction: the pages'
  // rows are claimed and their floor spaces recomputed in it, without a row per space written, read back and deleted.
  // A crash rolls the claim back with the rest. Otherwise (a claim too large for one transaction, or one worth
  // several side by side) the claim is folded, and what is pending done as below.
  const first = await db.transaction(async (tx) => {
    const [before] = await tx.all(sql`SELECT 1 AS x FROM aggregate_invalidations WHERE customer_id = ${customerId} LIMIT 1`);
    const { pages, spans, since, claimed } = await claimPageInvalidations(tx, customerId, FOLD_PAGES);
    if (before === undefined && pages < FOLD_PAGES && spans.size <= SPACES_PER_TRANSACTION && concurrencyFor(db.dialect, hoursOf(allRanges(spans.values()))) === 1) {
      return { pages, done: await refreshClaimed(tx, customerId, spans, settings, at, options.holdFronts ? claimed : undefined) };
    }
    await mergeInvalidations(tx, customerId, spans, since);
    return { pages, done: undefined };
  });
  if (first.done) return first.done;
  // The pages' rows folded first (claimed and merged in one transaction), a bounded number at a time: a run whose
  // refreshes failed may have left many.
  for (let claimed = first.pages; claimed === FOLD_PAGES; ) {
    claimed = await db.transaction(async (tx) => {
      const { pages, spans, since } = await claimPageInvalidations(tx, customerId, FOLD_PAGES);
      await mergeInvalidations(tx, customerId, spans, since);
      return pages;
    });
  }
  const rows = await db.all<{ k: number | string; b: string; a: number | string; z: number | string }>(sql`
    SELECT i.floor_space_key AS k, COALESCE(f.building_id, '') AS b, i.first_ms AS a, i.last_ms AS z FROM aggregate_invalidations i
      JOIN floor_spaces f ON f.floor_space_key = i.floor_space_key
     WHERE i.customer_id = ${customerId} ORDER BY b, i.floor_space_key`);
  const byBuilding = byBuildingOf(rows);
  const out: AggregateRefresh = { customerId, spaces: 0, buckets: 0, left: 0 };
  const concurrency = concurrencyFor(db.dialect, hoursOf(rows.map((r) => [Number(r.a), Number(r.z)] as const)));
  const spaces = [...byBuilding.values()].reduce((n, keys) => n + keys.length, 0);
  const transactions = concurrency === 1 ? batches(byBuilding, SPACES_PER_TRANSACTION) : buildingGroups(byBuilding, Math.ceil(spaces / concurrency));
  await eachAtMost(concurrency, transactions, async (batch) => {
    const done = await db.transaction((tx) => refreshSpaces(tx, customerId, batch, settings, at));
    out.spaces += done.spaces;
    out.buckets += done.buckets;
    out.left += done.left;
  });
  return out;
}

/**
 * Transactions a refresh runs at once. Postgres recomputes groups of whole buildings side by side, each transaction on
 * its own connection under its own buildings' locks (disjoint, so none waits for another), the server's work spread
 * over its cores. Each gets at least MIN_HOURS_PER_TRANSACTION floor space hours to recompute: below that, folding
 * the claim and the statements of a second transaction cost more than the overlap gives (docs/performance.md), so a
 * run's usual end stays the one transaction of its claim. SQLite has one writer: one at a time.
 */
const CONCURRENT_TRANSACTIONS: Readonly<Record<Dialect, number>> = { sqlite: 1, postgres: 4 };
const MIN_HOURS_PER_TRANSACTION = 5_000;

/** How many transactions recompute `hours` floor space hours (hoursOf) at once. */
export function concurrencyFor(dialect: Dialect, hours: number): number {
  return Math.max(1, Math.min(CONCURRENT_TRANSACTIONS[dialect], Math.floor(hours / MIN_HOURS_PER_TRANSACTION)));
}

/**
 * Buildings' floor spaces in groups of whole buildings of about `size` spaces (a group is closed before the building
 * that would take it past `size`), so two groups never lock the same building; a building of more than
 * SPACES_PER_TRANSACTION spaces is cut as `batches` cuts it (its parts wait for each other's lock).
 */
export function buildingGroups(byBuilding: ReadonlyMap<string, number[]>, size: number): Array<Map<string, number[]>> {
  const out: Array<Map<string, number[]>> = [];
  let group = new Map<string, number[]>();
  let count = 0;
  for (const [building, keys] of byBuilding) {
    if (keys.length > SPACES_PER_TRANSACTION) {
      out.push(...batches(new Map([[building, keys]]), SPACES_PER_TRANSACTION));
      continue;
    }
    if (count > 0 && count + keys.length > size) {
      out.push(group);
      group = new Map();
      count = 0;
    }
    group.set(building, keys);
    count += keys.length;
  }
  if (count > 0) out.push(group);
  return out;
}

/**
 * Runs `work` on each item, at most `limit` at once, in order. After a failure no more are started; the ones running
 * are waited for (no transaction is left running behind the caller), then the first failure is thrown.
 */
async function eachAtMost<T>(limit: number, items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failed: { error: unknown } | undefined;
  const worker = async () => {
    while (failed === undefined && next < items.length) {
      const item = items[next++]!;
      try {
        await work(item);
      } catch (error) {
        failed ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failed) throw failed.error;
}

/**
 * Recomputes the floor spaces of claimed page rows (`spans`: key -> its Ranges) in the claim's transaction, under
 * their buildings' locks; a key that is none of the customer's floor spaces is left out, as a fold leaves it out.
 * `claimed` given (the claim's rows: RefreshOptions.holdFronts): only up to each range's front, the fronts recorded
 * again as one page row, stale since the oldest claimed page that wrote into them.
 */
async function refreshClaimed(tx: Executor, customerId: string, spans: ReadonlyMap<number, Ranges>, settings: AggregateSettings, at: string, claimed?: readonly ClaimedPage[]): Promise<AggregateRefresh> {
  const { dialect } = tx;
  if (spans.size === 0) return { customerId, spaces: 0, buckets: 0, left: 0 };
  const rows = await tx.all<{ k: number | string; b: string }>(sql`
    SELECT floor_space_key AS k, COALESCE(building_id, '') AS b FROM floor_spaces
     WHERE customer_id = ${customerId} AND ${keyIn(dialect, sql`floor_space_key`, [...spans.keys()])} ORDER BY b, floor_space_key`);
  const batch = await lockCurrentBuildings(tx, customerId, byBuildingOf(rows));
  const calendars = await calendarsFor(tx, customerId, [...batch.keys()], settings, at);
  if (!claimed) {
    const buckets = await recomputeSpans(tx, customerId, workOf(batch, calendars, (k) => spans.get(k)));
    return { customerId, spaces: rows.length, buckets, left: 0 };
  }
  const { work, fronts, openDates } = holdFronts(batch, calendars, (k) => spans.get(k));
  const buckets = await recomputeSpans(tx, customerId, work, { openDates });
  await recordRanges(tx, customerId, fronts, frontsSince(claimed, fronts) ?? at);
  return { customerId, spaces: rows.length, buckets, left: fronts.size };
}

/**
 * Takes the locks of the buildings the floor spaces are in, and returns them by building as they are once locked. A
 * listing that moved one to another building while this waited for a lock has recomputed its buckets in the new
 * building's calendar and committed: the space is computed in that one (its lock taken too), not in the building read
 * before the wait, whose calendar would have overwritten the listing's buckets with hours of another zone.
 */
async function lockCurrentBuildings(tx: Executor, customerId: string, batch: ReadonlyMap<string, number[]>): Promise<Map<string, number[]>> {
  const { dialect } = tx;
  const keys = [...batch.values()].flat();
  const locked = new Set<string>();
  let current = new Map(batch);
  for (let missing = [...current.keys()]; missing.length > 0; missing = [...current.keys()].filter((b) => !locked.has(b))) {
    await lockBuildings(tx, customerId, missing);
    for (const b of missing) locked.add(b);
    current = byBuildingOf(
      await tx.all<{ k: number | string; b: string }>(sql`
        SELECT floor_space_key AS k, COALESCE(building_id, '') AS b FROM floor_spaces
         WHERE customer_id = ${customerId} AND ${keyIn(dialect, sql`floor_space_key`, keys)} ORDER BY b, floor_space_key`),
    );
  }
  return current;
}

/** Floor spaces by building, in the order read (rows sorted by building; a key's rows next to each other, once). */
function byBuildingOf(rows: ReadonlyArray<{ k: number | string; b: string }>): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const r of rows) {
    const key = Number(r.k);
    const keys = out.get(r.b);
    if (!keys) out.set(r.b, [key]);
    else if (keys[keys.length - 1] !== key) keys.push(key);
  }
  return out;
}

/**
 * What recomputeSpans takes: each building's floor spaces with their stale ranges, each [first, last + its max hold),
 * joined as addRange joins them (pending rows of separate folds may overlap).
 */
function workOf(batch: ReadonlyMap<string, number[]>, calendars: ReadonlyMap<string, BuildingCalendar>, ranges: (key: number) => ReadonlyArray<readonly [number, number]> | undefined): BuildingSpans[] {
  return [...batch].map(([building, own]) => {
    const calendar = calendars.get(building)!;
    const spans: Span[] = [];
    for (const key of own) {
      const held: Ranges = [];
      for (const [a, b] of ranges(key) ?? []) addRange(held, a, b + calendar.maxHoldMs);
      for (const [fromMs, toMs] of held) spans.push({ key, fromMs, toMs });
    }
    return { calendar, spans };
  });
}

async function refreshSpaces(tx: Executor, customerId: string, read: ReadonlyMap<string, number[]>, settings: AggregateSettings, at: string): Promise<{ spaces: number; buckets: number; left: number }> {
  const { dialect } = tx;
  const batch = await lockCurrentBuildings(tx, customerId, read);
  const keys = [...batch.values()].flat();
  const calendars = await calendarsFor(tx, customerId, [...batch.keys()], settings, at);
  // Read under the lock and before the readings: every page whose revision this sees has committed its readings.
  const done = (
    await tx.all<{ k: number | string; a: number | string; b: number | string; r: number | string }>(sql`
      SELECT floor_space_key AS k, first_ms AS a, last_ms AS b, revision AS r FROM aggregate_invalidations
       WHERE ${keyIn(dialect, sql`floor_space_key`, keys)} ORDER BY floor_space_key, first_ms`)
  ).map((r): Pending => ({ key: Number(r.k), first: Number(r.a), last: Number(r.b), revision: Number(r.r) }));
  if (done.length === 0) return { spaces: 0, buckets: 0, left: 0 };
  const pending = new Map<number, Array<[number, number]>>();
  for (const p of done) {
    const ranges = pending.get(p.key);
    if (ranges) ranges.push([p.first, p.last]);
    else pending.set(p.key, [[p.first, p.last]]);
  }
  const buckets = await recomputeSpans(tx, customerId, workOf(batch, calendars, (k) => pending.get(k)));
  const statement = DELETE_REFRESHED[dialect];
  if (statement.lock) await tx.bulk(statement.lock, 1, [...pending.keys()]);
  await tx.bulk(statement.text, 3, done.flatMap((p) => [p.key, p.first, p.revision]));
  const [left] = await tx.all<{ n: number | string }>(sql`SELECT count(DISTINCT floor_space_key) AS n FROM aggregate_invalidations WHERE ${keyIn(dialect, sql`floor_space_key`, keys)}`);
  return { spaces: pending.size, buckets, left: Number(left?.n ?? 0) };
}

/**
 * Every pending range, one row per floor space and fold or page not folded yet: customer, floor space key, range,
 * since (a page's spans are groups `[first, last, key, ...]`: the keys are the group's elements from the third on).
 */
const PENDING_RANGES: Readonly<Record<Dialect, string>> = {
  sqlite: `SELECT p.customer_id AS c, k.value AS k, json_extract(e.value, '$[0]') AS a, json_extract(e.value, '$[1]') AS b,
                  p.invalidated_at AS t FROM aggregate_page_invalidations p, json_each(p.spans) AS e, json_each(e.value) AS k WHERE k.key >= 2`,
  postgres: `SELECT p.customer_id AS c, k.value::int4 AS k, (e->>0)::int8 AS a, (e->>1)::int8 AS b, p.invalidated_at AS t
               FROM aggregate_page_invalidations p, jsonb_array_elements(p.spans::jsonb) AS e, jsonb_array_elements_text(e) WITH ORDINALITY AS k(value, n) WHERE k.n > 2`,
};

/** What is pending of a customer (or all): how many floor spaces, and the oldest range and page. */
export async function pendingInvalidations(db: Pick<Adapter, 'all' | 'dialect'>, customerId?: string): Promise<PendingAggregates[]> {
  const rows = await db.all<{ c: string; n: number | string; a: number | string; b: number | string; t: string }>(sql`
    SELECT c, count(DISTINCT k) AS n, min(a) AS a, max(b) AS b, min(t) AS t FROM (
      ${sql.raw(PENDING_RANGES[db.dialect])}
      UNION ALL
      SELECT i.customer_id AS c, i.floor_space_key AS k, i.first_ms AS a, i.last_ms AS b, i.invalidated_at AS t FROM aggregate_invalidations i) AS pending
    ${customerId === undefined ? sql`` : sql`WHERE c = ${customerId}`} GROUP BY c ORDER BY c`);
  return rows.map((r) => ({ customerId: r.c, floorSpaces: Number(r.n), from: new Date(Number(r.a)).toISOString(), through: new Date(Number(r.b)).toISOString(), since: r.t }));
}
