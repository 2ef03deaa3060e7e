/**
 * Why the receiver refused a request. `reason` is a stable code, safe to log and to return: it never contains a
 * secret, a header value or any part of the body.
 */
export type RefusalReason =
  /** Framing or headers two HTTP implementations could read differently (see framing.ts). */
  | 'malformed_request'
  | 'method_not_allowed'
  | 'not_found'
  | 'body_too_large'
  | 'decompressed_too_large'
  | 'unsupported_encoding'
  | 'corrupt_gzip'
  | 'body_aborted'
  | 'unsupported_media_type'
  | 'header_mismatch'
  | 'signature_missing'
  | 'signature_malformed'
  | 'signature_mismatch'
  | 'signature_stale'
  | 'signature_future'
  | 'invalid_utf8'
  | 'byte_order_mark'
  | 'invalid_json'
  | 'duplicate_key'
  | 'lone_surrogate'
  | 'nul_character'
  | 'invalid_delivery'
  | 'customer_mismatch'
  /** The database refused the delivery for what it contains: a retry cannot fix it (4xx, logged as our bug). */
  | 'unstorable'
  /** Transient: the database is unavailable or busy; the platform retries. */
  | 'storage_failed'
  /** Transient: too many bytes of unauthenticated requests in flight (see PendingBudget); the platform retries. */
  | 'busy'
  /** Transient: the receiver is stopping (SIGTERM); the platform sends the delivery again. */
  | 'stopping';

export class Refusal extends Error {
  readonly status: number;
  readonly reason: RefusalReason;
  /** Safe, non-secret facts for the log line (field names, sizes, counts). */
  readonly details: Record<string, unknown>;
  constructor(status: number, reason: RefusalReason, details: Record<string, unknown> = {}, options?: { cause?: unknown }) {
    super(`${status} ${reason}`, options);
    this.name = 'Refusal';
    this.status = status;
    this.reason = reason;
    this.details = details;
  }
}
