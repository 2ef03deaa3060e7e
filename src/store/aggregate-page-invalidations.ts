import { sql } from '../../db/schema/drizzle.ts';
import type { Executor } from './adapter.ts';
import type { OccupancyRecord } from './types.ts';

/**
 * A poll page's share of the aggregates: one row appended in its transaction, its floor spaces' ranges as JSON, which a
 * refresh folds into aggregate_invalidations (one row per floor space) before it recomputes. An append costs a page one
 * row, whatever its floor spaces; the upsert of a row per floor space it replaced cost a Postgres page about as much
 * as its readings' insert (docs/performance.md, "Keeping the time-weighted aggregates (issue 40)").
 */

/**
 * Each floor space id of a page with the first and last instant of its readings. The upsert before it refused any
 * time not in the canonical form, whose text sorts as its instant: two parses per space, not one per reading.
 */
function spansOf(records: ReadonlyArray<OccupancyRecord>): Array<[string, number, number]> {
  const text = new Map<string, [string, string]>();
  for (const r of records) {
    const at = r.observedAt;
    const span = text.get(r.floorSpaceId);
    if (!span) text.set(r.floorSpaceId, [at, at]);
    else if (at < span[0]) span[0] = at;
    else if (at > span[1]) span[1] = at;
  }
  return [...text].map(([id, [a, b]]) => [id, Date.parse(a), Date.parse(b)]);
}

/** In a page's transaction, after its upsert: one row of each floor space's readings' span. */
export async function recordInvalidations(tx: Executor, customerId: string, records: ReadonlyArray<OccupancyRecord>, at: string): Promise<void> {
  const spans = spansOf(records);
  if (spans.length === 0) return;
  await tx.run(sql`INSERT INTO aggregate_page_invalidations (customer_id, spans, invalidated_at) VALUES (${customerId}, ${JSON.stringify(spans)}, ${at})`);
}

/**
 * Claims up to `limit` of a customer's page rows, oldest first, by deleting them (a concurrent claim finds them gone)
 * and merges them per floor space id: [first, last, the commit time of the oldest page that named it]. The caller
 * writes the merge in the same transaction (aggregate-invalidations.ts), so a crash leaves either the rows or their
 * fold, never neither.
 */
export async function claimPageInvalidations(tx: Executor, customerId: string, limit: number): Promise<{ pages: number; spans: Map<string, [number, number, string]> }> {
  const rows = await tx.all<{ s: string; t: string }>(sql`
    DELETE FROM aggregate_page_invalidations
     WHERE id IN (SELECT id FROM aggregate_page_invalidations WHERE customer_id = ${customerId} ORDER BY id LIMIT ${limit})
    RETURNING spans AS s, invalidated_at AS t`);
  const merged = new Map<string, [number, number, string]>();
  for (const row of rows) {
    for (const [id, a, b] of JSON.parse(row.s) as Array<[string, number, number]>) {
      const span = merged.get(id);
      if (!span) merged.set(id, [a, b, row.t]);
      else {
        if (a < span[0]) span[0] = a;
        if (b > span[1]) span[1] = b;
        if (row.t < span[2]) span[2] = row.t;
      }
    }
  }
  return { pages: rows.length, spans: merged };
}
