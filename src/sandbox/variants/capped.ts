import { API_VARIANT_INFO } from '../api-variants.ts';
import type { ResolverContext } from '../graphql.ts';
import { buildings, perTick, takePage, v1Webhooks } from './shared.ts';

/**
 * The `capped` variant (src/sandbox/schema-capped.graphql): v1's records in one unpaged list that stops at 500, their
 * times in epoch seconds (a JSON number).
 */

const CAP = API_VARIANT_INFO.capped.maxPageSize;

export const cappedRoot = {
  buildings,
  ...v1Webhooks,

  occupancyReadings(args: { from: number; to: number }, ctx: ResolverContext) {
    // The cut is silent on purpose: nothing in the answer tells that more readings exist.
    const page = takePage(ctx.model.observations(ctx.customer, { fromMs: args.from, toMs: args.to, visibleAtMs: ctx.clock.now() }), CAP);
    // Readings lie on whole seconds (ticks), so seconds lose nothing.
    const seconds = perTick((ms) => Math.floor(ms / 1000));
    return page.rows.map((o) => ({
      id: o.id,
      floorSpaceId: o.floorSpaceId,
      occupancyStatus: o.occupancyStatus,
      headcount: o.headcount,
      created: seconds(o.createdMs),
    }));
  },
};
