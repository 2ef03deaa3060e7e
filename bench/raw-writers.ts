import Database from 'better-sqlite3';
import postgres from 'postgres';

/**
 * EVERY statement the replay benchmark's baselines run against the database lives in this module, and nowhere else.
 *
 * The storage layout is about to change: the `occupancy` table is becoming a view over compact tables. Whoever
 * changes the layout updates only this module (the upserts, the row count, the steady-state reset, the receiver's
 * storage floor), so the minimal clients, the storage ceiling, the end-to-end raw baselines (bench/sync-worker.ts)
 * and the receiver floor (bench/receiver-floor.ts) keep writing exactly what the store writes, in the same layout. The size
 * measurement (bench/storage-size.ts) is generic over whatever tables exist and needs no change.
 *
 * Both dialects write what the store writes for a polled reading: the reading's five fields plus customer_id,
 * source 'poll', ingested_at and polled_at (the page's time), one transaction per page.
 *
 * This file runs under tsx and under Node's own type stripping (the steady-state minimal client is a plain `node`
 * process): erasable TypeScript only.
 */

/** One reading as the API sends it (the occupancy query's node). */
export interface Reading {
  id: string;
  floorSpaceId: string;
  occupancyStatus: string;
  headcount: number;
  created: string;
}

export interface PageWriter {
  /** Writes one page in its own transaction; resolves after the COMMIT. */
  write(nodes: Reading[]): void | Promise<void>;
  close(): Promise<void>;
}

/** How the Postgres baselines write a page: one `INSERT ... SELECT FROM unnest(...)`, or one prepared INSERT per row. */
export type PgStyle = 'unnest' | 'rows';

export type Target = { dialect: 'sqlite'; path: string } | { dialect: 'postgres'; url: string; schema: string | undefined };

/** DATABASE_URL as the store reads it: file:<path>, or postgres://...?schema=NAME. */
export function target(databaseUrl: string): Target {
  if (databaseUrl.startsWith('file:')) return { dialect: 'sqlite', path: databaseUrl.slice('file:'.length) };
  const url = new URL(databaseUrl);
  const schema = url.searchParams.get('schema') ?? undefined;
  url.searchParams.delete('schema');
  return { dialect: 'postgres', url: url.toString(), schema };
}

const CONFLICT =
  'ON CONFLICT (customer_id, floor_space_id, observed_at) DO UPDATE SET ' +
  'occupancy_status = excluded.occupancy_status, headcount = excluded.headcount';

const SQLITE_UPSERT =
  'INSERT INTO occupancy (customer_id, source, ingested_at, polled_at, floor_space_id, observed_at, occupancy_status, headcount, event_id) ' +
  `VALUES (?, 'poll', ?, ?, ?, ?, ?, ?, ?) ${CONFLICT}`;

const PG_UNNEST =
  'INSERT INTO occupancy (customer_id, source, ingested_at, polled_at, floor_space_id, observed_at, occupancy_status, headcount, event_id) ' +
  "SELECT $1::text, 'poll', $2::timestamptz, $2::timestamptz, u.f, u.o, u.s, u.h, u.e " +
  'FROM unnest($3::text[], $4::timestamptz[], $5::text[], $6::int4[], $7::text[]) AS u(f, o, s, h, e) ' +
  CONFLICT;

const PG_ROW =
  'INSERT INTO occupancy (customer_id, source, ingested_at, polled_at, floor_space_id, observed_at, occupancy_status, headcount, event_id) ' +
  `VALUES ($1, 'poll', $2, $2, $3, $4, $5, $6, $7) ${CONFLICT}`;

/** A raw better-sqlite3 connection with the store's pragmas (src/store/sqlite.ts), so no side wins by configuration. */
export function openRawSqlite(path: string): Database.Database {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('cache_size = -32768');
  // The store's WAL threshold too. The store moves checkpoints to a worker thread (src/store/checkpointer.ts): that
  // is code, not a setting, so a baseline checkpoints on its own thread as a minimal script would.
  db.pragma('wal_autocheckpoint = 10000');
  return db;
}

/** Synchronous SQLite page writer: one prepared upsert, one transaction per page. */
export function sqliteWriter(path: string, customerId: string): PageWriter & { write(nodes: Reading[]): void } {
  const db = openRawSqlite(path);
  const upsert = db.prepare(SQLITE_UPSERT);
  const page = db.transaction((nodes: Reading[], at: string) => {
    for (const n of nodes) upsert.run(customerId, at, at, n.floorSpaceId, n.created, n.occupancyStatus, n.headcount, n.id);
  });
  return {
    write: (nodes) => page(nodes, new Date().toISOString()),
    close: async () => void db.close(),
  };
}

function pgClient(t: Extract<Target, { dialect: 'postgres' }>) {
  return postgres(t.url, {
    max: 1,
    onnotice: () => {},
    connection: { TimeZone: 'UTC', ...(t.schema ? { search_path: `"${t.schema}"` } : {}) },
  });
}

/** Postgres page writer (postgres.js, prepared statements, one transaction per page). */
export function postgresWriter(t: Extract<Target, { dialect: 'postgres' }>, customerId: string, style: PgStyle): PageWriter {
  const sql = pgClient(t);
  const write = async (nodes: Reading[]): Promise<void> => {
    const at = new Date().toISOString();
    if (style === 'unnest') {
      const params = [
        customerId,
        at,
        nodes.map((n) => n.floorSpaceId),
        nodes.map((n) => n.created),
        nodes.map((n) => n.occupancyStatus),
        nodes.map((n) => n.headcount),
        nodes.map((n) => n.id),
      ];
      await sql.begin((tx) => tx.unsafe(PG_UNNEST, params as never[], { prepare: true }));
    } else {
      // postgres.js pipelines the statements of a transaction that are issued without waiting for each other.
      await sql.begin((tx) =>
        nodes.map((n) => tx.unsafe(PG_ROW, [customerId, at, n.floorSpaceId, n.created, n.occupancyStatus, n.headcount, n.id] as never[], { prepare: true })),
      );
    }
  };
  return { write, close: () => sql.end({ timeout: 5 }) };
}

export function openWriter(databaseUrl: string, customerId: string, pgStyle: PgStyle = 'unnest'): PageWriter {
  const t = target(databaseUrl);
  return t.dialect === 'sqlite' ? sqliteWriter(t.path, customerId) : postgresWriter(t, customerId, pgStyle);
}

/** Readings stored: the check every run must pass before its figure counts. */
export async function countReadings(databaseUrl: string): Promise<number> {
  const t = target(databaseUrl);
  if (t.dialect === 'sqlite') {
    const db = new Database(t.path, { readonly: true });
    try {
      return (db.prepare('SELECT count(*) AS n FROM occupancy').get() as { n: number }).n;
    } finally {
      db.close();
    }
  }
  const sql = pgClient(t);
  try {
    const [row] = await sql.unsafe<{ n: string }[]>('SELECT count(*) AS n FROM occupancy');
    return Number(row!.n);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** Steady state, between repetitions (not timed): removes the readings of the window every repetition writes again. */
export async function deleteReadingsFrom(databaseUrl: string, customerId: string, fromIso: string): Promise<number> {
  const t = target(databaseUrl);
  if (t.dialect === 'sqlite') {
    const db = openRawSqlite(t.path);
    try {
      return db.prepare('DELETE FROM occupancy WHERE customer_id = ? AND observed_at >= ?').run(customerId, fromIso).changes;
    } finally {
      db.close();
    }
  }
  const sql = pgClient(t);
  try {
    const result = await sql.unsafe('DELETE FROM occupancy WHERE customer_id = $1 AND observed_at >= $2', [customerId, fromIso]);
    return result.count;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * The receiver's storage floor (bench/receiver-floor.ts): the delivery row with its body, and one occupancy upsert
 * per item, positional: upsert.run(customerId, source, receivedAt, floorSpaceId, observedAt, status, headcount,
 * eventId).
 */
export function receiverFloorStatements(db: Database.Database) {
  return {
    insertDelivery: db.prepare(
      'INSERT INTO webhook_deliveries (customer_id, id, type, created_at, sent_at, received_at, attempts, body) VALUES (?, ?, ?, ?, ?, ?, 1, ?) ' +
        'ON CONFLICT (customer_id, id) DO UPDATE SET attempts = webhook_deliveries.attempts + 1 RETURNING attempts',
    ),
    upsert: db.prepare(
      'INSERT INTO occupancy (customer_id, source, ingested_at, floor_space_id, observed_at, occupancy_status, headcount, event_id) ' +
        `VALUES (?, ?, ?, ?, ?, ?, ?, ?) ${CONFLICT}`,
    ),
    savepoint: db.prepare('SAVEPOINT delivery'),
    release: db.prepare('RELEASE SAVEPOINT delivery'),
  };
}
