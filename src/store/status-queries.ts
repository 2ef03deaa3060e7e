import type { Store } from './types.ts';

/**
 * The reads of `status`, /healthz, the metrics textfile, the demo's summary and the data checks: views and tables of
 * the documented schema (docs/reporting.md), the same SQL on both dialects, rows as the driver gives them.
 */

export type StatusRow = Record<string, unknown>;

/**
 * The query a user runs to see quarantined records, as messages name it (the run summary): the store names its
 * tables.
 */
export const QUARANTINED_RECORDS_QUERY = 'SELECT * FROM quarantined_records';

/** Every row of `sync_health`. On Postgres a query that outlasts `timeoutMs` is cancelled on the server. */
export function syncHealthRows(store: Store, timeoutMs: number): Promise<StatusRow[]> {
  return store.query<StatusRow>('SELECT * FROM sync_health', [], { timeoutMs });
}

/** What /metrics shows of `sync_health`: lag and last success per customer and state key. */
export function syncHealthFigures(store: Store): Promise<StatusRow[]> {
  return store.query<StatusRow>('SELECT customer_id, stream, lag_seconds, last_success_at FROM sync_health');
}

/**
 * A customer's live buildings, floors and listed floor spaces (a row only readings made has never been listed), and
 * its occupancy readings with the first and last reading's time.
 */
export async function customerDataCounts(
  store: Store,
  customerId: string,
): Promise<{ buildings: unknown; floors: unknown; floorSpaces: unknown; observations: unknown; first: unknown; last: unknown }> {
  const [b] = await store.query<{ n: unknown }>('SELECT count(*) AS n FROM buildings WHERE customer_id = $1 AND deleted_at IS NULL', [customerId]);
  const [f] = await store.query<{ n: unknown }>('SELECT count(*) AS n FROM floors WHERE customer_id = $1 AND deleted_at IS NULL', [customerId]);
  const [s] = await store.query<{ n: unknown }>(
    'SELECT count(*) AS n FROM floor_spaces WHERE customer_id = $1 AND first_seen_at IS NOT NULL AND deleted_at IS NULL',
    [customerId],
  );
  const [o] = await store.query<{ n: unknown; first: unknown; last: unknown }>(
    'SELECT count(*) AS n, min(observed_at) AS first, max(observed_at) AS last FROM occupancy WHERE customer_id = $1',
    [customerId],
  );
  return { buildings: b?.n, floors: f?.n, floorSpaces: s?.n, observations: o?.n, first: o?.first, last: o?.last };
}

/** A customer's deliveries missed and unconfirmed (view `webhook_reconciliation`) on the days from `since` (YYYY-MM-DD). */
export async function reconciliationSince(store: Store, customerId: string, since: string): Promise<{ missed: unknown; unconfirmed: unknown }> {
  const [row] = await store.query<{ missed: unknown; unconfirmed: unknown }>(
    `SELECT COALESCE(sum(missed_deliveries), 0) AS missed, COALESCE(sum(unconfirmed_deliveries), 0) AS unconfirmed
       FROM webhook_reconciliation WHERE customer_id = $1 AND day >= $2`,
    [customerId, since],
  );
  return { missed: row?.missed, unconfirmed: row?.unconfirmed };
}
