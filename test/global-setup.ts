import postgres from 'postgres';
import { PG_BASE_URL, START_POSTGRES, TEST_SCHEMA_PREFIX, testSchemaCreatedAt } from './support/databases.ts';

const LEFTOVER_AGE_S = 3600;

/**
 * Drops the leftover schemas of earlier killed runs (over an hour old). Postgres being down does not stop the run:
 * files of pure unit tests need no database, and every Postgres test fails on its own, with the command that
 * starts Postgres (test/support/databases.ts); none is ever skipped.
 */
export default async function setup(): Promise<void> {
  const sql = postgres(PG_BASE_URL, { max: 1, connect_timeout: 5, onnotice: () => {} });
  try {
    const rows = await sql<{ nspname: string }[]>`
      SELECT nspname FROM pg_namespace WHERE nspname LIKE ${TEST_SCHEMA_PREFIX + '%'}`;
    const cutoff = Date.now() / 1000 - LEFTOVER_AGE_S;
    for (const { nspname } of rows) {
      const created = testSchemaCreatedAt(nspname);
      if (created === undefined || created < cutoff) await sql.unsafe(`DROP SCHEMA IF EXISTS "${nspname}" CASCADE`);
    }
  } catch (error) {
    process.stderr.write(
      `Postgres is not reachable at ${PG_BASE_URL} (${(error as Error).message}): the Postgres tests will fail. ` +
        `Start it with: ${START_POSTGRES}\n`,
    );
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}
