import type { Clock } from '../clock.ts';
import { AuthError, RateLimitError } from '../errors.ts';
import type { SecretRegistry } from '../logger.ts';
import { ApiTransportError, parseRetryAfter } from './retry.ts';
import type { IssuedToken } from './token.ts';
import { parseJsonBody, type HttpResponse, type Transport } from './transport.ts';

export const AUTH_PATH = '/api/v1/auth';
export const QUERY_PATH = '/api/external/query';
/** Where keys and scopes are managed, as the API document names it. */
export const ADMIN_CONSOLE_KEYS = 'the Admin Console at {admin_url}/settings/apiaccess';

export interface AuthenticatorOptions {
  transport: Transport;
  baseUrl: string;
  apiKey: string;
  apiSecret: string;
  secrets: SecretRegistry;
  clock: Clock;
  /** Called once per POST to the auth endpoint, whatever its outcome (stats). */
  onCall?: () => void;
}

/** A short, scrubbed excerpt of an error body for messages: enough to diagnose, never a secret. */
export function bodyExcerpt(response: HttpResponse, secrets: SecretRegistry): string {
  const text = response.body.toString('utf8').replace(/\s+/g, ' ').trim();
  if (!text) return '';
  const cut = text.length > 200 ? `${text.slice(0, 200)}…` : text;
  return `: ${secrets.scrub(cut)}`;
}

/** Maps the statuses every endpoint shares: 429 and 5xx (retryable, with Retry-After) and other non-2xx. */
export function statusError(response: HttpResponse, path: string, clock: Clock, secrets: SecretRegistry): Error {
  const retryAfterMs = parseRetryAfter(response.headers['retry-after'], clock.now());
  const after = retryAfterMs !== undefined ? { retryAfterMs } : {};
  if (response.status === 429) {
    return new RateLimitError(`POST ${path}: HTTP 429 Too Many Requests${retryAfterMs !== undefined ? ` (Retry-After ${retryAfterMs} ms)` : ''}`, after);
  }
  if (response.status >= 500) {
    return new ApiTransportError('server_error', `POST ${path}: HTTP ${response.status}${bodyExcerpt(response, secrets)}`, {
      status: response.status,
      ...after,
    });
  }
  return new ApiTransportError('client_error', `POST ${path}: unexpected HTTP ${response.status}${bodyExcerpt(response, secrets)}`, {
    status: response.status,
    retryable: false,
  });
}

/**
 * One POST of key and secret to the auth endpoint (there is no refresh endpoint). Retries are the caller's
 * business; a refused key is an AuthError, which is never retried.
 */
export function createAuthenticator(options: AuthenticatorOptions): () => Promise<IssuedToken> {
  const { transport, apiKey, apiSecret, secrets, clock } = options;
  secrets.add(apiSecret);
  return async () => {
    options.onCall?.();
    const response = await transport.post(
      AUTH_PATH,
      { ApiKey: apiKey, ApiSecret: apiSecret },
      { accept: 'application/json' },
    );
    if (response.status === 401 || response.status === 403) {
      throw new AuthError(
        `the platform refused API key ${JSON.stringify(apiKey)} at ${options.baseUrl}${AUTH_PATH} (HTTP ${response.status}). ` +
          `Check that API_KEY names an active key of this customer and that API_SECRET is the secret shown when that key was created; ` +
          `a lost secret cannot be recovered: create a new key in ${ADMIN_CONSOLE_KEYS}`,
        { status: response.status },
      );
    }
    if (response.status < 200 || response.status >= 300) throw statusError(response, AUTH_PATH, clock, secrets);
    const json = parseJsonBody(response, AUTH_PATH) as { idToken?: unknown; expiresIn?: unknown } | null;
    const idToken = json?.idToken;
    const expiresIn = json?.expiresIn;
    if (typeof idToken !== 'string' || !idToken || typeof expiresIn !== 'number' || !(expiresIn > 0)) {
      throw new ApiTransportError(
        'client_error',
        `POST ${AUTH_PATH}: the answer lacks idToken (a non-empty string) or expiresIn (a positive number of seconds)`,
        { status: response.status, retryable: false },
      );
    }
    secrets.add(idToken);
    return { idToken, expiresIn };
  };
}
