import { AuthError, GraphQLResponseError, RateLimitError, TransportError } from '../errors.ts';
import { ApiTransportError, type FailureReason } from './failure.ts';

/**
 * The retry policy as pure functions: what is retried, why, and how long to wait. The client's attempt loop
 * (client.ts, withRetries) only counts and sleeps; keeping them free of I/O lets the tests pin every row of the policy table in docs/api-client.md.
 */


export interface RetryDecision {
  retry: boolean;
  reason: FailureReason | 'not_retryable';
  /** What the server asked for (Retry-After), when it said. */
  retryAfterMs?: number;
}

export interface ClassifyOptions {
  /**
   * Whether repeating the request is harmless. Queries are; mutations are not by default, so an ambiguous
   * failure (the request may have been processed) is not retried for them. 429 and "never sent" are always safe.
   */
  idempotent: boolean;
  /** Retry answers carrying GraphQL `errors` (off by default: most such errors are permanent). */
  retryGraphQLErrors: boolean;
}

/** Server statuses that say the request was not processed, so even a mutation may be repeated. */
const NOT_PROCESSED_STATUSES = new Set([502, 503, 504]);

export function classifyFailure(error: unknown, options: ClassifyOptions): RetryDecision {
  const no: RetryDecision = { retry: false, reason: 'not_retryable' };
  if (error instanceof AuthError) return no;
  if (error instanceof RateLimitError) {
    return { retry: true, reason: 'rate_limited', ...(error.retryAfterMs !== undefined && { retryAfterMs: error.retryAfterMs }) };
  }
  if (error instanceof GraphQLResponseError) {
    return options.retryGraphQLErrors && options.idempotent && !error.permanent ? { retry: true, reason: 'graphql_error' } : no;
  }
  if (error instanceof ApiTransportError) {
    if (!error.retryable) return no;
    const retryAfter = error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {};
    if (error.reason === 'connect') return { retry: true, reason: 'connect' };
    if (error.reason === 'server_error' && error.status !== undefined && NOT_PROCESSED_STATUSES.has(error.status)) {
      return { retry: true, reason: 'server_error', ...retryAfter };
    }
    if (!options.idempotent) return no;
    return { retry: true, reason: error.reason, ...retryAfter };
  }
  if (error instanceof TransportError) {
    return error.retryable && options.idempotent ? { retry: true, reason: 'network' } : no;
  }
  return no;
}

export interface BackoffOptions {
  minMs: number;
  maxMs: number;
  /** Uniform in [0, 1); injected so tests are deterministic. */
  random: () => number;
}

/**
 * "Equal jitter" exponential backoff for retry number `retry` (1 = the first retry): the step doubles from
 * `minMs` up to `maxMs`, and the wait is drawn from the upper half of the step. Half keeps a floor so a burst of
 * failures cannot retry instantly; the random half spreads concurrent clients apart.
 */
export function backoffDelay(retry: number, options: BackoffOptions): number {
  const exponent = Math.max(0, retry - 1);
  const step = Math.min(options.maxMs, options.minMs * 2 ** Math.min(exponent, 30));
  const r = Math.min(Math.max(options.random(), 0), 1);
  return Math.round(step / 2 + (r * step) / 2);
}

export interface DelayOptions extends BackoffOptions {
  /** A Retry-After longer than this is not waited for: the error is surfaced so the run can stop cleanly. */
  maxRetryAfterMs: number;
}

/**
 * How long to wait before retry number `retry`, or `undefined` when the server asked for a wait longer than we
 * are willing to block for. Retry-After, when given, is honoured exactly: waiting less would be refused again,
 * and waiting more only slows the run.
 */
export function retryDelay(decision: RetryDecision, retry: number, options: DelayOptions): number | undefined {
  if (decision.retryAfterMs !== undefined) {
    return decision.retryAfterMs > options.maxRetryAfterMs ? undefined : Math.max(0, decision.retryAfterMs);
  }
  return backoffDelay(retry, options);
}

/**
 * Parses a Retry-After header: delta-seconds or an HTTP-date (RFC 9110 10.2.3), relative to `now` (epoch ms).
 * A date in the past means "now" (0). Anything unparseable is ignored (undefined), falling back to backoff.
 */
export function parseRetryAfter(header: string | string[] | undefined, now: number): number | undefined {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
  // Only the HTTP-date shapes: Date.parse would also accept things like "5" or "tomorrow" on some engines.
  if (!/^[A-Za-z]{3},? \d{1,2}[ -][A-Za-z]{3}[ -]\d{2,4} \d{2}:\d{2}:\d{2} GMT$|^[A-Za-z]{3} [A-Za-z]{3} +\d{1,2} \d{2}:\d{2}:\d{2} \d{4}$/.test(value)) {
    return undefined;
  }
  const at = Date.parse(value);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}
