import postgres from 'postgres';
import { fetchAllPages } from './baseline-fetch.ts';
import { OCCUPANCY_UPSERT_CONFLICT, type SyncJob } from './sync-job.ts';

/**
 * Raw Postgres baseline: postgres.js, one `INSERT ... SELECT FROM unnest(...) ON CONFLICT DO UPDATE` per page in
 * its own transaction, prepared, into the schema the migrations created.
 */
export async function rawPostgres(job: SyncJob): Promise<void> {
  const url = new URL(job.databaseUrl);
  const schema = url.searchParams.get('schema');
  url.searchParams.delete('schema');
  const sql = postgres(url.toString(), {
    max: 1,
    onnotice: () => {},
    connection: { TimeZone: 'UTC', ...(schema ? { search_path: `"${schema}"` } : {}) },
  });
  const text =
    'INSERT INTO occupancy (customer_id, source, ingested_at, floor_space_id, observed_at, occupancy_status, headcount, event_id) ' +
    "SELECT $1::text, 'poll', $2::timestamptz, u.f, u.o, u.s, u.h, u.e " +
    'FROM unnest($3::text[], $4::timestamptz[], $5::text[], $6::int4[], $7::text[]) AS u(f, o, s, h, e) ' +
    OCCUPANCY_UPSERT_CONFLICT;
  try {
    await fetchAllPages(job, async (nodes) => {
      const params = [
        job.sandbox.customerId,
        new Date().toISOString(),
        nodes.map((n) => n.floorSpaceId),
        nodes.map((n) => n.created),
        nodes.map((n) => n.occupancyStatus),
        nodes.map((n) => n.headcount),
        nodes.map((n) => n.id),
      ];
      await sql.begin((tx) => tx.unsafe(text, params as never[], { prepare: true }));
    });
  } finally {
    await sql.end({ timeout: 5 });
  }
}
