import { describe, expect, it } from 'vitest';
import { AuthError, GraphQLResponseError, RateLimitError, TransportError } from '../../src/errors.ts';
import { ApiTransportError } from '../../src/api/failure.ts';
import { backoffDelay, classifyFailure, parseRetryAfter, retryDelay } from '../../src/api/retry.ts';

const query = { idempotent: true, retryGraphQLErrors: false };
const mutation = { idempotent: false, retryGraphQLErrors: false };

describe('classifyFailure', () => {
  it('retries network errors, timeouts, 5xx, 429 and corrupt bodies for queries', () => {
    for (const reason of ['connect', 'network', 'timeout', 'corrupt_body', 'invalid_json'] as const) {
      expect(classifyFailure(new ApiTransportError(reason, 'x'), query)).toEqual({ retry: true, reason });
    }
    expect(classifyFailure(new ApiTransportError('server_error', 'x', { status: 500 }), query)).toMatchObject({ retry: true, reason: 'server_error' });
    expect(classifyFailure(new RateLimitError('x', { retryAfterMs: 2000 }), query)).toEqual({ retry: true, reason: 'rate_limited', retryAfterMs: 2000 });
  });

  it('never retries auth errors, other 4xx or non-retryable transport errors', () => {
    expect(classifyFailure(new AuthError('x', { status: 401 }), query).retry).toBe(false);
    expect(classifyFailure(new ApiTransportError('client_error', 'x', { status: 404, retryable: false }), query).retry).toBe(false);
    expect(classifyFailure(new TransportError('x', { retryable: false }), query).retry).toBe(false);
    expect(classifyFailure(new Error('bug'), query).retry).toBe(false);
  });

  it('retries GraphQL errors only when the caller opted in, and only for queries', () => {
    const error = new GraphQLResponseError('Q', [{ message: 'transient' }]);
    expect(classifyFailure(error, query).retry).toBe(false);
    expect(classifyFailure(error, { ...query, retryGraphQLErrors: true })).toEqual({ retry: true, reason: 'graphql_error' });
    expect(classifyFailure(error, { ...mutation, retryGraphQLErrors: true }).retry).toBe(false);
  });

  it('never retries a GraphQL error known to be permanent, even when the caller opted in', () => {
    const error = new GraphQLResponseError('Q', [{ message: 'first must be between 1 and 500' }], { permanent: 'the API refused the value of the argument first' });
    expect(classifyFailure(error, { ...query, retryGraphQLErrors: true }).retry).toBe(false);
  });

  it('retries a 2xx answer that is no JSON document (a proxy\'s page) for queries, not for mutations', () => {
    expect(classifyFailure(new ApiTransportError('not_json', 'x', { status: 200 }), query)).toEqual({ retry: true, reason: 'not_json' });
    expect(classifyFailure(new ApiTransportError('not_json', 'x', { status: 200 }), mutation).retry).toBe(false);
  });

  it('retries a mutation only when the request was certainly not processed', () => {
    expect(classifyFailure(new ApiTransportError('connect', 'x'), mutation).retry).toBe(true);
    expect(classifyFailure(new RateLimitError('x'), mutation).retry).toBe(true);
    expect(classifyFailure(new ApiTransportError('server_error', 'x', { status: 503 }), mutation).retry).toBe(true);
    expect(classifyFailure(new ApiTransportError('server_error', 'x', { status: 500 }), mutation).retry).toBe(false);
    expect(classifyFailure(new ApiTransportError('network', 'x'), mutation).retry).toBe(false);
    expect(classifyFailure(new ApiTransportError('timeout', 'x'), mutation).retry).toBe(false);
  });
});

describe('backoff', () => {
  const opts = { minMs: 500, maxMs: 30_000, maxRetryAfterMs: 120_000 };

  it('doubles from the minimum, stays in the upper half of each step, and is capped', () => {
    expect(backoffDelay(1, { ...opts, random: () => 0 })).toBe(250);
    expect(backoffDelay(1, { ...opts, random: () => 0.999999 })).toBe(500);
    expect(backoffDelay(2, { ...opts, random: () => 0 })).toBe(500);
    expect(backoffDelay(4, { ...opts, random: () => 0.5 })).toBe(3000);
    expect(backoffDelay(20, { ...opts, random: () => 1 })).toBe(30_000);
    expect(backoffDelay(1000, { ...opts, random: () => 0 })).toBe(15_000);
  });

  it('honours Retry-After exactly and refuses to block for longer than the ceiling', () => {
    const random = () => 0.5;
    expect(retryDelay({ retry: true, reason: 'rate_limited', retryAfterMs: 7000 }, 1, { ...opts, random })).toBe(7000);
    expect(retryDelay({ retry: true, reason: 'rate_limited', retryAfterMs: 0 }, 3, { ...opts, random })).toBe(0);
    expect(retryDelay({ retry: true, reason: 'rate_limited', retryAfterMs: 600_000 }, 1, { ...opts, random })).toBeUndefined();
    expect(retryDelay({ retry: true, reason: 'server_error' }, 1, { ...opts, random })).toBe(375);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.UTC(2026, 0, 1, 12, 0, 0);

  it('reads delta-seconds', () => {
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter(['2', '9'], now)).toBe(2000);
  });

  it('reads an HTTP-date relative to the injected clock, a past date meaning now', () => {
    expect(parseRetryAfter('Thu, 01 Jan 2026 12:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 11:59:00 GMT', now)).toBe(0);
  });

  it('ignores what it cannot parse', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('', now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-5', now)).toBeUndefined();
  });
});
