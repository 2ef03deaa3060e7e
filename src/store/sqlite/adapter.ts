import type Database from 'better-sqlite3';
import type { SQL } from 'drizzle-orm';
import { sqliteCore } from '../../../db/schema/drizzle.ts';
import type { Logger } from '../../logger.ts';
import type { Adapter, Executor, TransactionOptions } from '../adapter.ts';
import { COMPATIBILITY_FLAGS } from '../compatibility.ts';
import { isBusy } from '../errors.ts';
import { KeyCache } from '../key-cache.ts';
import { DECLARED_TABLE, MIGRATIONS_TABLE, REPEATABLE_TABLE } from '../migrations.ts';
import { serial } from '../serial.ts';
import type { Lock } from '../types.ts';
import { openForReads, openForWrites, type Connection, type ConnectionOptions } from './connection.ts';
import { sqliteExecutor, type Runner } from './executor.ts';
import { GroupCommit } from './group-commit.ts';
import { checkIntegrity } from './integrity.ts';
import { holderIsGone, MIGRATION_LOCK, runLock, trySqliteLock, type LockRow } from './locks.ts';
import { dollarToQuestion } from './placeholders.ts';
import type { SqliteWriter } from './writer.ts';

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

/**
 * Bulk rows a process writes on the main connection before its pages move to the writer thread. Starting the thread
 * (an isolate and a connection) costs more than it saves on a run of a few pages, such as a cron sync's lookback.
 */
const WRITER_AFTER_ROWS = 2_000;

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
  const dialect = new (sqliteCore().SQLiteSyncDialect)();
  const compile = (query: SQL) => dialect.sqlToQuery(query);
  const exclusive = serial();
  const locks = new Set<Lock>();
  const keys = new KeyCache();
  const main = mainRunner(db);
  /** Rows written by bulk transactions so far: the writer thread starts once they pass WRITER_AFTER_ROWS. */
  let bulkRows = 0;

  /**
   * One write transaction on `runner`'s connection; the caller holds the mutex. IMMEDIATE takes the write lock up
   * front (waiting up to busy_timeout for another process), so the transaction can never fail half-way with
   * SQLITE_BUSY when it first writes.
   */
  const transactionOn = async <T>(runner: Runner, rollback: () => unknown, fn: (tx: Executor) => Promise<T>): Promise<T> => {
    await runner.run('BEGIN IMMEDIATE', []);
    const scope = keys.scope();
    try {
      const result = await fn(sqliteExecutor(runner, compile, scope));
      await runner.run('COMMIT', []);
      scope.commit();
      checkpointer?.nudge();
      return result;
    } catch (error) {
      await rollback();
      throw error;
    }
  };
  const mainTransaction = <T>(fn: (tx: Executor) => Promise<T>) =>
    exclusive(() => transactionOn(main, () => db.inTransaction && db.exec('ROLLBACK'), fn));
  const writerTransaction = <T>(thread: SqliteWriter, fn: (tx: Executor) => Promise<T>) =>
    exclusive(() => transactionOn(writerRunner(thread), () => thread.rollback().catch(() => undefined), fn));
  const group = new GroupCommit({ transaction: mainTransaction });

  /** Outside a transaction every statement commits by itself, so keys learnt are committed at once. */
  const autocommit = <T>(fn: (tx: Executor) => Promise<T>) =>
    exclusive(async () => {
      const scope = keys.scope();
      const result = await fn(sqliteExecutor(main, compile, scope));
      scope.commit();
      return result;
    });

  return {
    dialect: 'sqlite',
    flags: COMPATIBILITY_FLAGS.sqlite,
    location: path,
    readonly: options.readonly === true,
    bookkeeping: { migrations: `"${MIGRATIONS_TABLE}"`, repeatable: `"${REPEATABLE_TABLE}"`, declared: `"${DECLARED_TABLE}"`, setup: [], stepLock: undefined },
    all: (query) => autocommit((tx) => tx.all(query)),
    run: (query) => autocommit((tx) => tx.run(query)),
    exec: (statement) => autocommit((tx) => tx.exec(statement)),
    upsert: (sink, page, records) => autocommit((tx) => tx.upsert(sink, page, records)),

    transaction<T>(fn: (tx: Executor) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
      if (options.shareCommit) return group.submit(fn);
      bulkRows += options.bulkRows ?? 0;
      if (writer && options.bulkRows !== undefined && bulkRows > WRITER_AFTER_ROWS) return writerTransaction(writer, fn);
      return mainTransaction(fn);
    },

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

/** The main connection: statements prepared once and cached by their text. */
function mainRunner(db: Database.Database): Runner {
  const statements = new Map<string, Database.Statement>();
  const prepare = (text: string): Database.Statement => {
    let stmt = statements.get(text);
    if (!stmt) statements.set(text, (stmt = db.prepare(text)));
    return stmt;
  };
  return {
    all: <T>(text: string, params: readonly unknown[]) => prepare(text).all(...params) as T[],
    run: (text, params) => prepare(text).run(...params).changes,
    exec: (text) => void db.exec(text),
    rows(text, width, values) {
      const stmt = prepare(text);
      const args = new Array<unknown>(width);
      for (let offset = 0; offset < values.length; offset += width) {
        for (let c = 0; c < width; c++) args[c] = values[offset + c];
        stmt.run(args);
      }
      return values.length / width;
    },
  };
}

/** The writer thread's connection: each call is one message. */
function writerRunner(thread: SqliteWriter): Runner {
  return {
    all: (text, params) => thread.all(text, params),
    run: (text, params) => thread.run(text, params),
    exec: async (text) => void (await thread.run(text, [])),
    rows: (text, width, values) => thread.rows(text, width, values),
  };
}

function toSqliteValue(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'boolean') return value ? 1 : 0;
  return value;
}
