import { API_VARIANT_INFO, spellStatus } from '../api-variants.ts';
import { decodeCursor, encodeCursor, type CustomerData, type DataModel, type Observation } from '../data.ts';
import { argumentError, type ResolverContext } from '../graphql.ts';
import { buildings, checkRange, perTick, takePage, v1Webhooks } from './shared.ts';

/**
 * The `change` variant (src/sandbox/schema-change.graphql): change-only sensors, an event only when a space's status
 * changes; a list + nextCursor over [from, to) in ISO 8601, statuses spelled Occupied / Available.
 */

const MAX_LIMIT = API_VARIANT_INFO.change.maxPageSize;
const DEFAULT_LIMIT = 100;
const CURSOR_PREFIX = 'chg1:';

/**
 * The observations of `rows` (ordered by time, as DataModel.observations yields them) that are status changes: a
 * space's reading whose status differs from its reading at the tick before, or that has none there (the first tick,
 * or a building that came back). The tick before is the sensor's true state whether or not it is visible yet, so an
 * event never depends on when it is asked for.
 */
export function* statusChanges(model: DataModel, customer: CustomerData, rows: Iterable<Observation>): Generator<Observation> {
  let tickMs = Number.NaN;
  let before = new Map<string, string>();
  for (const o of rows) {
    if (o.createdMs !== tickMs) {
      tickMs = o.createdMs;
      const k = Math.round((o.createdMs - model.dataStartMs) / model.intervalMs);
      before = new Map(k > 0 ? model.tickObservations(customer, k - 1).map((p) => [p.floorSpaceId, p.occupancyStatus]) : []);
    }
    if (before.get(o.floorSpaceId) !== o.occupancyStatus) yield o;
  }
}

export const changeRoot = {
  buildings,
  ...v1Webhooks,

  statusChanges(args: { from: number; to: number; limit?: number | null; cursor?: string | null }, ctx: ResolverContext) {
    const limit = checkRange('limit', args.limit ?? DEFAULT_LIMIT, 1, MAX_LIMIT);
    let after: { createdMs: number; id: string } | undefined;
    if (args.cursor != null) {
      after = decodeCursor(args.cursor, CURSOR_PREFIX);
      if (!after) throw argumentError('cursor', 'cursor: not a cursor returned by this API (pass the nextCursor of the previous page unchanged)');
    }
    const rows = ctx.model.observations(ctx.customer, { fromMs: args.from, toMs: args.to, visibleAtMs: ctx.clock.now(), after });
    const page = takePage(statusChanges(ctx.model, ctx.customer, rows), limit);
    const iso = perTick((ms) => new Date(ms).toISOString());
    const changes = page.rows.map((o) => ({
      id: o.id,
      floorSpaceId: o.floorSpaceId,
      status: spellStatus('change', o.occupancyStatus),
      headcount: o.headcount,
      changedAt: iso(o.createdMs),
    }));
    const last = page.rows.at(-1);
    return { changes, nextCursor: page.more && last ? encodeCursor(last.createdMs, last.id, CURSOR_PREFIX) : null };
  },
};
