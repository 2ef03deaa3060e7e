import { API_VARIANT_INFO } from '../api-variants.ts';
import { decodeCursor, encodeCursor } from '../data.ts';
import { argumentError, type ResolverContext } from '../graphql.ts';
import { buildings, checkRange, hierarchy, perTick, takePage, v1Webhooks } from './shared.ts';

/**
 * The `per-space` variant (src/sandbox/schema-per-space.graphql): readings reachable only per floor space, the
 * hierarchy listed as the default variant lists it; Relay nodes + pageInfo over [from, to) in ISO 8601, readings without their
 * space's id.
 */

const MAX_FIRST = API_VARIANT_INFO['per-space'].maxPageSize;
const CURSOR_PREFIX = 'spc1:';

export const perSpaceRoot = {
  buildings,
  // The floors and floor spaces as the default variant lists them: only the readings are reachable otherwise.
  ...hierarchy,
  ...v1Webhooks,

  floorSpaceOccupancy(args: { floorSpaceId: string; from: number; to: number; first?: number | null; after?: string | null }, ctx: ResolverContext) {
    // Any space the customer has had answers its history (a removed building's spaces keep theirs); others are unknown.
    if (!ctx.customer.buildings.some((b) => b.floorSpaces.some((fs) => fs.id === args.floorSpaceId))) {
      throw argumentError('floorSpaceId', `floorSpaceId: no floor space ${JSON.stringify(args.floorSpaceId)}`);
    }
    const first = checkRange('first', args.first ?? 500, 1, MAX_FIRST);
    let after: { createdMs: number; id: string } | undefined;
    if (args.after != null) {
      after = decodeCursor(args.after, CURSOR_PREFIX);
      if (!after) throw argumentError('after', 'after: not a cursor returned by this API (pass pageInfo.endCursor unchanged)');
    }
    const rows = ctx.model.observations(ctx.customer, { fromMs: args.from, toMs: args.to, visibleAtMs: ctx.clock.now(), after, floorSpaceId: args.floorSpaceId });
    const page = takePage(rows, first);
    const iso = perTick((ms) => new Date(ms).toISOString());
    const nodes = page.rows.map((o) => ({ id: o.id, occupancyStatus: o.occupancyStatus, headcount: o.headcount, created: iso(o.createdMs) }));
    const last = page.rows.at(-1);
    return { nodes, pageInfo: { hasNextPage: page.more, endCursor: last ? encodeCursor(last.createdMs, last.id, CURSOR_PREFIX) : null } };
  },
};
