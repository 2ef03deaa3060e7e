import { buildSchema, GraphQLError, GraphQLScalarType, Kind, type GraphQLSchema } from 'graphql';
import type { Clock } from '../clock.ts';
import type { CustomerData, DataModel } from './data.ts';
import type { DeliveryEngine } from './deliveries.ts';
import type { WebhookRegistry } from './webhook-registry.ts';

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

/** A deterministic argument error: the same request fails the same way every time. */
export function argumentError(field: string, message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT', field } });
}

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
