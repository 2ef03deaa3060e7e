import { ConfigError, TransportError } from '../errors.ts';

/** Why an attempt failed, as logged and counted in `stats.retriesByReason`. */
export type FailureReason =
  /** The connection could not be made (refused, DNS): the request was never sent. */
  | 'connect'
  /** The connection broke after the request may have been sent (reset, closed socket). */
  | 'network'
  /** No complete answer within the configured timeout. */
  | 'timeout'
  /** HTTP 5xx. */
  | 'server_error'
  /** HTTP 429. */
  | 'rate_limited'
  /** A gzip body that was truncated or corrupt. */
  | 'corrupt_body'
  /** A 2xx answer whose JSON does not parse: cut off or garbled. */
  | 'invalid_json'
  /** A 2xx answer that is no JSON document at all: an HTML page (a proxy's), an empty body, text. */
  | 'not_json'
  /** A GraphQL `errors` answer (retried only when the caller opted in). */
  | 'graphql_error'
  /** Any other HTTP 4xx, or an answer that breaks the protocol: never retried. */
  | 'client_error';

/** A TransportError that also says which kind of failure it was, so the policy need not parse messages. */
export class ApiTransportError extends TransportError {
  readonly reason: FailureReason;
  constructor(
    reason: FailureReason,
    message: string,
    options?: { cause?: unknown; status?: number; retryable?: boolean; retryAfterMs?: number },
  ) {
    super(message, options);
    this.reason = reason;
  }
}

/**
 * API_BASE_URL does not lead to the platform's API: one of its two endpoints answered 404 (or 405) before it had ever
 * answered this client. A configuration error (exit code 78): no retry and no later run can fix it, a person must, so
 * systemd must not restart `serve` for it and cron must tell it from a failed run. An endpoint that did answer before
 * and then says 404 is the platform's moment (a redeploy), an ApiTransportError as other 4xx.
 */
export class BaseUrlError extends ConfigError {
  readonly status: number;
  constructor(message: string, options: { status: number }) {
    super(message);
    this.status = options.status;
  }
}
