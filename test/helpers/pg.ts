import postgres from 'postgres';
import { randomBytes } from 'node:crypto';

/** The Postgres the suite runs against. CI and developers have it on 127.0.0.1:5432 (trust auth). */
export const PG_BASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export const TEST_SCHEMA_PREFIX = 'ostest_';

/**
 * A fresh, empty schema for one test. Returns a DATABASE_URL that selects it (`?schema=`) and a drop function.
 * Every test gets its own schema so files can run in parallel against one database.
 */
export async function freshPgSchema(label = 't'): Promise<{ url: string; schema: string; drop(): Promise<void> }> {
  const schema = `${TEST_SCHEMA_PREFIX}${label.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${randomBytes(4).toString('hex')}`;
  const sql = postgres(PG_BASE_URL, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(`CREATE SCHEMA "${schema}"`);
  } finally {
    await sql.end();
  }
  return {
    url: `${PG_BASE_URL}?schema=${schema}`,
    schema,
    async drop() {
      const admin = postgres(PG_BASE_URL, { max: 1, onnotice: () => {} });
      try {
        await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await admin.end();
      }
    },
  };
}
