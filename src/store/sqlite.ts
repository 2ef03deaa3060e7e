import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import type { SQL } from 'drizzle-orm';
import { sqliteCore } from '../../db/schema/drizzle.ts';
import type { Logger } from '../logger.ts';
import { StoreError } from '../errors.ts';
import { explainDatabaseError } from './errors.ts';
import type { Adapter, Executor } from './adapter.ts';
import { WalCheckpointer } from './checkpointer.ts';
import { SqliteWriter } from './sqlite-writer.ts';
import { serial, trySqliteLock } from './locks.ts';
import { CONVERSION_DONE_MIGRATION, convertLegacyOccupancy, type ConversionOptions } from './compact-occupancy.ts';
import { loadMigrations, MIGRATIONS_TABLE, pending } from './migrations.ts';
import { dollarToQuestion } from './placeholders.ts';
import { KeyCache, type KeyScope } from './key-cache.ts';
import { sinkDef, type PageContext, type SinkDef } from './sinks.ts';
import type { Lock, SinkName, SinkRecords } from './types.ts';

/**
 * SQLite through better-sqlite3: one synchronous connection per store, WAL mode. Statements are prepared once and
 * cached by text. Because the connection is shared by everything in the process (sync engine, webhook receiver), all
 * work is serialised through one mutex so no statement ever lands inside someone else's transaction.
 */
export interface SqliteOptions {
  path: string;
  logger: Logger;
  now: () => string;
  /** How long a writer waits for another process's write transaction before failing (ms). */
  busyTimeoutMs?: number;
  /** WAL checkpoints on a worker thread instead of inside commits (default true for files; see checkpointer.ts). */
  backgroundCheckpoints?: boolean;
  /** Open for reading only: the file must exist, nothing is created or written (status, report, state show). */
  readonly?: boolean;
  /** The occupancy conversion's batch size and progress hook (tests). */
  conversion?: Pick<ConversionOptions, 'batch' | 'onBatch'>;
  /** Write transactions on a worker thread (sqlite-writer.ts); default true for files. */
  writerThread?: boolean;
}

/**
 * With background checkpoints the writer checkpoints only when the WAL reaches this many pages (~40 MiB), which
 * happens only if the worker falls behind. The file is truncated back to JOURNAL_SIZE_LIMIT after such a checkpoint.
 */
const FALLBACK_AUTOCHECKPOINT_PAGES = 10_000;
const JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024;
/**
 * Bulk rows a process writes on the main connection before its pages move to the writer thread. Starting the thread
 * (an isolate and a connection) costs more than it saves on a run of a few pages, such as a cron sync's lookback.
 */
const WRITER_AFTER_ROWS = 2_000;

export function openSqlite(options: SqliteOptions): Adapter {
  const { path, logger, now } = options;
  if (options.readonly) return openReadonly(options);
  try {
    if (path !== ':memory:' && !path.startsWith('file:')) mkdirSync(dirname(path), { recursive: true });
  } catch (error) {
    throw new StoreError(`cannot create the directory of the SQLite database: ${explainDatabaseError(error, path)}`, { cause: error });
  }
  const checkpointer = path !== ':memory:' && (options.backgroundCheckpoints ?? true)
    ? new WalCheckpointer({ path, logger })
    : undefined;
  let db: Database.Database;
  // Applied to the main connection and to the writer thread's (sqlite-writer.ts), so both behave alike.
  const pragmas = [
    `busy_timeout = ${options.busyTimeoutMs ?? 5000}`,
    // NORMAL in WAL mode is durable against process crashes (what kill -9 tests); only an OS crash may lose the
    // last commits, never corrupt the file.
    'synchronous = NORMAL',
    'foreign_keys = ON',
    // 32 MiB page cache (default 2 MiB): every commit touches index pages scattered over the file (one insertion
    // point per floor space), which the default cache would write back and read again (docs/performance.md).
    'cache_size = -32768',
    ...(checkpointer ? [`wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`, `journal_size_limit = ${JOURNAL_SIZE_LIMIT}`] : []),
  ];
  try {
    db = new Database(path);
    db.pragma('journal_mode = WAL');
    for (const pragma of pragmas) db.pragma(pragma);
  } catch (error) {
    throw new StoreError(explainDatabaseError(error, path), { cause: error });
  }
  const writer = path !== ':memory:' && (options.writerThread ?? true) ? new SqliteWriter({ path, pragmas }) : undefined;
  return sqliteAdapter(db, options, checkpointer, writer);
}

/**
 * A read-only connection. A WAL database at rest (its writer closed it cleanly, so no -wal file) in a directory this
 * user may not write cannot be opened read-only: SQLite needs to create its -shm file first. With no -wal file every
 * committed page is in the main file, so a private copy in a temporary directory reads exactly the same data.
 */
function openReadonly(options: SqliteOptions): Adapter {
  const { path, logger } = options;
  const open = (file: string) => {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
    // Opening is lazy: the first read is what fails when the -shm file cannot be made.
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    return db;
  };
  try {
    return sqliteAdapter(open(path), options, undefined);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'SQLITE_CANTOPEN' && !existsSync(path)) {
      throw new StoreError(
        `there is no SQLite database at ${path}. Fix: run \`occupancy-sync sync\` (or \`migrate\`) first, or point DATABASE_URL at the file it writes to`,
        { cause: error },
      );
    }
    if ((code !== 'SQLITE_READONLY_DIRECTORY' && code !== 'SQLITE_CANTOPEN') || existsSync(`${path}-wal`)) {
      throw new StoreError(explainDatabaseError(error, path), { cause: error });
    }
    const dir = mkdtempSync(join(tmpdir(), 'occupancy-sync-ro-'));
    const copy = join(dir, basename(path));
    copyFileSync(path, copy);
    logger.info({ path, copy }, 'the database directory is read-only: reading a private copy of the file (it has no uncommitted WAL)');
    const adapter = sqliteAdapter(open(copy), options, undefined);
    return {
      ...adapter,
      close: async () => {
        await adapter.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
}

function sqliteAdapter(db: Database.Database, options: SqliteOptions, checkpointer: WalCheckpointer | undefined, writer?: SqliteWriter): Adapter {
  const { path, logger, now, conversion } = options;

  const dialect = new (sqliteCore().SQLiteSyncDialect)();
  const statements = new Map<string, Database.Statement>();
  const prepare = (text: string): Database.Statement => {
    let stmt = statements.get(text);
    if (!stmt) {
      stmt = db.prepare(text);
      statements.set(text, stmt);
    }
    return stmt;
  };
  const exclusive = serial();
  const locks = new Set<Lock>();

  // The hot path: one prepared INSERT ... ON CONFLICT per sink, run once per row inside the caller's transaction.
  // better-sqlite3 binds and steps synchronously with no per-row parsing or allocation; the argument array is reused.
  // Each sink's statement text, built once, for this connection and the writer thread's.
  const insertTexts = new Map<SinkName, string>();
  const upsertText = (sink: SinkName): string => {
    let text = insertTexts.get(sink);
    if (!text) {
      text = insertText(sinkDef(sink, 'sqlite'));
      insertTexts.set(sink, text);
    }
    return text;
  };
  const upsertStatement = (sink: SinkName): Database.Statement => prepare(upsertText(sink));

  const keys = new KeyCache();
  /** Rows written by bulk transactions so far: the writer thread starts once they pass WRITER_AFTER_ROWS. */
  let bulkRows = 0;
  const executor = (scope: KeyScope): Executor => ({
    async all<T>(query: SQL): Promise<T[]> {
      const q = dialect.sqlToQuery(query);
      return prepare(q.sql).all(...(q.params as unknown[])) as T[];
    },
    async run(query: SQL): Promise<number> {
      const q = dialect.sqlToQuery(query);
      return prepare(q.sql).run(...(q.params as unknown[])).changes;
    },
    async upsert<S extends SinkName>(sink: S, page: PageContext, records: ReadonlyArray<SinkRecords[S]>) {
      if (records.length === 0) return;
      const def = sinkDef(sink, 'sqlite');
      const stmt = upsertStatement(sink);
      const prepared = def.prepare ? await def.prepare({ tx: this, keys: scope, page }, records) : undefined;
      const args = def.pageValues(page, prepared);
      const offset = args.length;
      for (let i = 0; i < records.length; i++) {
        def.fill(records[i]!, args, offset, i, prepared);
        stmt.run(args);
      }
    },
  });
  /** Statements of a transaction on the writer thread; an upsert's rows travel as one flat array. */
  const writerExecutor = (thread: SqliteWriter, scope: KeyScope): Executor => ({
    async all<T>(query: SQL): Promise<T[]> {
      const q = dialect.sqlToQuery(query);
      return thread.all<T>(q.sql, q.params);
    },
    async run(query: SQL): Promise<number> {
      const q = dialect.sqlToQuery(query);
      return thread.run(q.sql, q.params);
    },
    async upsert<S extends SinkName>(sink: S, page: PageContext, records: ReadonlyArray<SinkRecords[S]>) {
      if (records.length === 0) return;
      const def = sinkDef(sink, 'sqlite');
      const text = upsertText(sink);
      const prepared = def.prepare ? await def.prepare({ tx: this, keys: scope, page }, records) : undefined;
      const pageValues = def.pageValues(page, prepared);
      const width = pageValues.length + def.rowColumns.length;
      const values = new Array<unknown>(records.length * width);
      for (let i = 0, offset = 0; i < records.length; i++, offset += width) {
        for (let c = 0; c < pageValues.length; c++) values[offset + c] = pageValues[c];
        def.fill(records[i]!, values, offset + pageValues.length, i, prepared);
      }
      await thread.rows(text, width, values);
    },
  });

  /**
   * One write transaction on this connection; the caller holds the mutex. IMMEDIATE takes the write lock up front
   * (waiting up to busy_timeout for another process), so the transaction can never fail half-way with SQLITE_BUSY
   * when it first writes.
   */
  const mainTransaction = async <T>(fn: (tx: Executor) => Promise<T>): Promise<T> => {
    prepare('BEGIN IMMEDIATE').run();
    const scope = keys.scope();
    try {
      const result = await fn(executor(scope));
      prepare('COMMIT').run();
      scope.commit();
      checkpointer?.nudge();
      return result;
    } catch (error) {
      if (db.inTransaction) prepare('ROLLBACK').run();
      throw error;
    }
  };

  /** Outside a transaction every statement commits by itself, so keys learnt are committed at once. */
  const autocommit = (): Executor & { commit(): void } => {
    const scope = keys.scope();
    return Object.assign(executor(scope), { commit: () => scope.commit() });
  };

  return {
    dialect: 'sqlite',
    location: path,
    readonly: options.readonly === true,
    pending: () =>
      exclusive(() => {
        const migrations = loadMigrations('sqlite');
        const exists = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(MIGRATIONS_TABLE);
        const last = exists
          ? (db.prepare(`SELECT max(created_at) AS created_at FROM "${MIGRATIONS_TABLE}"`).get() as { created_at: number | null }).created_at
          : null;
        return pending(migrations, last === null ? undefined : Number(last)).map((m) => m.name);
      }),
    all: (query) => exclusive(() => autocommit().all(query)),
    run: (query) => exclusive(() => autocommit().run(query)),
    upsert: (sink, page, records) =>
      exclusive(async () => {
        const tx = autocommit();
        await tx.upsert(sink, page, records);
        tx.commit();
      }),

    transaction<T>(fn: (tx: Executor) => Promise<T>, options: { bulkRows?: number } = {}): Promise<T> {
      bulkRows += options.bulkRows ?? 0;
      if (writer && options.bulkRows !== undefined && bulkRows > WRITER_AFTER_ROWS) {
        return exclusive(async () => {
          const scope = keys.scope();
          await writer.run('BEGIN IMMEDIATE', []);
          try {
            const result = await fn(writerExecutor(writer, scope));
            await writer.run('COMMIT', []);
            scope.commit();
            checkpointer?.nudge();
            return result;
          } catch (error) {
            await writer.rollback().catch(() => undefined);
            throw error;
          }
        });
      }
      return exclusive(() => mainTransaction(fn));
    },

    migrate() {
      // drizzle's SQLite migrator reads the last applied migration before its (deferred) BEGIN, so two processes
      // starting at once could both apply the same migration. The same bookkeeping, under BEGIN IMMEDIATE, is atomic.
      // One migration per transaction; the occupancy conversion runs in its own committed batches before the
      // migration that needs it done (store/compact-occupancy.ts), so a stopped conversion resumes.
      const migrations = loadMigrations('sqlite');
      const nextPending = () =>
        db.transaction(() => {
          db.exec(`CREATE TABLE IF NOT EXISTS "${MIGRATIONS_TABLE}" (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)`);
          const last = db.prepare(`SELECT created_at FROM "${MIGRATIONS_TABLE}" ORDER BY created_at DESC LIMIT 1`).get() as
            | { created_at: number }
            | undefined;
          return pending(migrations, last === undefined ? undefined : Number(last.created_at))[0];
        }).immediate();
      return exclusive(async () => {
        const applied: string[] = [];
        for (let next = nextPending(); next; next = nextPending()) {
          const migration = next;
          if (migration.name === CONVERSION_DONE_MIGRATION) {
            await convertLegacyOccupancy(mainTransaction, 'sqlite', { logger, ...conversion });
          }
          const done = db.transaction(() => {
            // Another process may have applied it meanwhile.
            if (nextPending()?.name !== migration.name) return false;
            for (const statement of migration.sql) if (statement.trim()) db.exec(statement);
            db.prepare(`INSERT INTO "${MIGRATIONS_TABLE}" (hash, created_at) VALUES (?, ?)`).run(migration.hash, migration.folderMillis);
            return true;
          }).immediate();
          if (done) applied.push(migration.name);
        }
        return applied;
      });
    },

    async tryLock(customerId, stream) {
      const lock = await trySqliteLock(db, exclusive, customerId, stream, now, logger);
      if (!lock) return undefined;
      locks.add(lock);
      return {
        release: async () => {
          locks.delete(lock);
          await lock.release();
        },
      };
    },

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
      });
    },
  };
}

/** A sink's upsert: one `?` per page and row value, in order. */
function insertText<R>(def: SinkDef<R>): string {
  const bound = [...def.pageColumns, ...def.rowColumns].map((c) => c.name);
  const columns = def.insertColumns ? def.insertColumns(bound) : bound;
  const placeholders = bound.map(() => '?');
  const values = def.insertValues ? def.insertValues(placeholders) : placeholders;
  return `INSERT INTO ${def.writeTable} (${columns.join(', ')}) VALUES (${values.join(', ')}) ${def.onConflict}`;
}

function toSqliteValue(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'boolean') return value ? 1 : 0;
  return value;
}
