import type { Clock } from '../clock.ts';
import { AuthError, GraphQLResponseError, OccupancySyncError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { ApiClient } from './client.ts';
import { parseDocumentSource, validateDocuments, type DocumentMismatch, type LoadedDocument } from './documents.ts';
import { jwtCustomer, jwtScopes } from './jwt.ts';
import { ApiTransportError } from './failure.ts';
import { fetchLiveSchema } from './schema.ts';

/** The cheap query `check` runs: the one query the API document guarantees. */
const CHECK_QUERY = parseDocumentSource('query CheckBuildings { buildings { id } }', '<check>');

export interface CustomerCheck {
  customer: string;
  apiKey: string;
  ok: boolean;
  token?: {
    lifetimeSeconds: number;
    expiresAt: string;
    /** From the JWT, when it carries them. */
    jwtCustomer?: string;
    scopes?: string[];
  };
  query?: { operationName: string; buildings: number };
  schema?: {
    /** `introspection`: validated against the live schema; `unavailable`: the API refused introspection. */
    source: 'introspection' | 'unavailable';
    documents: number;
    mismatches: DocumentMismatch[];
    note?: string;
  };
  /** Problems that make the check fail, one sentence each (schema mismatches are listed under `schema`). */
  problems: string[];
  /** Set when the check stopped early; `auth` maps to exit code 77. */
  error?: { kind: 'auth' | 'failure'; message: string };
}

export interface CheckCustomerOptions {
  client: ApiClient;
  customerId: string;
  apiKey: string;
  documents: readonly LoadedDocument[];
  clock: Clock;
  logger: Logger;
  signal?: AbortSignal;
}

/**
 * What a user runs first against the real API: authenticate, read the token, run one query, and validate every
 * job document against the live schema. Never throws for API problems; they are reported in the result.
 */
export async function checkCustomer(options: CheckCustomerOptions): Promise<CustomerCheck> {
  const { client, signal } = options;
  const result: CustomerCheck = { customer: options.customerId, apiKey: options.apiKey, ok: false, problems: [] };
  const withSignal = signal ? { signal } : {};
  try {
    const token = await client.token(withSignal);
    const claimedCustomer = jwtCustomer(token.claims);
    const scopes = jwtScopes(token.claims);
    result.token = {
      lifetimeSeconds: Math.round((token.expiresAt - options.clock.now()) / 1000),
      expiresAt: new Date(token.expiresAt).toISOString(),
      ...(claimedCustomer !== undefined && { jwtCustomer: claimedCustomer }),
      ...(scopes !== undefined && { scopes }),
    };
    if (claimedCustomer !== undefined && claimedCustomer !== options.customerId) {
      result.problems.push(
        `the key belongs to customer ${claimedCustomer} according to its token, but is configured for ${options.customerId}: data would be stored under the wrong customer (fix CUSTOMER_ID or the customers file)`,
      );
    }
    if (scopes !== undefined && !scopes.includes('ReadPublicApi')) {
      result.problems.push("the key lacks scope ReadPublicApi, which every sync query needs (grant it in the Admin Console's API access page, Settings > API access)");
    }

    const data = await client.request<{ buildings: unknown[] }>(CHECK_QUERY, {}, withSignal);
    result.query = { operationName: CHECK_QUERY.operationName!, buildings: data.buildings.length };

    try {
      const schema = await fetchLiveSchema(client, signal);
      const mismatches = validateDocuments(schema, options.documents);
      result.schema = { source: 'introspection', documents: options.documents.length, mismatches };
    } catch (error) {
      if (!introspectionRefused(error)) throw error;
      result.schema = {
        source: 'unavailable',
        documents: options.documents.length,
        mismatches: [],
        note: `the API does not allow introspection (${(error as Error).message}); the job documents could not be checked against the live schema`,
      };
      options.logger.warn({ customer: options.customerId }, result.schema.note!);
    }
  } catch (error) {
    signal?.throwIfAborted();
    const message = error instanceof OccupancySyncError ? error.message : String((error as Error)?.message ?? error);
    result.error = { kind: error instanceof AuthError ? 'auth' : 'failure', message };
    result.problems.push(message);
  }
  result.ok = result.problems.length === 0 && (result.schema?.mismatches.length ?? 0) === 0;
  return result;
}

/** Introspection turned off shows up as GraphQL errors or a plain 4xx, not as a broken platform. */
function introspectionRefused(error: unknown): boolean {
  if (error instanceof GraphQLResponseError) return true;
  return error instanceof ApiTransportError && error.reason === 'client_error';
}
