import type { SQL } from 'drizzle-orm';
import type { Dialect } from '../config.ts';
import type { CompatibilityFlags } from './compatibility.ts';
import type { IsoUtc, Lock, OccupancySource, SinkName, SinkRecords, TableRecord } from './types.ts';

/**
 * What the dialect-neutral core (store.ts, migrator.ts) needs from a database: run portable drizzle `sql` statements
 * and scripts, run the sink upserts, open transactions, lock. The rooms implement it (sqlite/adapter.ts,
 * postgres/adapter.ts); what differs beyond driving the database is data (compatibility.ts).
 */
export interface Executor {
  /** The dialect its statements run on: lists are bound as one value each dialect's way (key-list.ts). */
  readonly dialect: Dialect;
  /**
   * Rows of a query. Timestamps come back canonical (ISO UTC with ms) on both dialects. `doing` says what it is for
   * in the line a long wait logs (default: reading).
   */
  all<T = Record<string, unknown>>(query: SQL, doing?: string): Promise<T[]>;
  /** Runs a statement; resolves to the number of rows it inserted, updated or deleted (`doing`: default writing). */
  run(query: SQL, doing?: string): Promise<number>;
  /**
   * Runs a statement of a transaction whose outcome only the commit needs: `check` gets the rows it changed and may
   * throw to fail the transaction. Where a transaction's statements can be sent ahead of their answers (SQLite's
   * writer thread, a Postgres connection) it is sent at once, and its outcome and check are awaited before COMMIT in
   * the order sent, so a failure is reported as the statement that failed; elsewhere it runs as `run` does.
   */
  runAhead(query: SQL, check?: (changed: number) => void | Promise<void>): Promise<void>;
  /** Runs one statement as written (migrations, views, the planner statistics' ANALYZE): no parameters, nothing cached. */
  exec(statement: string): Promise<void>;
  /**
   * Runs one fixed statement for many rows, `width` values each, flat in `values` (no statement text per row or
   * page): SQLite runs `text` (one row of `?`) once per row; Postgres sends `text` once with one array per column
   * (`$1::int4[]`... read back into rows with unnest). The caller writes each dialect's text.
   */
  bulk(text: string, width: number, values: readonly unknown[]): Promise<void>;
  /** Upserts one page of records with the sink's prepared statement (a declared table's sink is given as its SinkDef). */
  upsert(sink: SinkName | DeclaredSink, page: PageContext, records: ReadonlyArray<SinkRecords[SinkName] | TableRecord>): Promise<Upserted>;
}

/** What an upsert learnt that the page's other statements use: the floor space keys its records name (readings). */
export interface Upserted {
  floorSpaceKeys?: ReadonlyMap<string, number>;
  /** Per floor space key, the first and last instant (canonical text) of the page's readings. */
  readingSpans?: ReadonlyMap<number, readonly [string, string]>;
}

/**
 * A declared table's sink (a SinkDef of sink-def.ts, made by declared-table-sink.ts), as the Executor takes it: named
 * by its shape here so that this file and sink-def.ts, which takes the Executor, do not import each other.
 */
export interface DeclaredSink {
  readonly table: string;
  readonly writeTable: string;
  readonly rowFields: readonly string[];
  fill(record: TableRecord, out: unknown[], offset: number, index: number, prepared: undefined): void;
}

/** Values shared by every row of a page. */
export interface PageContext {
  customerId: string;
  at: IsoUtc;
  source: OccupancySource;
}

export interface TransactionOptions {
  /**
   * The rows of a page of a sync. SQLite writes them on its writer thread, while the main thread prepares the next
   * page, once the process has written enough of them to repay the thread's start (sqlite/writer.ts).
   */
  bulkRows?: number;
  /**
   * A small unit of work independent of others (a webhook delivery) that may share one commit with the units
   * submitted at the same moment; it is answered only after that commit. SQLite groups them (sqlite/group-commit.ts),
   * as its writes queue for one lock anyway; Postgres commits each on its own, in parallel over the pool.
   */
  shareCommit?: boolean;
}

/** Where the migrations' bookkeeping lives in this database, as SQL names (quoted, qualified as needed). */
export interface Bookkeeping {
  /** drizzle's table of applied migrations. */
  migrations: string;
  /** The checksums of the repeatable scripts (db/views) as last applied. */
  repeatable: string;
  /** The steps applied to declared tables (docs/tables.md), each with its checksum and the table's shape after it. */
  declared: string;
  /** Statements that make the place for them, run once the migration lock is held (Postgres: the schemas). */
  setup: readonly string[];
  /**
   * Taken first in each migration step's transaction, so steps of processes whose migration lock was lost never
   * interleave. Undefined where every write transaction is already one at a time (SQLite's BEGIN IMMEDIATE).
   */
  stepLock: string | undefined;
}

/** One attempt at a lock: the lock, or who holds it, for the line that says what is being waited for. */
export type LockAttempt = { lock: Lock } | { holder: string };

/** An adapter runs statements outside a transaction too; bulk writes happen only inside one. */
export interface Adapter extends Omit<Executor, 'bulk'> {
  readonly dialect: Dialect;
  readonly flags: CompatibilityFlags;
  /** Where the data is, for messages: the SQLite path or the Postgres URL without its password. */
  readonly location: string;
  /** Opened for reading only: writes and migrations are refused by the database itself. */
  readonly readonly: boolean;
  readonly bookkeeping: Bookkeeping;
  /** Runs `fn` in one write transaction; commits when it resolves, rolls back when it throws. */
  transaction<T>(fn: (tx: Executor) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /** One attempt at the cross-process lock that one migrating process holds (it dies with the process). */
  tryMigrationLock(): Promise<LockAttempt>;
  tryLock(customerId: string, stream: string): Promise<Lock | undefined>;
  /** Whether some live process holds the run lock of (customer, stream): read only, for telling runs left behind. */
  runLockHeld(customerId: string, stream: string): Promise<boolean>;
  /**
   * Why pages of this customer must not be committed any more (a lock this store took for them was lost with its
   * database session, so another run may hold it), or undefined. Synchronous and cheap: checked before every page.
   */
  lockLost(customerId: string): string | undefined;
  /** Raw SQL with $1.. placeholders. */
  query<T = Record<string, unknown>>(text: string, params: readonly unknown[], options?: QueryOptions): Promise<T[]>;
  close(): Promise<void>;
}

export interface QueryOptions {
  /**
   * Postgres: the query is cancelled on the server after this long and the call fails (StoreError). SQLite runs a
   * query synchronously on this thread, so nothing runs on after the caller stops waiting; its busy timeout bounds
   * the wait for a lock.
   */
  timeoutMs?: number;
}
