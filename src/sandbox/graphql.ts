import { readFileSync } from 'node:fs';
import { buildSchema, GraphQLError, GraphQLScalarType, Kind, type GraphQLSchema } from 'graphql';
import type { Clock } from '../clock.ts';
import { decodeCursor, encodeCursor, type CustomerData, type DataModel } from './data.ts';
import type { DeliveryEngine } from './deliveries.ts';
import { webhookView, type RegisterInput, type UpdateInput, type WebhookRegistry } from './webhook-registry.ts';

export const MAX_PAGE_SIZE = 5000;

/** The committed, assumed SDL (jobs/schema.graphql); the sandbox serves exactly this unless told otherwise. */
export function defaultSchemaSdl(): string {
  return readFileSync(new URL('../../jobs/schema.graphql', import.meta.url), 'utf8');
}

/** The API variants the sandbox can serve: `v1` the assumed one, `v2` differently shaped (src/sandbox/schema-v2.graphql). */
export const API_VARIANTS = ['v1', 'v2'] as const;
export type ApiVariant = (typeof API_VARIANTS)[number];

/** The SDL of an API variant. */
export function variantSchemaSdl(variant: ApiVariant): string {
  return variant === 'v2' ? readFileSync(new URL('./schema-v2.graphql', import.meta.url), 'utf8') : defaultSchemaSdl();
}

// Offsets are required: a timestamp without one is ambiguous, and the API document speaks only of UTC.
const ISO_DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;

function parseDateTime(value: unknown): number {
  if (typeof value !== 'string' || !ISO_DATETIME.test(value) || Number.isNaN(Date.parse(value))) {
    throw new GraphQLError(
      `DateTime must be an ISO 8601 string with a time zone, e.g. "2026-01-01T00:00:00.000Z"; got ${JSON.stringify(value)}`,
    );
  }
  return Date.parse(value);
}

/**
 * buildSchema leaves custom scalars as pass-through; DateTime gets real parsing so bad input fails in validation.
 * graphql 17 reads `coerceOutputValue` and `coerceInputValue` (copied from `serialize` and `parseValue` when the
 * scalar was built, so replacing those afterwards changes nothing); literals still go through `parseLiteral`.
 */
export function buildSandboxSchema(sdl: string): GraphQLSchema {
  const schema = buildSchema(sdl);
  const dateTime = schema.getType('DateTime');
  if (dateTime instanceof GraphQLScalarType) {
    dateTime.coerceOutputValue = (value: unknown) =>
      typeof value === 'string' ? value : new Date(value as number | Date).toISOString();
    dateTime.coerceInputValue = parseDateTime;
    dateTime.parseLiteral = (ast) => {
      if (ast.kind !== Kind.STRING) throw new GraphQLError('DateTime must be a string literal');
      return parseDateTime(ast.value);
    };
  }
  return schema;
}

export interface ResolverContext {
  customer: CustomerData;
  model: DataModel;
  registry: WebhookRegistry;
  engine: DeliveryEngine;
  clock: Clock;
}

interface OccupancyArgs {
  from: number;
  to: number;
  first?: number | null;
  after?: string | null;
}

/** Root resolvers (graphql-js calls root fields of rootValue with (args, context)). */
export const rootValue = {
  buildings(args: { nameLike?: string | null }, ctx: ResolverContext) {
    const matches = likeMatcher(args.nameLike ?? undefined);
    return ctx.model
      .currentBuildings(ctx.customer, ctx.clock.now())
      .filter((b) => matches(b.name))
      .map((b) => ({ id: b.id, name: b.name }));
  },

  occupancy(args: OccupancyArgs, ctx: ResolverContext) {
    const first = args.first ?? 1000;
    if (!Number.isInteger(first) || first < 0 || first > MAX_PAGE_SIZE) {
      throw new GraphQLError(`first must be between 0 and ${MAX_PAGE_SIZE}, got ${first}`, {
        extensions: { code: 'BAD_USER_INPUT', field: 'first' },
      });
    }
    let after: { createdMs: number; id: string } | undefined;
    if (args.after != null) {
      after = decodeCursor(args.after);
      if (!after) {
        throw new GraphQLError('after: not a cursor returned by this API (pass pageInfo.endCursor unchanged)', {
          extensions: { code: 'BAD_USER_INPUT', field: 'after' },
        });
      }
    }
    const rows = ctx.model.observations(ctx.customer, {
      fromMs: args.from,
      toMs: args.to,
      visibleAtMs: ctx.clock.now(),
      after,
    });
    // Reading one row past the page tells whether another page exists, without counting the rest.
    const nodes = [];
    let hasNextPage = false;
    // Rows of a tick share `created`: format it once per tick, not per row (it dominated large pages).
    let tickMs = Number.NaN;
    let created = '';
    for (;;) {
      const next = rows.next();
      if (next.done) break;
      if (nodes.length === first) {
        hasNextPage = true;
        break;
      }
      const o = next.value;
      if (o.createdMs !== tickMs) {
        tickMs = o.createdMs;
        created = new Date(tickMs).toISOString();
      }
      nodes.push({
        id: o.id,
        floorSpaceId: o.floorSpaceId,
        occupancyStatus: o.occupancyStatus,
        headcount: o.headcount,
        created,
        createdMs: o.createdMs,
      });
    }
    const last = nodes.at(-1);
    rows.return(undefined);
    return {
      nodes,
      pageInfo: { hasNextPage, endCursor: last ? encodeCursor(last.createdMs, last.id) : null },
    };
  },

  /** The v2 variant's readings: offset-paged over (created, id), grouped by building and floor space. */
  floorSpaceReadings(args: { since: number; until: number; limit: number; offset?: number | null }, ctx: ResolverContext) {
    const offset = args.offset ?? 0;
    for (const [name, value] of [['limit', args.limit], ['offset', offset]] as const) {
      if (!Number.isInteger(value) || value < 0 || (name === 'limit' && value > MAX_PAGE_SIZE)) {
        throw new GraphQLError(`${name} must be between 0 and ${name === 'limit' ? MAX_PAGE_SIZE : 'the number of readings'}, got ${value}`, {
          extensions: { code: 'BAD_USER_INPUT', field: name },
        });
      }
    }
    const rows = ctx.model.observations(ctx.customer, { fromMs: args.since, toMs: args.until, visibleAtMs: ctx.clock.now() });
    const buildings = new Map<string, Map<string, Array<Record<string, unknown>>>>();
    let index = 0;
    for (const o of rows) {
      if (index++ < offset) continue;
      if (index > offset + args.limit) break;
      let spaces = buildings.get(o.buildingId);
      if (!spaces) buildings.set(o.buildingId, (spaces = new Map()));
      let readings = spaces.get(o.floorSpaceId);
      if (!readings) spaces.set(o.floorSpaceId, (readings = []));
      readings.push({ id: o.id, status: o.occupancyStatus, people: o.headcount, observedAt: new Date(o.createdMs).toISOString() });
    }
    return [...buildings].map(([buildingId, spaces]) => ({
      buildingId,
      floorSpaces: [...spaces].map(([floorSpaceId, readings]) => ({ floorSpaceId, readings })),
    }));
  },

  /** The v2 variant's name for registerWebhook. */
  createWebhook(args: { input: RegisterInput }, ctx: ResolverContext) {
    return webhookView(ctx.registry.register(ctx.customer.id, args.input, ctx.clock.now()));
  },

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

/**
 * nameLike is assumed to follow SQL LIKE: `%` any run, `_` one character, case-insensitive. A pattern without
 * wildcards matches as a substring, which is what a user typing a name fragment expects.
 */
export function likeMatcher(pattern: string | undefined): (name: string) => boolean {
  if (pattern === undefined || pattern === '') return () => true;
  const hasWildcard = /[%_]/.test(pattern);
  const body = pattern
    .split('')
    .map((ch) => (ch === '%' ? '.*' : ch === '_' ? '.' : ch.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  const re = new RegExp(hasWildcard ? `^${body}$` : body, 'is');
  return (name) => re.test(name);
}
