import { GraphQLError } from 'graphql';
import type { Observation } from '../data.ts';
import { argumentError, likeMatcher, type ResolverContext } from '../graphql.ts';
import { webhookView, type RegisterInput, type UpdateInput } from '../webhook-registry.ts';

/** The documented query, the same in every variant. */
export const buildings = (args: { nameLike?: string | null }, ctx: ResolverContext) => {
  const matches = likeMatcher(args.nameLike ?? undefined);
  return ctx.model
    .currentBuildings(ctx.customer, ctx.clock.now())
    .filter((b) => matches(b.name))
    .map((b) => ({ id: b.id, name: b.name, timeZone: b.timeZone }));
};

/** The assumed listings of the hierarchy (jobs/schema.graphql): the floors and floor spaces of the buildings present. */
export const hierarchy = {
  floors(_args: unknown, ctx: ResolverContext) {
    return ctx.model
      .currentBuildings(ctx.customer, ctx.clock.now())
      .flatMap((b) => b.floors.map((f) => ({ id: f.id, buildingId: f.buildingId, name: f.name, level: f.level })));
  },

  floorSpaces(_args: unknown, ctx: ResolverContext) {
    return ctx.model
      .currentBuildings(ctx.customer, ctx.clock.now())
      .flatMap((b) =>
        b.floorSpaces.map((f) => ({ id: f.id, buildingId: f.buildingId, floorId: f.floorId, name: f.name, capacity: f.capacity, spaceType: f.spaceType })),
      );
  },
};

/** The assumed webhook operations of jobs/schema.graphql, which v1, token, pages and capped serve unchanged. */
export const v1Webhooks = {
  webhooks(_args: unknown, ctx: ResolverContext) {
    return ctx.registry.list(ctx.customer.id).map(webhookView);
  },

  registerWebhook(args: { input: RegisterInput }, ctx: ResolverContext) {
    return webhookView(ctx.registry.register(ctx.customer.id, args.input, ctx.clock.now()));
  },

  updateWebhook(args: { id: string; input: UpdateInput }, ctx: ResolverContext) {
    return webhookView(ctx.registry.update(ctx.customer.id, args.id, args.input));
  },

  async sendTestEvent(args: { webhookId: string; type?: string | null }, ctx: ResolverContext) {
    const hook = ctx.registry.get(ctx.customer.id, args.webhookId);
    if (!hook) {
      throw new GraphQLError(`webhookId: no webhook ${JSON.stringify(args.webhookId)} for this customer`, {
        extensions: { code: 'NOT_FOUND' },
      });
    }
    return ctx.engine.sendTest(hook, args.type ?? 'Occupancy');
  },
};

/** An integer argument within [min, max], or the deterministic argument error naming it. */
export function checkRange(field: string, value: number, min: number, max: number, hint = ''): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw argumentError(field, `${field} must be between ${min} and ${max}${hint}, got ${value}`);
  }
  return value;
}

/**
 * Up to `size` rows, and whether another follows. Reading one row past the page tells that without counting the
 * rest; the generator is closed, so the ticks beyond it are never computed.
 */
export function takePage(rows: Generator<Observation>, size: number): { rows: Observation[]; more: boolean } {
  const page: Observation[] = [];
  let more = false;
  for (;;) {
    const next = rows.next();
    if (next.done) break;
    if (page.length === size) {
      more = true;
      break;
    }
    page.push(next.value);
  }
  rows.return(undefined);
  return { rows: page, more };
}

/** ISO 8601 at a fixed offset from UTC (`2026-01-08T12:05:00.000+02:00` for 10:05Z): the same instant, local digits. */
export function isoAtOffset(ms: number, offsetMinutes: number): string {
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  const zone = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
  return `${new Date(ms + offsetMinutes * 60_000).toISOString().slice(0, 23)}${zone}`;
}

/**
 * A formatter of tick instants that remembers the last one: the rows of a tick share `created`, and formatting it
 * per row dominated large pages.
 */
export function perTick<T>(format: (ms: number) => T): (ms: number) => T {
  let lastMs = Number.NaN;
  let last!: T;
  return (ms) => {
    if (ms !== lastMs) {
      lastMs = ms;
      last = format(ms);
    }
    return last;
  };
}
