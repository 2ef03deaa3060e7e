import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type BetterSqlite3 from 'better-sqlite3';
import type { Logger } from '../../logger.ts';
import { processStart } from '../../process-start.ts';
import type { LockAttempt } from '../adapter.ts';

/**
 * SQLite locks: a row naming its holder (pid, host, process start time, random token), taken in a BEGIN IMMEDIATE
 * transaction (one writer at a time, so check-and-insert is atomic across processes). A row whose holder is gone (no
 * such pid on this host, or the pid now belongs to a different process) is stale and taken over, so kill -9 never
 * leaves a permanent lock. Rows from another host cannot be checked and are respected (a SQLite file is not meant to
 * be shared across machines; use Postgres for that). Run locks are rows of `sync_locks` (one per customer and
 * stream); the migration lock is the one row of a table the migrator makes before any migration.
 */

export interface LockPlace {
  table: string;
  /** The columns and values that name the lock in its table. */
  key: Readonly<Record<string, string>>;
  /** Makes the table when it may not exist yet (the migration lock's, on an empty database). */
  create?: string;
}

export const MIGRATION_LOCK: LockPlace = {
  table: '__migration_lock',
  key: { name: 'migrate' },
  create:
    'CREATE TABLE IF NOT EXISTS "__migration_lock" (name text PRIMARY KEY, holder_pid integer NOT NULL, holder_host text NOT NULL, ' +
    'holder_start text, token text NOT NULL, acquired_at text NOT NULL)',
};

export const runLock = (customerId: string, stream: string): LockPlace => ({ table: 'sync_locks', key: { customer_id: customerId, stream } });

/** Tokens of SQLite locks held by this process: a row with our pid but an unknown token is a previous incarnation's. */
const liveTokens = new Set<string>();


export interface LockRow {
  holder_pid: number;
  holder_host: string;
  holder_start: string | null;
  token: string;
  acquired_at: string;
}

/** The holder of a lock row has ended (on this host), so the row may be taken over. */
export function holderIsGone(row: LockRow, host = hostname()): boolean {
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

export const describeHolder = (row: LockRow) => `process ${row.holder_pid} on ${row.holder_host} since ${row.acquired_at}`;

/**
 * One attempt to take a lock row. `exclusive` is the room's connection mutex (one connection, one transaction at a
 * time); `now` the canonical acquisition time.
 */
export function trySqliteLock(
  db: BetterSqlite3.Database,
  exclusive: <T>(fn: () => T) => Promise<T>,
  place: LockPlace,
  now: () => string,
  logger: Logger,
): Promise<LockAttempt> {
  const host = hostname();
  const columns = Object.keys(place.key);
  const values = Object.values(place.key);
  const where = columns.map((c) => `${c} = ?`).join(' AND ');
  const select = `SELECT holder_pid, holder_host, holder_start, token, acquired_at FROM ${place.table} WHERE ${where}`;
  return exclusive(() => {
    // A lock with a live holder is seen without the write lock, so processes waiting for it do not queue for the
    // file's write lock behind the holder's own transactions.
    const exists = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(place.table);
    const seen = exists ? (db.prepare(select).get(...values) as LockRow | undefined) : undefined;
    if (seen && !holderIsGone(seen, host)) return { holder: describeHolder(seen) };
    const token = randomUUID();
    const held = db.transaction((): LockRow | undefined => {
      if (place.create) db.exec(place.create);
      const row = db.prepare(select).get(...values) as LockRow | undefined;
      if (row && !holderIsGone(row, host)) return row;
      if (row) logger.warn({ lock: place.key, holderPid: row.holder_pid, holderHost: row.holder_host, acquiredAt: row.acquired_at }, 'taking over a lock left by a process that is gone');
      db.prepare(
        `INSERT INTO ${place.table} (${columns.join(', ')}, holder_pid, holder_host, holder_start, token, acquired_at) ` +
          `VALUES (${columns.map(() => '?').join(', ')}, ?, ?, ?, ?, ?) ON CONFLICT (${columns.join(', ')}) DO UPDATE SET ` +
          'holder_pid = excluded.holder_pid, holder_host = excluded.holder_host, holder_start = excluded.holder_start, ' +
          'token = excluded.token, acquired_at = excluded.acquired_at',
      ).run(...values, process.pid, host, processStart(process.pid), token, now());
      return undefined;
    }).immediate();
    if (held) return { holder: describeHolder(held) };
    liveTokens.add(token);
    let released = false;
    return {
      lock: {
        release: () =>
          exclusive(() => {
            if (released) return;
            released = true;
            liveTokens.delete(token);
            if (db.open) db.prepare(`DELETE FROM ${place.table} WHERE ${where} AND token = ?`).run(...values, token);
          }),
      },
    };
  });
}
