import { API_VARIANT_INFO, spellStatus } from '../api-variants.ts';
import { argumentError, type ResolverContext } from '../graphql.ts';
import { buildings, checkRange, perTick, v1Webhooks } from './shared.ts';

/**
 * The `pages` variant (src/sandbox/schema-pages.graphql): page numbers from 1 with a total, bounds and times as epoch
 * milliseconds in numeric strings, statuses Occupied / Unoccupied.
 */

const MAX_PAGE_SIZE = API_VARIANT_INFO.pages.maxPageSize;

function epochMsString(field: string, value: string): number {
  const ms = Number(value);
  if (!/^\d{1,16}$/.test(value) || !Number.isSafeInteger(ms)) {
    throw argumentError(field, `${field} must be epoch milliseconds as a string of digits, e.g. "1732440000000"; got ${JSON.stringify(value)}`);
  }
  return ms;
}

export const pagesRoot = {
  buildings,
  ...v1Webhooks,

  occupancyPage(args: { from: string; to: string; page: number; pageSize: number }, ctx: ResolverContext) {
    const fromMs = epochMsString('from', args.from);
    const toMs = epochMsString('to', args.to);
    if (!Number.isInteger(args.page) || args.page < 1) throw argumentError('page', `page must be 1 or more (pages are numbered from 1), got ${args.page}`);
    const pageSize = checkRange('pageSize', args.pageSize, 1, MAX_PAGE_SIZE);
    const window = { fromMs, toMs, visibleAtMs: ctx.clock.now() };
    const totalCount = ctx.model.countObservations(ctx.customer, window);
    const readings = [];
    const recordedAt = perTick((ms) => String(ms));
    // A page past the last skips everything and is empty; computing it costs only the count of its ticks.
    for (const o of ctx.model.observations(ctx.customer, { ...window, skip: (args.page - 1) * pageSize })) {
      if (readings.length === pageSize) break;
      readings.push({
        id: o.id,
        floorSpaceId: o.floorSpaceId,
        status: spellStatus('pages', o.occupancyStatus),
        headcount: o.headcount,
        recordedAt: recordedAt(o.createdMs),
      });
    }
    return { totalCount, totalPages: Math.ceil(totalCount / pageSize), page: args.page, pageSize, readings };
  },
};
