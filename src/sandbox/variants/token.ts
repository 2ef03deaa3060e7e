import { API_VARIANT_INFO, spellStatus } from '../api-variants.ts';
import { decodeCursor, encodeCursor } from '../data.ts';
import { argumentError, type ResolverContext } from '../graphql.ts';
import { buildings, checkRange, takePage, v1Webhooks } from './shared.ts';

/**
 * The `token` variant (src/sandbox/schema-token.graphql), after AWS AppSync over DynamoDB: items + nextToken, bounds
 * in epoch seconds with an inclusive end, times in epoch milliseconds, statuses in lower case.
 */

const MAX_LIMIT = API_VARIANT_INFO.token.maxPageSize;
const DEFAULT_LIMIT = 100;
const TOKEN_PREFIX = 'tok1:';

export const tokenRoot = {
  buildings,
  ...v1Webhooks,

  listOccupancyReadings(args: { startTime: number; endTime: number; limit?: number | null; nextToken?: string | null }, ctx: ResolverContext) {
    const limit = checkRange('limit', args.limit ?? DEFAULT_LIMIT, 1, MAX_LIMIT);
    let after: { createdMs: number; id: string } | undefined;
    if (args.nextToken != null) {
      after = decodeCursor(args.nextToken, TOKEN_PREFIX);
      if (!after) throw argumentError('nextToken', 'nextToken: not a token returned by this API (pass the nextToken of the previous page unchanged)');
    }
    // Both ends inclusive, at the data's millisecond precision: endTime's whole millisecond counts, nothing after it.
    const page = takePage(
      ctx.model.observations(ctx.customer, { fromMs: args.startTime * 1000, toMs: args.endTime * 1000 + 1, visibleAtMs: ctx.clock.now(), after }),
      limit,
    );
    const items = page.rows.map((o) => ({
      id: o.id,
      floorSpaceId: o.floorSpaceId,
      status: spellStatus('token', o.occupancyStatus),
      headcount: o.headcount,
      timestamp: o.createdMs,
    }));
    const last = page.rows.at(-1);
    // As DynamoDB does: a full page always hands out a token, even when nothing follows (the next page is then empty).
    return { items, nextToken: last && items.length === limit ? encodeCursor(last.createdMs, last.id, TOKEN_PREFIX) : null };
  },
};
