import type Database from 'better-sqlite3';
import type { SQL } from 'drizzle-orm';
import { sqliteCore } from '../../../db/schema/drizzle.ts';
import type { Executor, TransactionOptions } from '../adapter.ts';
import { KeyCache } from '../key-cache.ts';
import { SentAhead } from '../sent-ahead.ts';
import type { serial } from '../serial.ts';
import type { Connection } from './connection.ts';
import { sqliteExecutor, type Runner } from './executor.ts';
import { GroupCommit } from './group-commit.ts';
import type { SqliteWriter } from './writer.ts';

/**
 * Bulk rows a process writes on the main connection before its pages move to the writer thread. Starting the thread
 * (an isolate and a connection) costs more than it saves on a run of a few pages, such as a cron sync's lookback.
 */
const WRITER_AFTER_ROWS = 2_000;

type Work<T> = (tx: Executor) => Promise<T>;

/**
 * Where each unit of work runs, under the connection's mutex (`exclusive`): alone on the main connection, in a shared
 * commit (group-commit.ts), on the writer thread once bulk pages pass WRITER_AFTER_ROWS, or outside a transaction.
 * Keys learnt in a transaction are kept only once it committed (key-cache.ts).
 */
export class SqliteTransactions {
  readonly #dialect = new (sqliteCore().SQLiteSyncDialect)();
  readonly #keys = new KeyCache();
  readonly #main: Runner;
  readonly #group: GroupCommit;
  /** Rows written by bulk transactions so far: the writer thread starts once they pass WRITER_AFTER_ROWS. */
  #bulkRows = 0;

  constructor(
    private readonly connection: Connection,
    private readonly exclusive: ReturnType<typeof serial>,
  ) {
    this.#main = mainRunner(connection.db);
    this.#group = new GroupCommit({ transaction: (fn) => this.onMain(fn) });
  }

  transaction<T>(fn: Work<T>, options: TransactionOptions = {}): Promise<T> {
    if (options.shareCommit) return this.#group.submit(fn);
    this.#bulkRows += options.bulkRows ?? 0;
    const { writer } = this.connection;
    if (writer && options.bulkRows !== undefined && this.#bulkRows > WRITER_AFTER_ROWS) return this.onWriter(writer, fn);
    return this.onMain(fn);
  }

  /** Outside a transaction every statement commits by itself, so keys learnt are committed at once. */
  autocommit<T>(fn: Work<T>): Promise<T> {
    return this.exclusive(async () => {
      const scope = this.#keys.scope();
      const result = await fn(sqliteExecutor(this.#main, this.compile, scope));
      scope.commit();
      return result;
    });
  }

  private readonly compile = (query: SQL) => this.#dialect.sqlToQuery(query);

  private onMain<T>(fn: Work<T>): Promise<T> {
    const { db } = this.connection;
    return this.exclusive(() => this.transactionOn(this.#main, () => db.inTransaction && db.exec('ROLLBACK'), fn));
  }

  private onWriter<T>(thread: SqliteWriter, fn: Work<T>): Promise<T> {
    return this.exclusive(() => this.transactionOn(writerRunner(thread), () => thread.rollback().catch(() => undefined), fn));
  }

  /**
   * One write transaction on `runner`'s connection; the caller holds the mutex. IMMEDIATE takes the write lock up
   * front (waiting up to busy_timeout for another process), so the transaction can never fail half-way with
   * SQLITE_BUSY when it first writes.
   *
   * The writer thread runs a transaction's statements in the order they were sent and refuses every one after a
   * failure until the rollback (writer.ts), so BEGIN and the rows of an upsert are sent without waiting for their
   * answer: the thread goes on to the next statement while the main thread reads and checks the next page. Each one's
   * outcome is awaited before COMMIT, and a failure is reported as the statement that failed, not as a later one.
   */
  private async transactionOn<T>(runner: Runner & Partial<Pipelined>, rollback: () => unknown, fn: Work<T>): Promise<T> {
    if (runner.send) runner.send(Promise.resolve(runner.run('BEGIN IMMEDIATE', [])));
    else await runner.run('BEGIN IMMEDIATE', []);
    const scope = this.#keys.scope();
    try {
      const result = await fn(sqliteExecutor(runner, this.compile, scope));
      await runner.settle?.();
      await runner.run('COMMIT', []);
      scope.commit();
      this.connection.checkpointer?.nudge();
      return result;
    } catch (error) {
      const first = runner.settle ? await runner.settle().then(() => error, (earlier: unknown) => earlier) : error;
      await rollback();
      throw first;
    }
  }
}

/** A runner whose statements may be sent ahead of their answers (the writer thread's). */
interface Pipelined {
  /** Keeps a statement's outcome for settle. */
  send(outcome: Promise<unknown>): void;
  /** Waits for every statement sent; rejects with the first that failed. */
  settle(): Promise<void>;
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
    rows(text, width, values, lead = []) {
      const stmt = prepare(text);
      const args = [...lead, ...new Array<unknown>(width)];
      const at = lead.length;
      for (let offset = 0; offset < values.length; offset += width) {
        for (let c = 0; c < width; c++) args[at + c] = values[offset + c];
        // Spread, as on the writer thread (writer.ts): an array argument is read element by element through N-API.
        stmt.run(...args);
      }
    },
  };
}

/** The writer thread's connection for one transaction: each call is one message; the rows of an upsert are sent ahead. */
function writerRunner(thread: SqliteWriter): Runner & Pipelined {
  const ahead = new SentAhead();
  const send = (outcome: Promise<unknown>) => ahead.send(outcome);
  return {
    all: (text, params) => thread.all(text, params),
    run: (text, params) => thread.run(text, params),
    exec: async (text) => void (await thread.run(text, [])),
    rows: (text, width, values, lead) => send(thread.rows(text, width, values, lead)),
    send,
    settle: () => ahead.settle(),
  };
}
