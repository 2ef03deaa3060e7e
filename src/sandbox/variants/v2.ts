import { argumentError, type ResolverContext } from '../graphql.ts';
import { API_VARIANT_INFO } from '../api-variants.ts';
import { webhookView, type RegisterInput } from '../webhook-registry.ts';
import { buildings, checkRange, isoAtOffset, perTick, v1Webhooks } from './shared.ts';

const MAX_LIMIT = API_VARIANT_INFO.v2.maxPageSize;
/** v2 writes times in its local zone, UTC+02:00: the instant is the same, the digits two hours ahead. */
const OFFSET_MINUTES = 120;

/** src/sandbox/schema-v2.graphql: offset-paged readings nested as buildings -> floor spaces -> readings; createWebhook. */
export const v2Root = {
  buildings,
  webhooks: v1Webhooks.webhooks,
  updateWebhook: v1Webhooks.updateWebhook,
  sendTestEvent: v1Webhooks.sendTestEvent,

  floorSpaceReadings(args: { since: number; until: number; limit: number; offset?: number | null }, ctx: ResolverContext) {
    const limit = checkRange('limit', args.limit, 0, MAX_LIMIT);
    const offset = args.offset ?? 0;
    if (!Number.isInteger(offset) || offset < 0) throw argumentError('offset', `offset must be 0 or more, got ${offset}`);
    const rows = ctx.model.observations(ctx.customer, { fromMs: args.since, toMs: args.until, visibleAtMs: ctx.clock.now(), skip: offset });
    const observedAt = perTick((ms) => isoAtOffset(ms, OFFSET_MINUTES));
    const buildingsById = new Map<string, Map<string, Array<Record<string, unknown>>>>();
    let taken = 0;
    for (const o of rows) {
      if (taken++ === limit) break;
      let spaces = buildingsById.get(o.buildingId);
      if (!spaces) buildingsById.set(o.buildingId, (spaces = new Map()));
      let readings = spaces.get(o.floorSpaceId);
      if (!readings) spaces.set(o.floorSpaceId, (readings = []));
      readings.push({ id: o.id, status: o.occupancyStatus, people: o.headcount, observedAt: observedAt(o.createdMs) });
    }
    return [...buildingsById].map(([buildingId, spaces]) => ({
      buildingId,
      floorSpaces: [...spaces].map(([floorSpaceId, readings]) => ({ floorSpaceId, readings })),
    }));
  },

  /** v2's name for registerWebhook. */
  createWebhook(args: { input: RegisterInput }, ctx: ResolverContext) {
    return webhookView(ctx.registry.register(ctx.customer.id, args.input, ctx.clock.now()));
  },
};
