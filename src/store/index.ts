import { systemClock, type Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import { ConfigError } from '../errors.ts';
import { silentLogger, type Logger } from '../logger.ts';
import { SqlStore } from './store.ts';
import type { Store } from './types.ts';

export * from './types.ts';
export { canonicalTimestamp } from './timestamps.ts';

export interface OpenStoreOptions {
  logger?: Logger;
  clock?: Clock;
  /**
   * Read only: nothing is created, migrated or written (SQLite opens the file read-only; Postgres sessions refuse
   * writes). For status, report and state show, which must work on a read-only file or replica.
   */
  readonly?: boolean;
  /** The occupancy conversion's batch size and a hook after each batch (tests stop a conversion half-way with it). */
  // Written out (not ConversionOptions): the package's public types must not reach the adapter's drizzle types.
  conversion?: { batch?: number; onBatch?(moved: number, total: number): void };
  /**
   * How long migrate() waits for a migration another process is running before it gives up with a DatabaseBusyError
   * (the CLI exits 75). Default 10 minutes: a large database's occupancy conversion takes minutes.
   */
  migrationWaitMs?: number;
  /**
   * Aborting it (SIGTERM) cancels what waits on the database at that moment: Postgres cancels the statements in flight
   * (their transaction rolls back), a wait for another process's migration ends. The store stays usable afterwards,
   * to record how the run ended.
   */
  signal?: AbortSignal;
  /**
   * Keep the time-weighted aggregates with every commit of readings (default). Off only to measure what keeping them
   * costs (bench/): the aggregates then fall behind the readings until `aggregates rebuild`.
   */
  maintainAggregates?: boolean;
  /**
   * How long after a webhook delivery commits readings the store refreshes their aggregates (default
   * DELIVERY_REFRESH_MS, a second); `close()` refreshes what is due whatever this is.
   */
  deliveryRefreshMs?: number;
}

/**
 * Opens the database named by `config.database`: SQLite (better-sqlite3, WAL) for `file:` URLs, Postgres
 * (postgres.js) for `postgres://` URLs, optionally with `?schema=NAME`. Does not migrate: call `store.migrate()`.
 *
 * @example
 * const store = await openStore(config.database, { logger });
 * await store.migrate();
 * try { ... } finally { await store.close(); }
 */
export async function openStore(database: Config['database'], options: OpenStoreOptions = {}): Promise<Store> {
  const logger = options.logger ?? silentLogger;
  const clock = options.clock ?? systemClock;
  const storeLogger = logger.child({ component: 'store' });
  const migrator = {
    ...(options.conversion && { conversion: options.conversion }),
    ...(options.migrationWaitMs !== undefined && { lockWaitMs: options.migrationWaitMs }),
    ...(options.signal && { signal: options.signal }),
  };
  if (database.dialect === 'sqlite') {
    if (!database.sqlitePath) throw new ConfigError(`DATABASE_URL: ${database.url} names no SQLite file; use file:./data/occupancy.db`);
    // Each room's driver (and its drizzle dialect) loads only when that dialect is opened.
    const { openSqlite } = await import('./sqlite/adapter.ts');
    const adapter = openSqlite({ path: database.sqlitePath, logger, now: () => new Date(clock.now()).toISOString(), readonly: options.readonly });
    return new SqlStore(adapter, clock, storeLogger, migrator, aggregateOptions(options));
  }
  const { openPostgres } = await import('./postgres/adapter.ts');
  const adapter = openPostgres({ url: database.url, logger: storeLogger, readonly: options.readonly, timeouts: database.timeouts, signal: options.signal });
  return new SqlStore(adapter, clock, storeLogger, migrator, aggregateOptions(options));
}

function aggregateOptions(options: OpenStoreOptions): { maintainAggregates: boolean; deliveryRefreshMs?: number } {
  return { maintainAggregates: options.maintainAggregates !== false, ...(options.deliveryRefreshMs !== undefined && { deliveryRefreshMs: options.deliveryRefreshMs }) };
}
