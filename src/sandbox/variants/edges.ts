import { GraphQLError } from 'graphql';
import { API_VARIANT_INFO, spellStatus } from '../api-variants.ts';
import { decodeCursor, encodeCursor } from '../data.ts';
import { argumentError, type ResolverContext } from '../graphql.ts';
import type { HeaderPair, InputNames, WebhookRecord } from '../webhook-registry.ts';
import { buildings, checkRange, perTick, takePage } from './shared.ts';

/**
 * The `edges` variant (src/sandbox/schema-edges.graphql), after GitHub's and Shopify's Relay APIs: edges with a cursor
 * each, the window in an input object, an enum status, +00:00 times, and webhook subscriptions whose mutations report
 * bad input as userErrors.
 */

const MAX_FIRST = API_VARIANT_INFO.edges.maxPageSize;
const CURSOR_PREFIX = 'edge1:';
const SUBSCRIPTION_PREFIX = 'whs1:';

const INPUT_NAMES: InputNames = {
  url: 'input.callbackUrl',
  eventTypes: 'input.topics',
  additionalHeaders: 'input.additionalHeaders',
  signatureSecret: 'input.signatureSecret',
  clearSignatureSecret: 'input.clearSignatureSecret',
};

interface SubscriptionInput {
  callbackUrl?: string | null;
  topics?: string[];
  additionalHeaders?: HeaderPair[] | null;
  signatureSecret?: string | null;
  clearSignatureSecret?: boolean | null;
  compressed?: boolean | null;
}

function subscriptionView(record: WebhookRecord) {
  return {
    id: record.id,
    callbackUrl: record.url,
    topics: [...record.eventTypes],
    additionalHeaders: record.additionalHeaders.map((h) => ({ ...h })),
    signed: record.secret !== undefined,
    compressed: record.compress,
  };
}

/** `input.additionalHeaders[0].key` -> ["input", "additionalHeaders", "0", "key"], as Shopify's userErrors.field. */
function fieldPath(field: unknown): string[] | null {
  return typeof field === 'string' ? field.split(/[.[\]]+/).filter(Boolean) : null;
}

/** Refused input becomes a userError in the payload; anything else stays an error. */
function payload(change: () => WebhookRecord) {
  try {
    return { webhookSubscription: subscriptionView(change()), userErrors: [] };
  } catch (error) {
    if (!(error instanceof GraphQLError)) throw error;
    const code = error.extensions.code;
    if (code !== 'BAD_USER_INPUT' && code !== 'NOT_FOUND') throw error;
    return { webhookSubscription: null, userErrors: [{ field: code === 'NOT_FOUND' ? ['id'] : fieldPath(error.extensions.field), message: error.message }] };
  }
}

function positionAfter(after: string | null | undefined, prefix: string): string | undefined {
  if (after == null) return undefined;
  const text = Buffer.from(after, 'base64url').toString('utf8');
  if (!text.startsWith(prefix)) throw argumentError('after', 'after: not a cursor returned by this API (pass pageInfo.endCursor or an edge cursor unchanged)');
  return text.slice(prefix.length);
}

export const edgesRoot = {
  buildings,

  occupancyEvents(args: { filter: { observedFrom: number; observedBefore: number }; first: number; after?: string | null }, ctx: ResolverContext) {
    const first = checkRange('first', args.first, 1, MAX_FIRST);
    let after: { createdMs: number; id: string } | undefined;
    if (args.after != null) {
      after = decodeCursor(args.after, CURSOR_PREFIX);
      if (!after) throw argumentError('after', 'after: not a cursor returned by this API (pass pageInfo.endCursor or an edge cursor unchanged)');
    }
    const { filter } = args;
    const page = takePage(ctx.model.observations(ctx.customer, { fromMs: filter.observedFrom, toMs: filter.observedBefore, visibleAtMs: ctx.clock.now(), after }), first);
    const observedAt = perTick((ms) => new Date(ms).toISOString().replace(/Z$/, '+00:00'));
    const edges = page.rows.map((o) => ({
      cursor: encodeCursor(o.createdMs, o.id, CURSOR_PREFIX),
      node: {
        id: o.id,
        floorSpace: { id: o.floorSpaceId },
        status: spellStatus('edges', o.occupancyStatus),
        headcount: o.headcount,
        observedAt: observedAt(o.createdMs),
      },
    }));
    return { edges, pageInfo: { hasNextPage: page.more, endCursor: edges.at(-1)?.cursor ?? null } };
  },

  webhookSubscriptions(args: { first: number; after?: string | null }, ctx: ResolverContext) {
    const first = checkRange('first', args.first, 1, MAX_FIRST);
    const afterId = positionAfter(args.after, SUBSCRIPTION_PREFIX);
    const all = ctx.registry.list(ctx.customer.id);
    const start = afterId === undefined ? 0 : all.findIndex((h) => h.id === afterId) + 1;
    if (afterId !== undefined && start === 0) throw argumentError('after', 'after: no webhook subscription at this cursor (it was not returned by this API)');
    const edges = all.slice(start, start + first).map((h) => ({
      cursor: Buffer.from(`${SUBSCRIPTION_PREFIX}${h.id}`, 'utf8').toString('base64url'),
      node: subscriptionView(h),
    }));
    return { edges, pageInfo: { hasNextPage: start + first < all.length, endCursor: edges.at(-1)?.cursor ?? null } };
  },

  webhookSubscriptionCreate(args: { input: SubscriptionInput & { callbackUrl: string; topics: string[] } }, ctx: ResolverContext) {
    const { input } = args;
    return payload(() =>
      ctx.registry.register(
        ctx.customer.id,
        { url: input.callbackUrl, eventTypes: input.topics, additionalHeaders: input.additionalHeaders, signatureSecret: input.signatureSecret, compress: input.compressed },
        ctx.clock.now(),
        INPUT_NAMES,
      ),
    );
  },

  webhookSubscriptionUpdate(args: { id: string; input: SubscriptionInput }, ctx: ResolverContext) {
    const { input } = args;
    return payload(() =>
      ctx.registry.update(
        ctx.customer.id,
        args.id,
        {
          url: input.callbackUrl,
          additionalHeaders: input.additionalHeaders,
          signatureSecret: input.signatureSecret,
          clearSignatureSecret: input.clearSignatureSecret,
          compress: input.compressed,
        },
        INPUT_NAMES,
      ),
    );
  },
};
