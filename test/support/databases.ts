import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import postgres from 'postgres';
import type { Clock } from '../../src/clock.ts';
import type { Config, Dialect } from '../../src/config.ts';
import { openStore } from '../../src/store/index.ts';
import type { Store } from '../../src/store/types.ts';
import { tempDir } from './tmp.ts';

/**
 * Fresh databases for tests and benchmarks, both dialects: a SQLite file in a private directory, or a Postgres schema
 * of its own (selected with `?schema=`, the store's convention), so files run in parallel against one database.
 */

export type { Dialect };
/** Every storage test runs for each of these. */
export const DIALECTS: Dialect[] = ['sqlite', 'postgres'];

/** The Postgres the suite runs against. CI and developers have it on 127.0.0.1:5432 (trust auth). */
export const PG_BASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export const START_POSTGRES = 'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start';

export const TEST_SCHEMA_PREFIX = 'ostest_';

export interface TestDatabase {
  dialect: Dialect;
  /** What openStore takes. */
  database: Config['database'];
  /** DATABASE_URL, for child processes and resolveConfig. */
  url: string;
  /** The Postgres schema; undefined for SQLite. */
  schema: string | undefined;
  /** The SQLite file and its private directory; undefined for Postgres. */
  path: string | undefined;
  dir: string | undefined;
  /** Drops the schema, or removes the SQLite directory. */
  drop(): Promise<void>;
}

export interface FreshOptions {
  /** Apply the migrations before returning (default false). */
  migrate?: boolean;
  /** The SQLite file inside the private directory (default `<label>.db`); it may name a directory not created yet. */
  file?: string;
  /** The Postgres server and database (default PG_BASE_URL). */
  baseUrl?: string;
  /**
   * The Postgres schema name's prefix (default TEST_SCHEMA_PREFIX, whose leftovers the suite's global setup drops);
   * the benchmarks use their own.
   */
  schemaPrefix?: string;
}

/** Why Postgres at `baseUrl` cannot be used, naming the command that starts it; undefined when it answers. */
export async function postgresProblem(baseUrl = PG_BASE_URL): Promise<string | undefined> {
  const sql = postgres(baseUrl, { max: 1, connect_timeout: 5, onnotice: () => {} });
  try {
    await sql`SELECT 1`;
    return undefined;
  } catch (error) {
    return isConnectionError(error) ? unreachable(baseUrl, error).message : `Postgres at ${hidePassword(baseUrl)} failed: ${(error as Error).message}`;
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

/** Throws, with the command that starts Postgres, when it is not reachable: a Postgres test fails, never skips. */
export async function requirePostgres(baseUrl = PG_BASE_URL): Promise<void> {
  const problem = await postgresProblem(baseUrl);
  if (problem) throw new Error(problem);
}

const hidePassword = (url: string) => url.replace(/:[^:@/]+@/, ':***@');

function unreachable(baseUrl: string, error: unknown): Error {
  return new Error(`Postgres is not reachable at ${hidePassword(baseUrl)} (${(error as Error).message}). Start it with: ${START_POSTGRES}`, { cause: error });
}

/** Runs `text` on an administrative connection of its own. */
async function adminQuery(text: string, baseUrl = PG_BASE_URL): Promise<void> {
  const sql = postgres(baseUrl, { max: 1, connect_timeout: 5, onnotice: () => {} });
  try {
    await sql.unsafe(text);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * A fresh, empty database for one test (or one measurement). Every test gets its own, so files can run in parallel.
 * A Postgres test fails here, with the command that starts Postgres, when it is down.
 */
export async function freshDatabase(dialect: Dialect, label: string, options: FreshOptions = {}): Promise<TestDatabase> {
  const db =
    dialect === 'sqlite'
      ? sqliteDatabase(label, options.file)
      : await postgresDatabase(label, options.baseUrl ?? PG_BASE_URL, options.schemaPrefix ?? TEST_SCHEMA_PREFIX);
  if (options.migrate) {
    try {
      const store = await openStore(db.database);
      await store.migrate().finally(() => store.close());
    } catch (error) {
      await db.drop();
      throw error;
    }
  }
  return db;
}

function sqliteDatabase(label: string, file = `${label}.db`): TestDatabase {
  const tmp = tempDir(`occupancy-sync-${label.replace(/[^a-z0-9_-]/gi, '_')}-`);
  const path = join(tmp.dir, file);
  const url = `file:${path}`;
  return { dialect: 'sqlite', database: { url, dialect: 'sqlite', sqlitePath: path }, url, schema: undefined, path, dir: tmp.dir, drop: async () => tmp.remove() };
}

async function postgresDatabase(label: string, baseUrl: string, prefix: string): Promise<TestDatabase> {
  // The creation time in the name lets the global setup drop only leftovers of killed runs, never a schema that a
  // concurrent run (another developer's vitest on this machine) is still using.
  const created = Math.floor(Date.now() / 1000);
  const schema = `${prefix}${label.replace(/[^a-z0-9_]/gi, '_').toLowerCase().slice(0, 30)}_${created}_${randomBytes(4).toString('hex')}`;
  try {
    await adminQuery(`CREATE SCHEMA "${schema}"`, baseUrl);
  } catch (error) {
    throw isConnectionError(error) ? unreachable(baseUrl, error) : error;
  }
  const url = `${baseUrl}${baseUrl.includes('?') ? '&' : '?'}schema=${schema}`;
  return {
    dialect: 'postgres',
    database: { url, dialect: 'postgres', sqlitePath: undefined },
    url,
    schema,
    path: undefined,
    dir: undefined,
    // The job queue of a `serve` on this dataset lives beside it (src/app/queue.ts queueSchema).
    drop: () => adminQuery(`DROP SCHEMA IF EXISTS "${schema}" CASCADE; DROP SCHEMA IF EXISTS "${schema}_queue" CASCADE`, baseUrl),
  };
}

/** The server could not be reached or would not take connections (as opposed to a failing statement). */
function isConnectionError(error: unknown): boolean {
  const code = String((error as { code?: unknown }).code ?? '');
  return /^(ECONNREFUSED|ECONNRESET|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|CONNECT_TIMEOUT|CONNECTION_\w+|57P03)$/.test(code);
}

/** Opens a store on `db` and applies the migrations; the caller closes it. */
export async function openTestStore(db: Pick<TestDatabase, 'database'>, options: { clock?: Clock; deliveryRefreshMs?: number } = {}): Promise<Store> {
  const store = await openStore(db.database, options);
  try {
    await store.migrate();
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
  return store;
}

/** A fresh database with a migrated store on it; `drop()` closes the store and drops the database. */
export async function migratedStore(dialect: Dialect, label: string, options: Omit<FreshOptions, 'migrate'> & { clock?: Clock } = {}): Promise<TestDatabase & { store: Store }> {
  const db = await freshDatabase(dialect, label, options);
  let store: Store;
  try {
    store = await openTestStore(db, { clock: options.clock });
  } catch (error) {
    await db.drop();
    throw error;
  }
  return {
    ...db,
    store,
    async drop() {
      await store.close().catch(() => {});
      await db.drop();
    },
  };
}

/** Seconds since the epoch when a test schema was created, from its name; undefined for names of another form. */
export function testSchemaCreatedAt(schema: string): number | undefined {
  const match = /_(\d{10})_[0-9a-f]{8}(?:_queue)?$/.exec(schema);
  return match ? Number(match[1]) : undefined;
}
