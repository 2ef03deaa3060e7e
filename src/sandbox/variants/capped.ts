import { API_VARIANT_INFO } from '../api-variants.ts';
import type { ResolverContext } from '../graphql.ts';
import { buildings, perTick, takePage, v1Webhooks } from './shared.ts';

/** The `capped` variant (src/sandbox/schema-capped.graphql): v1's records in one unpaged list that stops at 500. */

const CAP = API_VARIANT_INFO.capped.maxPageSize;

export const cappedRoot = {
  buildings,
  ...v1Webhooks,

  occupancyReadings(args: { from: number; to: number }, ctx: ResolverContext) {
    // The cut is silent on purpose: nothing in the answer tells that more readings exist.
    const page = takePage(ctx.model.observations(ctx.customer, { fromMs: args.from, toMs: args.to, visibleAtMs: ctx.clock.now() }), CAP);
    const iso = perTick((ms) => new Date(ms).toISOString());
    return page.rows.map((o) => ({
      id: o.id,
      floorSpaceId: o.floorSpaceId,
      occupancyStatus: o.occupancyStatus,
      headcount: o.headcount,
      created: iso(o.createdMs),
    }));
  },
};
