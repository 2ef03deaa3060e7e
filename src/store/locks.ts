import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type BetterSqlite3 from 'better-sqlite3';
import type { ReservedSql, Sql } from 'postgres';
import type { Logger } from '../logger.ts';
import type { Lock } from './types.ts';

/**
 * Run locks, one per (customer, stream), so two runs never overlap.
 *
 * Postgres: session-level advisory locks (`pg_try_advisory_lock`), held on one reserved connection per store. The
 * server drops them when the session ends, so a killed process (kill -9, lost machine) cannot leave one behind. All
 * locks of a store share that connection so a partner with many customers does not drain the pool; advisory locks
 * are re-entrant per session, so the store itself refuses a second acquisition of a key it holds.
 *
 * SQLite: a row in `sync_locks`, taken in a BEGIN IMMEDIATE transaction (one writer at a time, so check-and-insert
 * is atomic across processes). The row names its holder (pid, host, process start time, random token). A row whose
 * holder is gone (no such pid on this host, or the pid now belongs to a different process) is stale and taken over,
 * so kill -9 never leaves a permanent lock. Rows from another host cannot be checked and are respected (a SQLite file
 * is not meant to be shared across machines; use Postgres for that).
 */

/** Stable signed 64-bit advisory lock key. `scope` (the Postgres schema) keeps separate datasets independent. */
export function advisoryKey(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\u0000')).digest().readBigInt64BE(0).toString();
}

/** Serialises async operations (a promise-chain mutex). */
export function serial(): <T>(fn: () => Promise<T> | T) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return (fn) => {
    const run = tail.then(fn);
    tail = run.catch(() => undefined);
    return run;
  };
}

export class PgLocks {
  readonly #client: Sql;
  readonly #scope: string;
  readonly #held = new Set<string>();
  readonly #exclusive = serial();
  #conn: ReservedSql | undefined;

  constructor(client: Sql, scope: string) {
    this.#client = client;
    this.#scope = scope;
  }

  tryLock(customerId: string, stream: string): Promise<Lock | undefined> {
    const key = advisoryKey('occupancy-sync', this.#scope, customerId, stream);
    return this.#exclusive(async () => {
      if (this.#held.has(key)) return undefined;
      this.#conn ??= await this.#client.reserve();
      let row: { ok: boolean } | undefined;
      try {
        [row] = await this.#conn.unsafe<{ ok: boolean }[]>('SELECT pg_try_advisory_lock($1::bigint) AS ok', [key]);
      } catch (error) {
        this.#maybeReturnConnection();
        throw error;
      }
      if (!row?.ok) {
        this.#maybeReturnConnection();
        return undefined;
      }
      this.#held.add(key);
      let released = false;
      return {
        release: () =>
          this.#exclusive(async () => {
            if (released) return;
            released = true;
            this.#held.delete(key);
            try {
              await this.#conn?.unsafe('SELECT pg_advisory_unlock($1::bigint)', [key]);
            } finally {
              this.#maybeReturnConnection();
            }
          }),
      };
    });
  }

  /** Drops every lock by returning the session's connection (used by close()). */
  releaseAll(): Promise<void> {
    return this.#exclusive(async () => {
      if (!this.#conn) return;
      if (this.#held.size > 0) await this.#conn.unsafe('SELECT pg_advisory_unlock_all()').catch(() => undefined);
      this.#held.clear();
      this.#maybeReturnConnection();
    });
  }

  #maybeReturnConnection(): void {
    if (this.#held.size === 0 && this.#conn) {
      this.#conn.release();
      this.#conn = undefined;
    }
  }
}

/** Tokens of SQLite locks held by this process: a row with our pid but an unknown token is a previous incarnation's. */
const liveTokens = new Set<string>();

/** The kernel's start time of a process (Linux), so a pid reused by another process is not mistaken for the holder. */
export function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 22 (starttime); the command name (field 2) may contain spaces, so count from its closing parenthesis.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

interface LockRow {
  holder_pid: number;
  holder_host: string;
  holder_start: string | null;
  token: string;
  acquired_at: string;
}

function holderIsGone(row: LockRow, host: string): boolean {
  if (row.holder_host !== host) return false;
  if (row.holder_pid === process.pid) return !liveTokens.has(row.token);
  try {
    process.kill(row.holder_pid, 0);
  } catch (error) {
    // EPERM: the process exists but belongs to another user; it is alive.
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return true;
  }
  const start = processStart(row.holder_pid);
  return row.holder_start !== null && start !== null && start !== row.holder_start;
}

/**
 * One attempt to take the SQLite lock row. `exclusive` is the adapter's connection mutex (one connection, one
 * transaction at a time); `now` the canonical acquisition time.
 */
export function trySqliteLock(
  db: BetterSqlite3.Database,
  exclusive: <T>(fn: () => T) => Promise<T>,
  customerId: string,
  stream: string,
  now: () => string,
  logger: Logger,
): Promise<Lock | undefined> {
  const host = hostname();
  return exclusive(() => {
    const token = randomUUID();
    const acquired = db.transaction(() => {
      const row = db
        .prepare('SELECT holder_pid, holder_host, holder_start, token, acquired_at FROM sync_locks WHERE customer_id = ? AND stream = ?')
        .get(customerId, stream) as LockRow | undefined;
      if (row && !holderIsGone(row, host)) return false;
      if (row) {
        logger.warn(
          { customerId, stream, holderPid: row.holder_pid, holderHost: row.holder_host, acquiredAt: row.acquired_at },
          'taking over a lock left by a process that is gone',
        );
      }
      db.prepare(
        'INSERT INTO sync_locks (customer_id, stream, holder_pid, holder_host, holder_start, token, acquired_at) ' +
          'VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (customer_id, stream) DO UPDATE SET ' +
          'holder_pid = excluded.holder_pid, holder_host = excluded.holder_host, holder_start = excluded.holder_start, ' +
          'token = excluded.token, acquired_at = excluded.acquired_at',
      ).run(customerId, stream, process.pid, host, processStart(process.pid), token, now());
      return true;
    }).immediate();
    if (!acquired) return undefined;
    liveTokens.add(token);
    let released = false;
    return {
      release: () =>
        exclusive(() => {
          if (released) return;
          released = true;
          liveTokens.delete(token);
          if (db.open) db.prepare('DELETE FROM sync_locks WHERE customer_id = ? AND stream = ? AND token = ?').run(customerId, stream, token);
        }),
    };
  });
}
