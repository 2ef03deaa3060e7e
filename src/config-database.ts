import { redactUrl } from './net.ts';
import type { Config, DatabaseTimeouts, Env } from './config-types.ts';
import { duration, fail, TIMER_CEILING } from './config-parse.ts';

/**
 * The sslmode values a DATABASE_URL may carry: libpq's names, as postgres.js reads them. disable: no TLS; prefer: TLS
 * when the server offers it; allow and require: TLS, the certificate not checked; verify-ca and verify-full: TLS with
 * the certificate and the host name checked (postgres.js checks both for verify-ca too). postgres.js takes any other
 * word (a typo, DISABLE) as verify-full, so a server without TLS then failed as a lost connection: refused here.
 */
export const SSL_MODES = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'] as const;

function checkSslMode(url: URL, shown: string): void {
  // Every occurrence: postgres.js keeps the last one, URLSearchParams.get the first.
  for (const mode of url.searchParams.getAll('sslmode')) {
    if (!(SSL_MODES as readonly string[]).includes(mode)) {
      fail('DATABASE_URL', shown, `sslmode=${JSON.stringify(mode)} is not an sslmode Postgres knows`, `use one of sslmode=${SSL_MODES.join(', ')} (lower case), or leave sslmode out for no TLS`);
    }
  }
}

/** DATABASE_URL (file: for SQLite, postgres:// for Postgres) and the Postgres timeouts. */
export function resolveDatabase(env: Env): Config['database'] {
  const url = env.DATABASE_URL?.trim() || 'file:./data/occupancy.db';
  const shown = redactUrl(url);
  if (/^postgres(ql)?:\/\//.test(url)) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      fail('DATABASE_URL', shown, 'not a valid postgres:// URL', 'use postgres://user@host:5432/database');
    }
    // Without a host or a database name, libpq defaults (the local socket, a database named after the OS user) would
    // decide where the data goes: never a guess for the database users report from.
    if (!parsed.hostname) fail('DATABASE_URL', shown, 'names no host', 'use postgres://user@host:5432/database');
    if (parsed.pathname.replace(/^\//, '') === '') fail('DATABASE_URL', shown, 'names no database', 'add the database name, e.g. postgres://user@host:5432/occupancy');
    checkSslMode(parsed, shown);
    // Postgres only: SQLite waits for a lock its busy timeout (5 s), and a statement there runs in this process.
    const timeouts: DatabaseTimeouts = {
      connectMs: duration(env, 'DATABASE_CONNECT_TIMEOUT', '10s', 1000, TIMER_CEILING),
      lockMs: duration(env, 'DATABASE_LOCK_TIMEOUT', '30s', 1000, TIMER_CEILING),
      statementMs: duration(env, 'DATABASE_STATEMENT_TIMEOUT', '5m', 1000, TIMER_CEILING),
    };
    return { url, dialect: 'postgres', sqlitePath: undefined, timeouts };
  }
  if (url.startsWith('file:')) {
    const path = url.slice('file:'.length);
    if (!path) fail('DATABASE_URL', url, 'the SQLite file path is empty', 'use file:./data/occupancy.db');
    return { url, dialect: 'sqlite', sqlitePath: path };
  }
  fail('DATABASE_URL', shown, 'unknown database', 'use file:<path> for SQLite or postgres://user@host:5432/db for Postgres');
}
