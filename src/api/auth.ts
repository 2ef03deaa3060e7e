import type { Clock } from '../clock.ts';
import { AuthError, RateLimitError } from '../errors.ts';
import type { SecretRegistry } from '../logger.ts';
import { ApiTransportError, BaseUrlError } from './failure.ts';
import { parseRetryAfter } from './retry.ts';
import type { IssuedToken } from './token.ts';
import { readJsonAnswer } from './answer.ts';
import type { HttpResponse, Transport } from './transport.ts';

export const AUTH_PATH = '/api/v1/auth';
export const QUERY_PATH = '/api/external/query';
/** Where keys and scopes are managed: the Admin Console's API access page (its address is the customer's own). */
export const ADMIN_CONSOLE_KEYS = "the Admin Console's API access page (Settings > API access, path /settings/apiaccess)";

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

/**
 * A short, scrubbed excerpt of an error body for messages: enough to diagnose, never a secret. Scrubbed before it is
 * cut (a cut could leave a fragment the scrubber no longer recognises as the secret) and again after.
 */
export function bodyExcerpt(response: HttpResponse, secrets: SecretRegistry): string {
  const text = secrets.scrub(response.body.toString('utf8')).replace(/\s+/g, ' ').trim();
  if (!text) return '';
  const cut = text.length > 200 ? `${text.slice(0, 200)}…` : text;
  return `: ${secrets.scrub(cut)}`;
}

/**
 * A 404 (or 405) at one of the two documented endpoints: the base URL points at some other server, or at the right
 * one with a wrong path. Permanent. `answeredBefore`: the endpoint answered this client earlier, so the base URL is
 * right and the platform is what changed: a failed request (exit 1), not the configuration (BaseUrlError, exit 78).
 */
export function notTheApi(status: number, baseUrl: string, path: string, answeredBefore: boolean): ApiTransportError | BaseUrlError {
  const message =
    `${baseUrl}${path} answered HTTP ${status}: API_BASE_URL does not point at the platform's API. ` +
    `Fix: set API_BASE_URL to the platform's base URL, the part before ${path}`;
  return answeredBefore ? new ApiTransportError('client_error', message, { status, retryable: false }) : new BaseUrlError(message, { status });
}

/** 5xx statuses that say the server will not do this, whatever the number of tries. */
const PERMANENT_SERVER_STATUSES = new Set([501, 505]);

/** Maps the statuses every endpoint shares: 429 and 5xx (retryable, with Retry-After) and other non-2xx. */
export function statusError(response: HttpResponse, path: string, clock: Clock, secrets: SecretRegistry): Error {
  const retryAfterMs = parseRetryAfter(response.headers['retry-after'], clock.now());
  const after = retryAfterMs !== undefined ? { retryAfterMs } : {};
  if (response.status === 429) {
    return new RateLimitError(`POST ${path}: HTTP 429 Too Many Requests${retryAfterMs !== undefined ? ` (Retry-After ${retryAfterMs} ms)` : ''}`, after);
  }
  if (response.status >= 300 && response.status < 400) {
    const location = response.headers.location;
    const target = typeof location === 'string' ? ` to ${secrets.scrub(location.slice(0, 200))}` : '';
    return new ApiTransportError(
      'client_error',
      `POST ${path}: HTTP ${response.status} redirect${target}, which is not followed (a POST is not replayed at another address). ` +
        'Fix: set API_BASE_URL to the address the platform answers at',
      { status: response.status, retryable: false },
    );
  }
  if (PERMANENT_SERVER_STATUSES.has(response.status)) {
    return new ApiTransportError(
      'client_error',
      `POST ${path}: HTTP ${response.status}${bodyExcerpt(response, secrets)}: the server does not support this request, so it is not retried. Fix: check API_BASE_URL`,
      { status: response.status, retryable: false },
    );
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
  let answered = false;
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
    if (response.status === 404 || response.status === 405) throw notTheApi(response.status, options.baseUrl, AUTH_PATH, answered);
    if (response.status < 200 || response.status >= 300) throw statusError(response, AUTH_PATH, clock, secrets);
    const isObject = (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value);
    const json = readJsonAnswer(response, AUTH_PATH, isObject, secrets).json as { idToken?: unknown; expiresIn?: unknown } | null;
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
    answered = true;
    return { idToken, expiresIn };
  };
}
