import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import { openStore } from '../store/index.ts';
import type { Store } from '../store/types.ts';

/**
 * How commands open the database. Commands that write migrate it first (safe from several processes at once); read-only
 * commands open it read-only and refuse a schema this version cannot read, naming the fix, instead of migrating it.
 * `signal` is the command's SIGTERM/SIGINT: what waits on the database then is cancelled (openStore).
 */
export async function openForWriting(database: Config['database'], logger?: Logger, signal?: AbortSignal, migrationSignal?: AbortSignal): Promise<Store> {
  const store = await openStore(database, { ...(logger && { logger }), ...(signal && { signal }) });
  try {
    await store.migrate(migrationSignal ? { signal: migrationSignal } : {});
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
  return store;
}

export async function openForReading(database: Config['database'], logger?: Logger, signal?: AbortSignal): Promise<Store> {
  const store = await openStore(database, { readonly: true, ...(logger && { logger }), ...(signal && { signal }) });
  try {
    await store.requireCurrentSchema();
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
  return store;
}
