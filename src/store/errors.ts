/**
 * Driver errors in words an operator can act on: what failed, where (the database, without its password), and the
 * fix. The raw message is kept at the end for anything not recognised, and the driver error stays the `cause`.
 */
import { DatabaseAccessError, DatabaseBusyError, DatabaseLocationError, StoreError } from '../errors.ts';
import { redactUrl } from '../net.ts';

interface DriverError {
  message?: string;
  code?: string;
  errno?: number;
  address?: string;
  port?: number;
  hostname?: string;
  constraint_name?: string;
  detail?: string;
}

/** `postgres://user@host:5432/db` or the SQLite path, for messages: never a password. */
export const describeLocation = redactUrl;

/**
 * Why the database refused, with the fix when the cause is a known one (connection, missing database, credentials,
 * permissions, a file that is not a database); otherwise the driver's own message, naming the constraint if any.
 */
export function explainDatabaseError(error: unknown, location: string): string {
  const e = (error ?? {}) as DriverError;
  const code = e.code ?? '';
  const raw = e.message ?? String(error);
  if (isTlsRefused(code, raw)) {
    return `Postgres at ${location} did not accept TLS, which the sslmode of DATABASE_URL asks for: the connection ended in the TLS handshake (${raw}). Fix: enable TLS on the server (ssl = on), or set sslmode=prefer (TLS when the server offers it) or sslmode=disable in DATABASE_URL`;
  }
  switch (code) {
    case 'ECONNREFUSED':
      return `cannot connect to Postgres at ${location}: connection refused. Fix: start Postgres, or correct the host and port in DATABASE_URL`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot connect to Postgres at ${location}: the host name does not resolve. Fix: correct the host in DATABASE_URL`;
    case 'ETIMEDOUT':
    case 'CONNECT_TIMEOUT':
      return `cannot connect to Postgres at ${location}: no answer in time. Fix: check the host, port and any firewall between here and the server`;
    case 'CONNECTION_CLOSED':
    case 'CONNECTION_DESTROYED':
    case 'CONNECTION_ENDED':
    case 'CONNECTION_LOST':
    case 'ECONNRESET':
    case 'EPIPE':
    case '57P01':
    case '57P02':
    case '57P03':
    case '08000':
    case '08003':
    case '08006':
    case '25P03':
      return `lost the connection to Postgres at ${location} (${raw}): what was not committed is not stored, and the next run resumes from the last committed page. Fix: check that the server is up and reachable from here (a restart, failover or administrator ends sessions)`;
    case '53300':
      return `Postgres at ${location} refused a connection: ${raw}. occupancy-sync opens up to 13 per process (a pool of 10, one for the run locks, one while migrating, one to say what a wait is for). Fix: raise the limit (ALTER ROLE <user> CONNECTION LIMIT 20, or the server's max_connections), or run fewer processes at once`;
    case '55P03':
      return `a lock that another session holds at ${location} was not released within DATABASE_LOCK_TIMEOUT (${raw}): nothing of this statement was done. Fix: find the session holding it (the "waiting for Postgres" log lines name it; pg_stat_activity), or raise DATABASE_LOCK_TIMEOUT`;
    case '57014':
      if (/statement timeout/i.test(raw)) {
        return `a statement ran longer than DATABASE_STATEMENT_TIMEOUT at ${location} (${raw}): nothing of it was done. Fix: find what slows the server (pg_stat_activity), or raise DATABASE_STATEMENT_TIMEOUT`;
      }
      return `the statement was cancelled at ${location} (${raw}; SIGTERM or SIGINT, or an administrator): nothing of it was committed, and the next run resumes from the last committed page`;
    case '3D000':
      return `the database named in DATABASE_URL (${location}) does not exist. Fix: create it (e.g. createdb <name>) or correct the name in DATABASE_URL`;
    case '28P01':
    case '28000':
      return `Postgres refused the login at ${location} (${raw}). Fix: correct the user and password in DATABASE_URL, or allow this host in the server's pg_hba.conf`;
    case '42501':
      return `the database user lacks a permission at ${location} (${raw}). Fix: grant it CREATE and USAGE on the schema, or use a user that owns it`;
    case '3F000':
      return `the schema named in DATABASE_URL does not exist at ${location} and could not be created (${raw}). Fix: create it, or let occupancy-sync create it (CREATE on the database)`;
    case '25006':
      return `the database is read-only at ${location} (${raw}). Fix: point DATABASE_URL at a writable primary`;
    case 'SQLITE_CANTOPEN':
      return `cannot open or create the SQLite database ${location}: the file or its directory is missing or not accessible. Fix: create the directory and make it writable by this user, or point DATABASE_URL elsewhere`;
    case 'SQLITE_READONLY':
    case 'SQLITE_READONLY_DIRECTORY':
    case 'SQLITE_READONLY_DBMOVED':
      return `the SQLite database ${location} is read-only for this user (${raw}). Fix: make the file and its directory writable, or use a read-only command (status, report, state show)`;
    case 'SQLITE_NOTADB':
      return `${location} is not a SQLite database (${raw}). Fix: point DATABASE_URL at the file occupancy-sync created, or at a new path`;
    case 'SQLITE_CORRUPT':
      return `the SQLite database ${location} is damaged (${raw}). Fix: restore it from a backup; a new file re-syncs from SYNC_INITIAL_HISTORY`;
    case 'SQLITE_BUSY':
    case 'SQLITE_BUSY_RECOVERY':
    case 'SQLITE_BUSY_SNAPSHOT':
    case 'SQLITE_BUSY_TIMEOUT':
    case 'SQLITE_LOCKED':
      return `the SQLite database ${location} stayed locked by another process past the busy timeout (${raw}). Fix: none if another occupancy-sync process was writing (the next run goes on); otherwise find what holds the file (fuser ${location})`;
    case 'SQLITE_FULL':
    case 'ENOSPC':
      return `the disk holding ${location} is full. Fix: free space (the last page was not committed; the next run resumes)`;
    case 'EACCES':
    case 'EPERM':
      return `no permission to create ${location} or its directory (${code}). Fix: make the directory writable by this user, or point DATABASE_URL elsewhere`;
    default: {
      const parts = [raw];
      if (e.constraint_name && !raw.includes(e.constraint_name)) parts.push(`constraint ${e.constraint_name}`);
      if (e.detail) parts.push(e.detail);
      return parts.join('; ');
    }
  }
}

/**
 * The connection ended before the TLS handshake was done. Asked for TLS (sslmode require, allow, verify-*), postgres.js
 * starts the handshake even when the server has just answered that it speaks no TLS; such a server then closes the
 * connection, and Node reports only the socket's end, as for a server that went away.
 */
function isTlsRefused(code: string, raw: string): boolean {
  return (code === 'ECONNRESET' || code === 'EPIPE') && /before secure TLS connection was established/i.test(raw);
}

/** Codes that say someone else holds the database for now: trying again later can succeed. */
export function isBusy(error: unknown): boolean {
  const code = (error as { code?: string } | undefined)?.code ?? '';
  return code.startsWith('SQLITE_BUSY') || code === 'SQLITE_LOCKED' || code === '55P03';
}

/**
 * Postgres cancelled the statement on request (SIGTERM's cancel(), or an administrator), not for running too long. A
 * cancel request names a session, not a statement: one sent for a statement that ended meanwhile lands on whatever
 * that pooled session runs next.
 */
export function isCancelledOnRequest(error: unknown): boolean {
  const e = error as { code?: string; message?: string } | undefined;
  return e?.code === '57014' && !/statement timeout/i.test(e.message ?? '');
}

/** Postgres refused the login (28P01 a wrong password, 28000 no such role or no pg_hba.conf entry) or a permission. */
const ACCESS_CODES = new Set(['28P01', '28000', '42501']);

/**
 * The store's error for a driver error, `message` explaining it. The class says who can fix it, and so the exit code:
 * a database that does not exist is a DatabaseLocationError (78, DATABASE_URL names the wrong place), a refused login
 * or permission a DatabaseAccessError (77, as a refused API key: retrying meets the same refusal), anything else a
 * StoreError (1). Chosen here only, whichever statement met the error (opening, migrating, reading, a page).
 */
export function wrapDriverError(error: unknown, message: string): StoreError {
  const code = (error as { code?: string } | undefined)?.code ?? '';
  if (code === '3D000') return new DatabaseLocationError(message, { cause: error });
  if (ACCESS_CODES.has(code)) return new DatabaseAccessError(message, { cause: error });
  return new StoreError(message, { cause: error });
}

/**
 * The store's error for a driver error met before anything was written (opening, migrating, locking): a busy
 * database is a DatabaseBusyError (nothing was done; the CLI exits 75), anything else as wrapDriverError says.
 */
export function storeError(error: unknown, location: string, what?: string): StoreError {
  const message = `${what ? `${what} failed: ` : ''}${explainDatabaseError(error, location)}`;
  return isBusy(error) ? new DatabaseBusyError(`${message}. Nothing was done`, { cause: error }) : wrapDriverError(error, message);
}
