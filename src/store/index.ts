import { systemClock, type Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import { ConfigError } from '../errors.ts';
import { silentLogger, type Logger } from '../logger.ts';
import { openPostgres } from './postgres.ts';
import { openSqlite } from './sqlite.ts';
import { SqlStore } from './store.ts';
import type { Store } from './types.ts';

export * from './types.ts';
export { canonicalTimestamp } from './timestamps.ts';

export interface OpenStoreOptions {
  logger?: Logger;
  clock?: Clock;
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
  if (database.dialect === 'sqlite') {
    if (!database.sqlitePath) throw new ConfigError(`DATABASE_URL: ${database.url} names no SQLite file; use file:./data/occupancy.db`);
    const adapter = openSqlite({ path: database.sqlitePath, logger, now: () => new Date(clock.now()).toISOString() });
    return new SqlStore(adapter, clock, logger.child({ component: 'store' }));
  }
  return new SqlStore(openPostgres({ url: database.url, logger: logger.child({ component: 'store' }) }), clock, logger.child({ component: 'store' }));
}
