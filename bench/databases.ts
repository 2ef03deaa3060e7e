import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { openStore } from '../src/store/index.ts';
import type { Config } from '../src/config.ts';

/**
 * Fresh, migrated, empty databases for each measurement: a new SQLite file, or a new Postgres schema selected with
 * `?schema=` (the store's convention). Both sides of a comparison get the same table, created by the real migrations.
 */

export const PG_URL = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** Not `ostest_`: the test suite's global setup drops those when any vitest run starts. */
const SCHEMA_PREFIX = 'osbench_';

export interface BenchDatabase {
  url: string;
  database: Config['database'];
  drop(): Promise<void>;
}

export type DialectName = 'sqlite' | 'postgres';

export async function freshDatabase(dialect: DialectName, label: string): Promise<BenchDatabase> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'occupancy-bench-'));
    const path = join(dir, `${label}.db`);
    const db: BenchDatabase = {
      url: `file:${path}`,
      database: { url: `file:${path}`, dialect: 'sqlite', sqlitePath: path },
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
    await migrate(db);
    return db;
  }
  const schema = `${SCHEMA_PREFIX}${label.replace(/\W/g, '_')}_${randomBytes(4).toString('hex')}`;
  const url = `${PG_URL}?schema=${schema}`;
  const db: BenchDatabase = {
    url,
    database: { url, dialect: 'postgres', sqlitePath: undefined },
    drop: () => adminQuery(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`),
  };
  await adminQuery(`CREATE SCHEMA "${schema}"`);
  await migrate(db);
  return db;
}

async function migrate(db: BenchDatabase): Promise<void> {
  const store = await openStore(db.database);
  try {
    await store.migrate();
  } finally {
    await store.close();
  }
}

async function adminQuery(text: string): Promise<void> {
  const sql = postgres(PG_URL, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(text);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** Fails early, with the fix, when the Postgres benchmarks cannot run. */
export async function checkPostgres(): Promise<string | undefined> {
  const sql = postgres(PG_URL, { max: 1, onnotice: () => {}, connect_timeout: 3 });
  try {
    await sql`SELECT 1`;
    return undefined;
  } catch (error) {
    return `Postgres at ${PG_URL.replace(/:[^:@/]+@/, ':***@')} is not reachable (${(error as Error).message}); set BENCH_DATABASE_URL`;
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}
