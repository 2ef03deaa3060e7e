import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import { openStore } from '../store/index.ts';
import type { Store } from '../store/types.ts';

/**
 * How commands open the database. Commands that write migrate it first (safe from several processes at once); read-only
 * commands open it read-only and refuse a schema this version cannot read, naming the fix, instead of migrating it.
 */
export async function openForWriting(database: Config['database'], logger?: Logger): Promise<Store> {
  const store = await openStore(database, logger ? { logger } : {});
  try {
    await store.migrate();
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
  return store;
}

export async function openForReading(database: Config['database'], logger?: Logger): Promise<Store> {
  const store = await openStore(database, { readonly: true, ...(logger && { logger }) });
  try {
    await store.requireCurrentSchema();
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
  return store;
}
