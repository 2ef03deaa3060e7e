import { sql } from '../../db/schema/drizzle.ts';
import type { Executor } from './adapter.ts';
import { addRange, type Ranges } from './aggregate-plan.ts';

/**
 * A poll page's share of the aggregates: one row appended in its transaction, its floor spaces' ranges as JSON, which a
 * refresh claims, or folds into aggregate_invalidations (a row per floor space and stale range), before it recomputes.
 * An append costs a page one row, whatever its floor spaces; the upsert of a row per floor space it replaced cost a
 * Postgres page about as much as its readings' insert (docs/performance.md, "Keeping the time-weighted aggregates (issue 40)").
 */

/**
 * The page's floor spaces grouped by the first and last instant of their readings: `[first, last, key, key, ...]` per
 * group, from each key's first and last canonical text (the sink's fill found them, record by record: occupancy-sink.ts).
 * A backfill's page holds a window of every space's ticks, so most spaces share one pair and a group costs a few bytes
 * a space (a row per space named by id cost about 70). Two parses per group.
 */
export function pageSpans(spans: ReadonlyMap<number, readonly [string, string]>): PageSpans {
  const groups = new Grouped<string>();
  for (const [key, [a, b]] of spans) groups.add(a, b, key);
  return groups.spans(Date.parse);
}

/** Floor space keys grouped by first, then last (no joined text a floor space). */
class Grouped<T> {
  readonly #groups = new Map<T, Map<T, number[]>>();

  add(first: T, last: T, key: number): void {
    let byLast = this.#groups.get(first);
    if (!byLast) this.#groups.set(first, (byLast = new Map()));
    const group = byLast.get(last);
    if (group) group.push(key);
    else byLast.set(last, [key]);
  }

  /** `[first, last, key, key, ...]` per group, each bound read once by `ms`. */
  spans(ms: (bound: T) => number): PageSpans {
    const out: PageSpans = [];
    for (const [a, byLast] of this.#groups) {
      const first = ms(a);
      for (const [b, keys] of byLast) out.push([first, ms(b), ...keys]);
    }
    return out;
  }
}

/** A page's floor spaces' spans as pageSpans groups them: `[first, last, key, key, ...]` per group. */
export type PageSpans = Array<[number, number, ...number[]]>;

/**
 * Folds span groups into each floor space key's stale ranges (addRange: a backfill's windows stay apart); `named` (if
 * any) is told each key a group names.
 */
export function foldRanges(into: Map<number, Ranges>, groups: ReadonlyArray<readonly number[]>, named?: (key: number) => void): void {
  for (const group of groups) {
    const a = group[0]!;
    const b = group[1]!;
    for (let i = 2; i < group.length; i++) {
      const key = group[i]!;
      const ranges = into.get(key);
      if (!ranges) into.set(key, [[a, b]]);
      else addRange(ranges, a, b);
      named?.(key);
    }
  }
}

/** In a page's transaction, after its upsert (which found `readingSpans`): one row of its floor spaces' spans, which it returns. */
export async function recordInvalidations(tx: Executor, customerId: string, readingSpans: ReadonlyMap<number, readonly [string, string]>, at: string): Promise<PageSpans> {
  const spans = pageSpans(readingSpans);
  await recordSpans(tx, customerId, spans, at);
  return spans;
}

async function recordSpans(tx: Executor, customerId: string, spans: PageSpans, at: string): Promise<void> {
  if (spans.length === 0) return;
  await tx.runAhead(sql`INSERT INTO aggregate_page_invalidations (customer_id, spans, invalidated_at) VALUES (${customerId}, ${JSON.stringify(spans)}, ${at})`);
}

/**
 * Floor spaces' ranges (by key: its Ranges) recorded as one page row, as a page records its spans (grouped by range),
 * stale since `at`: what a refresh leaves pending for the next (aggregate-fronts.ts).
 */
export async function recordRanges(tx: Executor, customerId: string, ranges: ReadonlyMap<number, Ranges>, at: string): Promise<void> {
  const groups = new Grouped<number>();
  for (const [key, own] of ranges) for (const [a, b] of own) groups.add(a, b, key);
  await recordSpans(tx, customerId, groups.spans((ms) => ms), at);
}

/**
 * Claims up to `limit` of a customer's page rows, oldest first, by deleting them (a concurrent claim finds them gone)
 * and merges them per floor space key: its stale ranges, and the commit time of the oldest page that named it. The
 * caller writes the merge in the same transaction (aggregate-invalidations.ts), so a crash leaves either the rows or
 * their fold, never neither.
 */
export async function claimPageInvalidations(tx: Executor, customerId: string, limit: number): Promise<ClaimedPages> {
  const rows = await tx.all<{ s: string; t: string }>(sql`
    DELETE FROM aggregate_page_invalidations
     WHERE id IN (SELECT id FROM aggregate_page_invalidations WHERE customer_id = ${customerId} ORDER BY id LIMIT ${limit})
    RETURNING spans AS s, invalidated_at AS t`);
  const spans = new Map<number, Ranges>();
  const since = new Map<number, string>();
  const claimed: ClaimedPage[] = [];
  for (const row of rows) {
    const groups = JSON.parse(row.s) as PageSpans;
    claimed.push({ at: row.t, groups });
    foldRanges(spans, groups, (key) => {
      const t = since.get(key);
      if (t === undefined || row.t < t) since.set(key, row.t);
    });
  }
  return { pages: rows.length, spans, since, claimed };
}

/** A claimed page row: when it was stale from, and its span groups. */
export interface ClaimedPage {
  at: string;
  groups: PageSpans;
}

export interface ClaimedPages {
  pages: number;
  /** Per floor space key, its stale ranges. */
  spans: Map<number, Ranges>;
  /** Per floor space key, the commit time of the oldest page that named it. */
  since: Map<number, string>;
  claimed: ClaimedPage[];
}
