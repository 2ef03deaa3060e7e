import type { SQL } from 'drizzle-orm';
import type { Dialect } from '../config.ts';
import type { PageContext } from './sinks.ts';
import type { Lock, SinkName, SinkRecords } from './types.ts';

/**
 * What the dialect-neutral store (store.ts) needs from a database: run portable drizzle `sql` statements, run the
 * sink upserts, open transactions, lock, migrate. sqlite.ts and postgres.ts implement it; nothing else differs.
 */
export interface Executor {
  /** Rows of a query. Timestamps come back canonical (ISO UTC with ms) on both dialects. */
  all<T = Record<string, unknown>>(query: SQL): Promise<T[]>;
  /** Runs a statement; resolves to the number of rows it inserted, updated or deleted. */
  run(query: SQL): Promise<number>;
  /** Upserts one page of records with the sink's prepared statement. */
  upsert<S extends SinkName>(sink: S, page: PageContext, records: ReadonlyArray<SinkRecords[S]>): Promise<void>;
}

export interface Adapter extends Executor {
  readonly dialect: Dialect;
  /** Where the data is, for messages: the SQLite path or the Postgres URL without its password. */
  readonly location: string;
  /** Opened for reading only: writes and migrate() are refused by the database itself. */
  readonly readonly: boolean;
  /** Names of the committed migrations this database has not applied yet (read-only). */
  pending(): Promise<string[]>;
  /**
   * Runs `fn` in one write transaction; commits when it resolves, rolls back when it throws. `bulkRows`: the rows of
   * a page of a sync, which SQLite writes on its writer thread, while the main thread prepares the next page, once
   * the process has written enough of them to repay the thread's start (sqlite-writer.ts); small transactions
   * (webhook deliveries, state) stay on the main connection, where a statement costs no message.
   */
  transaction<T>(fn: (tx: Executor) => Promise<T>, options?: { bulkRows?: number }): Promise<T>;
  /** Applies pending migrations under a cross-process lock; resolves to the names of those it applied. */
  migrate(): Promise<string[]>;
  tryLock(customerId: string, stream: string): Promise<Lock | undefined>;
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
