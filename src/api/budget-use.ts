import { RateLimitError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { Outcome, Permit } from './budget/types.ts';
import { ApiTransportError } from './failure.ts';

/**
 * An attempt's exchange with the budget: the leave it sends under (taken right before sending, once the token is
 * ready, so the load it was let go at is the load the platform sees) and how long the exchange took.
 */
export interface Exchange {
  permit?: Permit;
  latencyMs?: number;
}

/** How an attempt's failure reads to the budget: a refusal, an overload, a timeout, or nothing it learns from. */
export function outcomeOf(error: unknown): Outcome {
  if (error instanceof RateLimitError) return { kind: 'rate_limited', ...(error.retryAfterMs !== undefined && { retryAfterMs: error.retryAfterMs }) };
  if (error instanceof ApiTransportError) {
    if (error.status === 503) return { kind: 'overloaded', ...(error.retryAfterMs !== undefined && { retryAfterMs: error.retryAfterMs }) };
    if (error.reason === 'timeout') return { kind: 'timeout' };
  }
  return { kind: 'neutral' };
}

/**
 * Gives an attempt's leave back to the key's budget with how the answer went. One cause (the budget's connection
 * dropped) fails every permit in flight: it is logged once, and again only after a release went through or the cause
 * changed.
 */
export class BudgetUse {
  private cause: string | undefined;

  constructor(private readonly logger: Logger) {}

  /** After an answer: the budget learns its latency, without holding the caller. */
  clean(exchange: Exchange, gate: { operation: string } | undefined): void {
    // Only a query's attempt takes a leave, and a query always has its gate.
    exchange.permit?.release({ kind: 'clean', latencyMs: exchange.latencyMs ?? 0, operation: gate!.operation }).then(this.took, this.failed);
  }

  /** After a failure: whether the budget paused the whole key for it (undefined when no leave was taken). */
  async failure(exchange: Exchange, error: unknown): Promise<{ paused: boolean } | undefined> {
    return exchange.permit ? await exchange.permit.release(outcomeOf(error)).then(this.took, this.failed) : undefined;
  }

  /** A resend after a 401 goes under a fresh leave: the refused exchange taught the budget nothing. */
  resend(exchange: Exchange): void {
    void exchange.permit?.release({ kind: 'neutral' }).catch(this.failed);
  }

  private readonly failed = (error: unknown): { paused: boolean } => {
    const message = (error as Error)?.message ?? String(error);
    if (message !== this.cause) {
      this.cause = message;
      this.logger.warn({ err: error }, `the API budget could not take an answer in: ${message}`);
    }
    return { paused: false };
  };

  private readonly took = <T>(released: T): T => {
    this.cause = undefined;
    return released;
  };
}
