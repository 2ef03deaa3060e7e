/**
 * One base error and one small subclass per failure kind, so callers (and exit codes) can tell them apart.
 * Messages never contain secrets or tokens; causes are kept with `{ cause }`.
 */
export class OccupancySyncError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Bad configuration or command-line input. The message names the variable, the (masked) value and the fix. */
export class ConfigError extends OccupancySyncError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('CONFIG', message, options);
  }
}

/** Authentication failed: wrong key/secret, missing scope, or a token refused twice. Not retried. */
export class AuthError extends OccupancySyncError {
  readonly status: number | undefined;
  constructor(message: string, options?: { cause?: unknown; status?: number }) {
    super('AUTH', message, options);
    this.status = options?.status;
  }
}

/** The platform asked us to slow down (429). `retryAfterMs` is what it asked for, when it said. */
export class RateLimitError extends OccupancySyncError {
  readonly retryAfterMs: number | undefined;
  constructor(message: string, options?: { cause?: unknown; retryAfterMs?: number }) {
    super('RATE_LIMIT', message, options);
    this.retryAfterMs = options?.retryAfterMs;
  }
}

/** Network failure, timeout, 5xx, corrupt/truncated body. `retryable` tells the retry policy what to do. */
export class TransportError extends OccupancySyncError {
  readonly status: number | undefined;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  constructor(
    message: string,
    options?: { cause?: unknown; status?: number; retryable?: boolean; retryAfterMs?: number },
  ) {
    super('TRANSPORT', message, options);
    this.status = options?.status;
    this.retryable = options?.retryable ?? true;
    this.retryAfterMs = options?.retryAfterMs;
  }
}

export interface GraphQLErrorEntry {
  message: string;
  path?: ReadonlyArray<string | number>;
  locations?: ReadonlyArray<{ line: number; column: number }>;
  extensions?: Record<string, unknown>;
}

/** The server answered with GraphQL `errors`. Carries every error and the operation that caused them. */
export class GraphQLResponseError extends OccupancySyncError {
  readonly errors: GraphQLErrorEntry[];
  readonly operationName: string | undefined;
  constructor(operationName: string | undefined, errors: GraphQLErrorEntry[], options?: { cause?: unknown }) {
    const first = errors[0]?.message ?? 'unknown error';
    const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : '';
    super('GRAPHQL', `GraphQL operation ${operationName ?? '(anonymous)'} failed: ${first}${more}`, options);
    this.errors = errors;
    this.operationName = operationName;
  }
}

export type SignatureFailureReason =
  | 'missing_header'
  | 'malformed_header'
  | 'stale_timestamp'
  | 'future_timestamp'
  | 'no_match'
  | 'no_secret';

/** A webhook delivery's signature did not verify. `reason` is safe to log; `header` is the header as received. */
export class SignatureVerificationError extends OccupancySyncError {
  readonly reason: SignatureFailureReason;
  readonly header: string | undefined;
  constructor(reason: SignatureFailureReason, message: string, options?: { header?: string; cause?: unknown }) {
    super('SIGNATURE', message, options);
    this.reason = reason;
    this.header = options?.header;
  }
}

/** Another run holds the lock for this customer and stream. */
export class LockHeldError extends OccupancySyncError {
  constructor(message: string) {
    super('LOCKED', message);
  }
}

/** The database refused or failed a read or write. */
export class StoreError extends OccupancySyncError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('STORE', message, options);
  }
}

/** Process exit codes, chosen so cron mail and systemd's Result= tell the cases apart (sysexits.h where one fits). */
export const ExitCode = {
  OK: 0,
  /** A run failed (transport, GraphQL, store). The next run resumes from the last checkpoint. */
  FAILURE: 1,
  /** Bad command-line usage. */
  USAGE: 64,
  /** Authentication failed: fix the key, secret or scopes. */
  AUTH: 77,
  /** Bad configuration. */
  CONFIG: 78,
  /** Another run holds the lock: nothing was done, nothing is wrong. */
  LOCKED: 75,
} as const;

export function exitCodeFor(error: unknown): number {
  if (error instanceof ConfigError) return ExitCode.CONFIG;
  if (error instanceof AuthError) return ExitCode.AUTH;
  if (error instanceof LockHeldError) return ExitCode.LOCKED;
  return ExitCode.FAILURE;
}
