import type { Clock } from '../clock.ts';
import { AuthError, OccupancySyncError } from '../errors.ts';
import type { ApiClient } from './client.ts';
import { jwtCustomer, jwtScopes } from './jwt.ts';

/**
 * The first steps of `occupancy-sync check` (the rest, which needs the definitions, is src/app/check.ts): prove the
 * key and secret work, and read what the token says about the customer and the scopes.
 */

/** What a finding of `check` is about. */
export type FindingKind =
  /** The key, the secret, the token's customer or scopes. */
  | 'credentials'
  /** The definitions file or a document it names is invalid (each of its lines, at its place). */
  | 'definitions'
  /** The configuration or the command line cannot be used (a variable, a flag). */
  | 'configuration'
  /** The live schema could not be read. */
  | 'schema'
  /** A document in force does not validate against the live schema. */
  | 'document'
  /** A record field's declared type does not fit the schema's type. */
  | 'record'
  /** A paging variable's type, or the paging information the style reads. */
  | 'paging'
  /** A window bound's format against the variable's type. */
  | 'window'
  /** The probe request of a stream: refused, broke the page contract, or records rejected. */
  | 'probe'
  /** A webhook operation. */
  | 'webhook';

/**
 * One problem (check fails) or warning (it does not): what, where (`file:line:column` in a document or the
 * definitions file, when it has a place) and the fix.
 */
export interface Finding {
  kind: FindingKind;
  stream?: string;
  operation?: string;
  file?: string;
  line?: number;
  column?: number;
  message: string;
  fix?: string;
}

/** `file:line:column: message. Fix: fix` (without a place: the message alone). */
export function formatFinding(f: Finding): string {
  const where = f.file ? `${f.file}${f.line !== undefined ? `:${f.line}:${f.column ?? 1}` : ''}: ` : '';
  // A document's mismatch reads as a compiler's (the document's place names what it belongs to); anything else says
  // which stream or operation it is about.
  const document = f.kind === 'document' || (f.kind === 'webhook' && f.file !== undefined);
  const who = document ? '' : f.stream ? `stream ${f.stream}: ` : f.operation ? `webhook ${f.operation}: ` : '';
  const fix = f.fix ? `${/[.?!]$/.test(f.message) ? '' : '.'} Fix: ${f.fix}` : '';
  return `${where}${who}${f.message}${fix}`;
}

export interface Credentials {
  lifetimeSeconds: number;
  expiresAt: string;
  /** From the JWT, when it carries them. */
  jwtCustomer?: string;
  scopes?: string[];
}

export interface CredentialsCheck {
  token?: Credentials;
  problems: Finding[];
  /** Set when no token could be had; `auth` maps to exit code 77. */
  error?: { kind: 'auth' | 'failure'; message: string };
}

/** Authenticates (the client's purpose `check` takes a fresh token) and compares the token's claims with the configuration. */
export async function checkCredentials(options: { client: ApiClient; customerId: string; clock: Clock; signal?: AbortSignal }): Promise<CredentialsCheck> {
  const result: CredentialsCheck = { problems: [] };
  try {
    const token = await options.client.token(options.signal ? { signal: options.signal } : {});
    const claimedCustomer = jwtCustomer(token.claims);
    const scopes = jwtScopes(token.claims);
    result.token = {
      lifetimeSeconds: Math.round((token.expiresAt - options.clock.now()) / 1000),
      expiresAt: new Date(token.expiresAt).toISOString(),
      ...(claimedCustomer !== undefined && { jwtCustomer: claimedCustomer }),
      ...(scopes !== undefined && { scopes }),
    };
    if (claimedCustomer !== undefined && claimedCustomer !== options.customerId) {
      result.problems.push({
        kind: 'credentials',
        message: `the key belongs to customer ${claimedCustomer} according to its token, but is configured for ${options.customerId}: data would be stored under the wrong customer`,
        fix: 'correct CUSTOMER_ID (or the customers file entry)',
      });
    }
    if (scopes !== undefined && !scopes.includes('ReadPublicApi')) {
      result.problems.push({
        kind: 'credentials',
        message: 'the key lacks scope ReadPublicApi, which every sync query needs',
        fix: "grant it in the Admin Console's API access page, Settings > API access",
      });
    }
  } catch (error) {
    options.signal?.throwIfAborted();
    const message = error instanceof OccupancySyncError ? error.message : String((error as Error)?.message ?? error);
    result.error = { kind: error instanceof AuthError ? 'auth' : 'failure', message };
    result.problems.push({ kind: 'credentials', message });
  }
  return result;
}
