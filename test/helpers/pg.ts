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
  // The creation time in the name lets the global setup drop only leftovers of killed runs, never a schema that a
  // concurrent run (another developer's vitest on this machine) is still using.
  const created = Math.floor(Date.now() / 1000);
  const schema = `${TEST_SCHEMA_PREFIX}${label.replace(/[^a-z0-9_]/gi, '_').toLowerCase().slice(0, 30)}_${created}_${randomBytes(4).toString('hex')}`;
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
        // The job queue of a `serve` on this dataset lives beside it (src/app/queue.ts queueSchema).
        await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE; DROP SCHEMA IF EXISTS "${schema}_queue" CASCADE`);
      } finally {
        await admin.end();
      }
    },
  };
}

/** Seconds since the epoch when a test schema was created, from its name; undefined for names of another form. */
export function testSchemaCreatedAt(schema: string): number | undefined {
  const match = /_(\d{10})_[0-9a-f]{8}(?:_queue)?$/.exec(schema);
  return match ? Number(match[1]) : undefined;
}
