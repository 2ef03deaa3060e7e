import { readFileSync } from 'node:fs';
import { buildClientSchema, buildSchema, getIntrospectionQuery, type GraphQLSchema, type IntrospectionQuery } from 'graphql';
import { ConfigError } from '../errors.ts';
import type { ApiClient } from './client.ts';
import { parseDocumentSource } from './documents.ts';

const INTROSPECTION = parseDocumentSource(getIntrospectionQuery({ descriptions: false }), '<introspection>');

/** The platform's live schema, through standard introspection (the sandbox allows it; a real API may not). */
export async function fetchLiveSchema(client: ApiClient, signal?: AbortSignal): Promise<GraphQLSchema> {
  const data = await client.request<IntrospectionQuery>(INTROSPECTION, {}, signal ? { signal } : {});
  return buildClientSchema(data);
}

/** The committed SDL (jobs/schema.graphql); a broken file is a ConfigError naming it. */
export function loadSchemaFile(path: string): GraphQLSchema {
  try {
    return buildSchema(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`${path}: not a valid GraphQL schema (${(error as Error).message}). Fix: correct the SDL`, { cause: error });
  }
}
