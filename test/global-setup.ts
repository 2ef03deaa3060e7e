import postgres from 'postgres';
import { PG_BASE_URL, TEST_SCHEMA_PREFIX, testSchemaCreatedAt } from './helpers/pg.ts';

const LEFTOVER_AGE_S = 3600;

/**
 * The Postgres tests are part of the suite, never skipped: if Postgres is not reachable the whole run fails here
 * with the command that starts it. Leftover schemas of earlier killed runs (over an hour old) are dropped.
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
    throw new Error(
      `Postgres is not reachable at ${PG_BASE_URL} (${(error as Error).message}). ` +
        'Start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start',
      { cause: error },
    );
  } finally {
    await sql.end();
  }
}
