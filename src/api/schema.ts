import { readFileSync } from 'node:fs';
import {
  buildClientSchema,
  buildSchema,
  getIntrospectionQuery,
  getNamedType,
  isInputObjectType,
  isInterfaceType,
  isIntrospectionType,
  isObjectType,
  isSpecifiedScalarType,
  isUnionType,
  printType,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema,
  type IntrospectionQuery,
} from 'graphql';
import { ConfigError, GraphQLResponseError, OccupancySyncError, UsageError } from '../errors.ts';
import type { ApiClient } from './client.ts';
import { parseDocumentSource } from './documents.ts';
import { ApiTransportError } from './failure.ts';

/** Descriptions included: `occupancy-sync schema` prints them, and they often say what a field means (its unit, its bounds). */
const INTROSPECTION = parseDocumentSource(getIntrospectionQuery({ descriptions: true }), '<introspection>');

/** Where a user reads the schema when introspection is off: the platform's own explorer (docs/api.md). */
export const INTROSPECTION_FIX =
  "read the schema in the platform's API Explorer (GraphiQL; a key with ReadPublicApi opens it), or ask the platform for its SDL, and write the documents from it";

/** The API answered the introspection query with GraphQL errors or a client error: it does not allow introspection. */
export class IntrospectionRefusedError extends OccupancySyncError {
  constructor(detail: string, options?: { cause?: unknown }) {
    super('INTROSPECTION', `the API does not allow introspection (${detail}). Fix: ${INTROSPECTION_FIX}`, options);
  }
}

/** The platform's live schema, as the introspection answer and as a schema. */
export interface LiveSchema {
  introspection: IntrospectionQuery;
  schema: GraphQLSchema;
}

/**
 * The platform's live schema, through standard introspection (the sandbox allows it; a real API may not: then an
 * IntrospectionRefusedError). Other failures (network, auth) are thrown as they are.
 */
export async function fetchLiveSchema(client: ApiClient, signal?: AbortSignal): Promise<LiveSchema> {
  let introspection: IntrospectionQuery;
  try {
    introspection = await client.request<IntrospectionQuery>(INTROSPECTION, {}, signal ? { signal } : {});
  } catch (error) {
    // Introspection turned off shows up as GraphQL errors or a plain 4xx, not as a broken platform.
    if (error instanceof GraphQLResponseError) throw new IntrospectionRefusedError(error.errors[0]?.message ?? error.message, { cause: error });
    if (error instanceof ApiTransportError && error.reason === 'client_error') throw new IntrospectionRefusedError(error.message, { cause: error });
    throw error;
  }
  if (introspection === null || typeof introspection !== 'object' || !introspection.__schema) {
    throw new IntrospectionRefusedError('its answer holds no __schema');
  }
  try {
    return { introspection, schema: buildClientSchema(introspection) };
  } catch (error) {
    throw new IntrospectionRefusedError(`its answer is not a usable schema: ${(error as Error).message}`, { cause: error });
  }
}

/** The committed SDL (jobs/schema.graphql); a broken file is a ConfigError naming it. */
export function loadSchemaFile(path: string): GraphQLSchema {
  try {
    return buildSchema(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`${path}: not a valid GraphQL schema (${(error as Error).message}). Fix: correct the SDL`, { cause: error });
  }
}

const ROOTS = ['query', 'mutation', 'subscription'] as const;

/** Root fields (`Query.occupancy`) by name: a user names the query, not its type. */
function rootFields(schema: GraphQLSchema): Array<{ root: string; field: GraphQLField<unknown, unknown> }> {
  return ROOTS.flatMap((r) => {
    const type = schema.getRootType(r as never);
    return type ? Object.values(type.getFields()).map((field) => ({ root: type.name, field })) : [];
  });
}

/** Types a user wrote (not the introspection types nor the built-in scalars). */
function ownTypes(schema: GraphQLSchema): GraphQLNamedType[] {
  return Object.values(schema.getTypeMap()).filter((t) => !isIntrospectionType(t) && !isSpecifiedScalarType(t));
}

/** The types a type leads to (fields, arguments, members), for printing a query with what it answers. */
function referenced(type: GraphQLNamedType): GraphQLNamedType[] {
  if (isObjectType(type) || isInterfaceType(type)) {
    return Object.values(type.getFields()).flatMap((f) => [getNamedType(f.type), ...f.args.map((a) => getNamedType(a.type))]);
  }
  if (isInputObjectType(type)) return Object.values(type.getFields()).map((f) => getNamedType(f.type));
  if (isUnionType(type)) return [...type.getTypes()];
  return [];
}

/** `type` and the types it leads to, breadth first, without the built-in scalars, at most `limit`. */
function reachable(start: GraphQLNamedType[], limit = 24): GraphQLNamedType[] {
  const seen = new Set<string>();
  const out: GraphQLNamedType[] = [];
  const queue = [...start];
  while (queue.length && out.length < limit) {
    const type = queue.shift()!;
    if (seen.has(type.name) || isSpecifiedScalarType(type) || isIntrospectionType(type)) continue;
    seen.add(type.name);
    out.push(type);
    queue.push(...referenced(type));
  }
  return out;
}

/**
 * What `occupancy-sync schema NAME` prints: a type's SDL (its fields with their types and arguments), or a root
 * field's signature (arguments one per line, with their types and defaults) and the SDL of the types its arguments
 * and answer lead to. NAME unknown: a UsageError listing close names.
 */
export function describeName(schema: GraphQLSchema, name: string): string {
  const type = schema.getType(name);
  const fields = rootFields(schema).filter((r) => r.field.name === name);
  if (!type && fields.length === 0) {
    const close = closeNames(name, [...ownTypes(schema).map((t) => t.name), ...rootFields(schema).map((r) => r.field.name)]);
    const hint = close.length ? ` Close names: ${close.join(', ')}.` : '';
    throw new UsageError(
      `${JSON.stringify(name)}: the live schema has no type, query or mutation of that name.${hint} Fix: run \`occupancy-sync schema\` to print the whole schema`,
    );
  }
  const parts: string[] = [];
  for (const { root, field } of fields) {
    const args = field.args.map((a) => `  ${a.name}: ${String(a.type)}${a.defaultValue !== undefined ? ` = ${JSON.stringify(a.defaultValue)}` : ''}${a.description ? `  # ${oneLine(a.description)}` : ''}`);
    const head = `${root}.${field.name}${args.length ? `(\n${args.join('\n')}\n)` : ''}: ${String(field.type)}`;
    parts.push([...(field.description ? [`# ${oneLine(field.description)}`] : []), head].join('\n'));
    const leads = reachable([...field.args.map((a) => getNamedType(a.type)), getNamedType(field.type)]);
    parts.push(...leads.map((t) => printType(t)));
  }
  if (type) parts.push(printType(type));
  return `${[...new Set(parts)].join('\n\n')}\n`;
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();

/** Names near `name`: the same letters in another case, one containing the other, or a few edits away. */
export function closeNames(name: string, candidates: readonly string[], max = 6): string[] {
  const lower = name.toLowerCase();
  const scored = [...new Set(candidates)]
    .map((c) => {
      const l = c.toLowerCase();
      const distance = l === lower ? 0 : l.includes(lower) || lower.includes(l) ? 1 : editDistance(lower, l);
      return { c, distance };
    })
    .filter(({ c, distance }) => distance <= Math.max(2, Math.floor(Math.min(name.length, c.length) / 3)))
    .sort((a, b) => a.distance - b.distance || Math.abs(a.c.length - name.length) - Math.abs(b.c.length - name.length) || a.c.localeCompare(b.c));
  return scored.slice(0, max).map((s) => s.c);
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = row;
  }
  return previous[b.length]!;
}
