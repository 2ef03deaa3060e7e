import { decodeCursor, encodeCursor } from '../data.ts';
import { argumentError, type ResolverContext } from '../graphql.ts';
import { API_VARIANT_INFO } from '../api-variants.ts';
import { buildings, checkRange, hierarchy, perTick, takePage, v1Webhooks } from './shared.ts';

const MAX_FIRST = API_VARIANT_INFO.v1.maxPageSize;

interface OccupancyArgs {
  from: number;
  to: number;
  first?: number | null;
  after?: string | null;
}

/** The assumed API of jobs/schema.graphql: `occupancy(from, to, first, after)`, Relay `nodes` + `pageInfo`. */
export const v1Root = {
  buildings,
  ...hierarchy,
  ...v1Webhooks,

  occupancy(args: OccupancyArgs, ctx: ResolverContext) {
    const first = checkRange('first', args.first ?? 1000, 0, MAX_FIRST);
    let after: { createdMs: number; id: string } | undefined;
    if (args.after != null) {
      after = decodeCursor(args.after);
      if (!after) throw argumentError('after', 'after: not a cursor returned by this API (pass pageInfo.endCursor unchanged)');
    }
    const page = takePage(ctx.model.observations(ctx.customer, { fromMs: args.from, toMs: args.to, visibleAtMs: ctx.clock.now(), after }), first);
    const iso = perTick((ms) => new Date(ms).toISOString());
    const nodes = page.rows.map((o) => ({
      id: o.id,
      floorSpaceId: o.floorSpaceId,
      occupancyStatus: o.occupancyStatus,
      headcount: o.headcount,
      created: iso(o.createdMs),
    }));
    const last = page.rows.at(-1);
    return { nodes, pageInfo: { hasNextPage: page.more, endCursor: last ? encodeCursor(last.createdMs, last.id) : null } };
  },
};
