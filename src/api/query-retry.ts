import type { Config } from '../config.ts';
import { RateLimitError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { tracer } from '../tracing.ts';
import { abortError } from './abort.ts';
import type { BudgetUse, Exchange } from './budget-use.ts';
import { ApiTransportError } from './failure.ts';
import { classifyFailure, retryDelay } from './retry.ts';

/** What one client counts of its own requests, for ApiStats. */
export interface ClientCounters {
  requests: number;
  authCalls: number;
  reauthsOn401: number;
  retries: number;
  retriesByReason: Record<string, number>;
  queriesSent: number;
  rateLimited: number;
}

/** What the retry loop needs of its client: the policy's settings, its waits, its log, its counters and budget. */
export interface RetryContext {
  http: Config['http'];
  /** Retry answers carrying GraphQL `errors` (queries only; ApiClientOptions.retryGraphQLErrors). */
  retryGraphQLErrors: boolean;
  random: () => number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  maxRetryAfterMs: number;
  logger: Logger;
  counters: ClientCounters;
  budgetUse: BudgetUse;
}

/**
 * Runs `attempt` under the retry policy: non-retryable errors stop at once, others wait and go again. A query's
 * attempt sends under a leave of the key's budget (attemptQuery takes it), given back here with how the answer went;
 * a refusal that paused the whole key is waited out by the budget, once for every query of the key, not here.
 */
export async function withRetries<T>(
  ctx: RetryContext,
  what: string,
  idempotent: boolean,
  signal: AbortSignal | undefined,
  attempt: (exchange: Exchange) => Promise<T>,
  gate?: { operation: string; query: boolean },
): Promise<T> {
  // GraphQL errors are retried for queries only: a mutation answered with errors may have been partly applied,
  // even one marked idempotent for transport failures.
  const policy = { idempotent, retryGraphQLErrors: (gate?.query ?? false) && ctx.retryGraphQLErrors };
  // The attempts are counted here; retry.ts decides, and the injected sleep waits, so Retry-After and fake clocks apply.
  for (let attemptNumber = 1; ; attemptNumber++) {
    signal?.throwIfAborted();
    const exchange: Exchange = {};
    let error: unknown;
    try {
      const result = await attempt(exchange);
      ctx.budgetUse.clean(exchange, gate);
      signal?.throwIfAborted();
      return result;
    } catch (caught) {
      error = caught;
    }
    const released = await ctx.budgetUse.failure(exchange, error);
    if (signal?.aborted) throw abortError(signal);
    // A 429 answer (the budget's own refusal to wait out a long pause is no answer).
    if (error instanceof RateLimitError && exchange.permit) ctx.counters.rateLimited++;
    const decision = classifyFailure(error, policy);
    const retriesLeft = ctx.http.maxAttempts - attemptNumber;
    if (!decision.retry || retriesLeft <= 0) throw error;
    const delayMs = retryDelay(decision, attemptNumber, { minMs: ctx.http.backoffMinMs, maxMs: ctx.http.backoffMaxMs, random: ctx.random, maxRetryAfterMs: ctx.maxRetryAfterMs });
    if (delayMs === undefined) {
      if (decision.retryAfterMs !== undefined) {
        ctx.logger.warn({ what, retryAfterMs: decision.retryAfterMs, maxRetryAfterMs: ctx.maxRetryAfterMs }, `not retrying ${what}: the platform asked to wait longer than we block for`);
      }
      throw error;
    }
    ctx.counters.retries++;
    ctx.counters.retriesByReason[decision.reason] = (ctx.counters.retriesByReason[decision.reason] ?? 0) + 1;
    tracer().event('retry', { 'retry.reason': decision.reason, 'retry.attempt': attemptNumber, 'retry.delay_ms': delayMs, 'ctx.http.response.status_code': (error as ApiTransportError).status });
    const keyWide = released?.paused === true && decision.retryAfterMs !== undefined;
    ctx.logger.warn(
      { what, reason: decision.reason, attempt: attemptNumber, retriesLeft, delayMs, status: (error as ApiTransportError).status, retryAfterMs: decision.retryAfterMs, keyWide },
      `retrying ${what} in ${delayMs} ms (${decision.reason}${keyWide ? ', every query of the key waits' : ''}): ${(error as Error).message}`,
    );
    if (!keyWide) await ctx.sleep(delayMs, signal);
  }
}
