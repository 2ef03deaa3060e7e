import type { Adapter, Executor } from '../adapter.ts';
import { COMPATIBILITY_FLAGS } from '../compatibility.ts';
import { isBusy } from '../errors.ts';
import { DECLARED_TABLE, MIGRATIONS_TABLE, REPEATABLE_TABLE } from '../migrations.ts';
import { serial } from '../serial.ts';
import type { Lock } from '../types.ts';
import { openForReads, openForWrites, type Connection, type ConnectionOptions } from './connection.ts';
import { checkIntegrity } from './integrity.ts';
import { holderIsGone, MIGRATION_LOCK, runLock, trySqliteLock, type LockRow } from './locks.ts';
import { dollarToQuestion } from './placeholders.ts';
import { SqliteTransactions } from './transactions.ts';

/**
 * SQLite through better-sqlite3: one synchronous connection per store, WAL mode. Statements are prepared once and
 * cached by text. Because the connection is shared by everything in the process (sync engine, webhook receiver), all
 * work is serialised through one mutex so no statement ever lands inside someone else's transaction. Bulk pages move
 * to a writer thread (writer.ts), small independent transactions share commits (group-commit.ts), WAL checkpoints run
 * beside (checkpointer.ts).
 */
export interface SqliteOptions extends ConnectionOptions {
  now: () => string;
  /** Files up to this size are checked for damage at every open for writing (integrity.ts). */
  fullCheckBytes?: number;
  /** Open for reading only: the file must exist, nothing is created or written (status, report, state show). */
  readonly?: boolean;
}

export function openSqlite(options: SqliteOptions): Adapter {
  if (options.readonly) return sqliteAdapter(openForReads(options), options);
  const connection = openForWrites(options);
  try {
    checkIntegrity(connection.db, options);
  } catch (error) {
    connection.db.close();
    throw error;
  }
  return sqliteAdapter(connection, options);
}

function sqliteAdapter(connection: Connection, options: SqliteOptions): Adapter {
  const { db, checkpointer, writer } = connection;
  const { path, logger, now } = options;
  const exclusive = serial();
  const locks = new Set<Lock>();
  const work = new SqliteTransactions(connection, exclusive);
  const autocommit = <T>(fn: (tx: Executor) => Promise<T>) => work.autocommit(fn);

  return {
    dialect: 'sqlite',
    flags: COMPATIBILITY_FLAGS.sqlite,
    location: path,
    readonly: options.readonly === true,
    bookkeeping: { migrations: `"${MIGRATIONS_TABLE}"`, repeatable: `"${REPEATABLE_TABLE}"`, declared: `"${DECLARED_TABLE}"`, setup: [], stepLock: undefined },
    all: (query) => autocommit((tx) => tx.all(query)),
    run: (query) => autocommit((tx) => tx.run(query)),
    runAhead: (query, check) => autocommit((tx) => tx.runAhead(query, check)),
    exec: (statement) => autocommit((tx) => tx.exec(statement)),
    upsert: (sink, page, records) => autocommit((tx) => tx.upsert(sink, page, records)),
    transaction: (fn, transactionOptions) => work.transaction(fn, transactionOptions),

    async tryMigrationLock() {
      try {
        return await trySqliteLock(db, exclusive, MIGRATION_LOCK, now, logger);
      } catch (error) {
        // The file stayed busy past the busy timeout: someone is writing (the migrating process). Still waiting.
        if (isBusy(error)) return { holder: `a process writing to ${path} (${(error as Error).message})` };
        throw error;
      }
    },

    async tryLock(customerId, stream) {
      const attempt = await trySqliteLock(db, exclusive, runLock(customerId, stream), now, logger);
      if (!('lock' in attempt)) return undefined;
      const { lock } = attempt;
      locks.add(lock);
      return {
        release: async () => {
          locks.delete(lock);
          await lock.release();
        },
      };
    },

    runLockHeld: (customerId, stream) =>
      exclusive(() => {
        const row = db.prepare('SELECT holder_pid, holder_host, holder_start, token, acquired_at FROM sync_locks WHERE customer_id = ? AND stream = ?').get(customerId, stream) as LockRow | undefined;
        return row !== undefined && !holderIsGone(row);
      }),

    // A SQLite lock is a row in the file: it cannot be lost while this process lives.
    lockLost: () => undefined,

    query<T>(text: string, params: readonly unknown[]): Promise<T[]> {
      return exclusive(() => {
        const q = dollarToQuestion(text, params.map(toSqliteValue));
        // Not cached: report SQL is ad hoc, and the cache would grow with every distinct text.
        const stmt = db.prepare(q.text);
        if (stmt.reader) return stmt.all(...q.params) as T[];
        stmt.run(...q.params);
        return [];
      });
    },

    async close() {
      for (const lock of [...locks]) await lock.release().catch(() => undefined);
      await checkpointer?.close();
      await exclusive(async () => {
        await writer?.close();
        if (db.open) db.close();
        connection.cleanup?.();
      });
    },
  };
}

function toSqliteValue(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'boolean') return value ? 1 : 0;
  return value;
}
