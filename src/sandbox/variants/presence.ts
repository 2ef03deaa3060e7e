import { API_VARIANT_INFO } from '../api-variants.ts';
import { decodeCursor, encodeCursor } from '../data.ts';
import { argumentError, type ResolverContext } from '../graphql.ts';
import { buildings, checkRange, perTick, takePage, v1Webhooks } from './shared.ts';

/**
 * The `presence` variant (src/sandbox/schema-presence.graphql): presence-only sensors, an occupied flag and no
 * headcount field at all; Relay nodes + pageInfo over [from, to) in ISO 8601.
 */

const MAX_FIRST = API_VARIANT_INFO.presence.maxPageSize;
const CURSOR_PREFIX = 'prs1:';

export const presenceRoot = {
  buildings,
  ...v1Webhooks,

  presence(args: { from: number; to: number; first?: number | null; after?: string | null }, ctx: ResolverContext) {
    const first = checkRange('first', args.first ?? 500, 1, MAX_FIRST);
    let after: { createdMs: number; id: string } | undefined;
    if (args.after != null) {
      after = decodeCursor(args.after, CURSOR_PREFIX);
      if (!after) throw argumentError('after', 'after: not a cursor returned by this API (pass pageInfo.endCursor unchanged)');
    }
    const page = takePage(ctx.model.observations(ctx.customer, { fromMs: args.from, toMs: args.to, visibleAtMs: ctx.clock.now(), after }), first);
    const iso = perTick((ms) => new Date(ms).toISOString());
    const nodes = page.rows.map((o) => ({
      id: o.id,
      spaceId: o.floorSpaceId,
      occupied: o.occupancyStatus === 'CurrentlyOccupied',
      observedAt: iso(o.createdMs),
    }));
    const last = page.rows.at(-1);
    return { nodes, pageInfo: { hasNextPage: page.more, endCursor: last ? encodeCursor(last.createdMs, last.id, CURSOR_PREFIX) : null } };
  },
};
