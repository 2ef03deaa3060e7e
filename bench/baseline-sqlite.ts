import Database from 'better-sqlite3';
import { fetchAllPages, type RawNode } from './baseline-fetch.ts';
import { OCCUPANCY_UPSERT_CONFLICT, type SyncJob } from './sync-job.ts';

/**
 * Raw SQLite baseline: one better-sqlite3 prepared upsert, one transaction per page, the store's pragmas (WAL,
 * synchronous NORMAL, the same 32 MiB page cache and WAL checkpoint threshold), into the table the migrations
 * created. The baseline gets every setting the store uses, so the ratio measures our code, not a configuration
 * advantage.
 */
export async function rawSqlite(job: SyncJob, path: string): Promise<void> {
  const db = openRawSqlite(path);
  const upsert = prepareRawUpsert(db);
  const customerId = job.sandbox.customerId;
  const writePage = db.transaction((nodes: RawNode[], at: string) => {
    for (const n of nodes) upsert.run(customerId, 'poll', at, n.floorSpaceId, n.created, n.occupancyStatus, n.headcount, n.id);
  });
  try {
    await fetchAllPages(job, (nodes) => writePage(nodes, new Date().toISOString()));
  } finally {
    db.close();
  }
}

/** A raw better-sqlite3 connection with the store's pragmas, for the baselines. */
export function openRawSqlite(path: string): Database.Database {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('cache_size = -32768');
  // The store's WAL threshold too. The store also moves checkpoints to a worker thread (src/store/checkpointer.ts):
  // that is code, not a setting, so a baseline checkpoints on its one thread as a minimal script would.
  db.pragma('wal_autocheckpoint = 10000');
  return db;
}

/**
 * The baselines' one occupancy upsert, positional: (customer_id, source, ingested_at, floor_space_id, observed_at,
 * occupancy_status, headcount, event_id).
 */
export function prepareRawUpsert(db: Database.Database): Database.Statement {
  return db.prepare(
    'INSERT INTO occupancy (customer_id, source, ingested_at, floor_space_id, observed_at, occupancy_status, headcount, event_id) ' +
      `VALUES (?, ?, ?, ?, ?, ?, ?, ?) ${OCCUPANCY_UPSERT_CONFLICT}`,
  );
}
