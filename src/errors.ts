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

/** The message of something thrown, whatever was thrown (a library may throw a string or a plain object). */
export function messageOf(thrown: unknown): string {
  return thrown instanceof Error ? thrown.message : String(thrown);
}

/** Bad configuration or command-line input. The message names the variable, the (masked) value and the fix. */
export class ConfigError extends OccupancySyncError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('CONFIG', message, options);
  }
}

/**
 * A command-line flag with a bad value (an impossible date, an unknown stream, two flags that exclude each other).
 * Exit code 64, as bad usage; the message names the flag, the value as typed and the fix.
 */
export class UsageError extends OccupancySyncError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('USAGE', message, options);
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

/**
 * The server answered with GraphQL `errors`. Carries every error and the operation that caused them. `permanent` says
 * why the same request would get the same answer (a refused argument, a validation error), so it is never retried.
 */
export class GraphQLResponseError extends OccupancySyncError {
  readonly errors: GraphQLErrorEntry[];
  readonly operationName: string | undefined;
  readonly permanent: string | undefined;
  constructor(operationName: string | undefined, errors: GraphQLErrorEntry[], options?: { cause?: unknown; permanent?: string }) {
    const first = errors[0]?.message ?? 'unknown error';
    const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : '';
    const permanent = options?.permanent ? ` (not retried: ${options.permanent}, and the same request gets the same answer)` : '';
    super('GRAPHQL', `GraphQL operation ${operationName ?? '(anonymous)'} failed: ${first}${more}${permanent}`, options);
    this.errors = errors;
    this.operationName = operationName;
    this.permanent = options?.permanent;
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

/**
 * The configured customer id is not the customer the API key belongs to (a typo, or two entries swapped in the
 * customers file): writing would file one customer's data under another's id. Exit code 77, like other auth failures.
 */
export class CustomerMismatchError extends AuthError {
  readonly configured: string;
  readonly actual: string;
  constructor(configured: string, actual: string, apiKey: string) {
    super(
      `API key ${JSON.stringify(apiKey)} belongs to customer ${actual}, but is configured for customer ${configured}: ` +
        `nothing was written. Fix: set CUSTOMER_ID (or the customers file entry's id) to ${actual}, or use the key of ${configured}`,
    );
    this.configured = configured;
    this.actual = actual;
  }
}

/** The rule of the page contract an API answer broke (docs/sync.md, "The page contract"). */
export type ContractRule =
  /** The answer does not have the declared shape (nodes, pageInfo, hasNextPage, endCursor). */
  | 'shape'
  /** A record's cursor field lies outside the requested window. */
  | 'window'
  /** An endCursor already returned in this window: following it would loop. */
  | 'cursor-repeated'
  /** A page brought no record not already seen in this window (a broken cursor), or empty pages went on and on. */
  | 'no-progress'
  /** A single page held the most records the API answers, and nothing can ask for more: it may have been cut. */
  | 'truncated'
  /** The window needed more pages than SYNC_MAX_PAGES_PER_WINDOW. */
  | 'page-limit'
  /** Most of the window's records break their declared types: the API changed, not a stray record. */
  | 'records-rejected'
  /** A record broke its declared types while SYNC_REJECTED_RECORDS=fail. */
  | 'record-rejected';

/**
 * An API answer broke the page contract. The window it belongs to fails: pages committed before stay (they were
 * valid), the checkpoint and the watermark do not move past this page, and the next run retries the window.
 */
export class ContractViolation extends OccupancySyncError {
  /** The rule of the page contract the answer broke (errors name their kind of failure `reason`, as the signature's). */
  readonly reason: ContractRule;
  readonly detail: string;
  /**
   * Instants (epoch ms) of records the answer held outside the window asked for: proof that the platform reads the
   * window otherwise than asked, so windows committed before may be incomplete (the engine rewinds over them).
   */
  readonly outside: { earliest: number; latest: number } | undefined;
  constructor(reason: ContractRule, detail: string, where: string, options: { fix?: string; outside?: { earliest: number; latest: number } } = {}) {
    super(
      'CONTRACT',
      `${where}: the API answer broke the page contract (${reason}): ${detail}. Nothing of this page was stored and the ` +
        'checkpoint stays before it; the next run retries this window. Fix: ' +
        (options.fix ??
          'if the platform changed its API, adapt the stream definitions (docs/api-assumptions.md, `occupancy-sync check`); otherwise report the answer to the platform'),
    );
    this.reason = reason;
    this.detail = detail;
    this.outside = options.outside;
  }
}

/**
 * A declared table (docs/tables.md) cannot follow its declaration: a column's type or the key changed. The message
 * holds one line per refused change, naming the table, the field, the old and new types and the fix; nothing of the
 * declaration was applied. Exit code 78, as configuration: the definitions file is what to change.
 */
export class TableChangeError extends ConfigError {}

/** The database refused or failed a read or write. */
export class StoreError extends OccupancySyncError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('STORE', message, options);
  }
}

/**
 * Someone else holds the database for now (another process's migration, SQLite's write lock past its busy timeout):
 * nothing was done, and nothing is wrong with this run or its data. Exit code 75, as when another run holds the lock.
 */
export class DatabaseBusyError extends StoreError {}

/**
 * DATABASE_URL names a place where the database cannot be opened: a directory, a file that is not a database, a file
 * or directory this user may not read or write or that cannot be created, a database that does not exist for a command
 * that only reads, a Postgres database that does not exist. The message names the variable, the resolved path (or the
 * database, without its password), what is wrong there and the fix; exit code 78, as configuration.
 */
export class DatabaseLocationError extends StoreError {}

/**
 * The database refused this user: Postgres refused the login (no such role, a wrong password, pg_hba.conf), or the
 * role lacks a permission it needs (CREATE on the schema). Like a wrong API secret or a missing scope, only a person
 * can fix it, so it is exit code 77 (a restart or the next cron run would meet the same refusal).
 */
export class DatabaseAccessError extends StoreError {}

/** Process exit codes, chosen so cron mail and systemd's Result= tell the cases apart (sysexits.h where one fits). */
export const ExitCode = {
  OK: 0,
  /** A run failed (transport, GraphQL, store). The next run resumes from the last checkpoint. */
  FAILURE: 1,
  /** Bad command-line usage. */
  USAGE: 64,
  /** Authentication failed: fix the key, secret or scopes (or the database user's login or permissions). */
  AUTH: 77,
  /** Bad configuration. */
  CONFIG: 78,
  /** Another run holds the lock: nothing was done, nothing is wrong. */
  LOCKED: 75,
} as const;

export function exitCodeFor(error: unknown): number {
  if (error instanceof UsageError) return ExitCode.USAGE;
  if (error instanceof ConfigError || error instanceof DatabaseLocationError) return ExitCode.CONFIG;
  if (error instanceof AuthError || error instanceof DatabaseAccessError) return ExitCode.AUTH;
  if (error instanceof DatabaseBusyError) return ExitCode.LOCKED;
  return ExitCode.FAILURE;
}
