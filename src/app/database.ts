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
  const store = await openStore(database, { ...(logger && { logger: migrationDetailAtDebug(logger) }), ...(signal && { signal }) });
  try {
    const applied = await store.migrate(migrationSignal ? { signal: migrationSignal } : {});
    // A new database is no news (the command's own output says what it did); an upgrade is, in one line.
    if (applied.length > 0 && !applied[0]!.startsWith('0000_')) {
      logger?.info({ applied }, `upgraded the database schema: applied ${applied.join(', ')}`);
    }
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
  return store;
}

/**
 * The store logs each migration step at info (the list of migrations, the views script). On a new database that was
 * two long lines before anything the user asked for, ahead of the one line that mattered (a wrong key: 2 KB for one
 * typo). Those lines, told by their fields (`applied`, `script`), go to debug; a wait for another process's
 * migration and everything else stays as it is.
 */
export function migrationDetailAtDebug(logger: Logger): Logger {
  const detail = (first: unknown) =>
    typeof first === 'object' && first !== null && (Array.isArray((first as { applied?: unknown }).applied) || typeof (first as { script?: unknown }).script === 'string');
  return new Proxy(logger, {
    get(object, property) {
      if (property === 'child') return (...args: unknown[]) => migrationDetailAtDebug((object.child as unknown as (...a: unknown[]) => Logger).apply(object, args));
      if (property === 'info') {
        return (first: unknown, ...rest: unknown[]) => ((detail(first) ? object.debug : object.info) as (...a: unknown[]) => void).call(object, first, ...rest);
      }
      const value: unknown = Reflect.get(object, property, object);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(object) : value;
    },
  });
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
