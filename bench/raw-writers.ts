import Database from 'better-sqlite3';
import postgres from 'postgres';

/**
 * EVERY statement the replay benchmark's baselines run against the database lives in this module, and nowhere else.
 *
 * They write the compact layout the store writes (db/schema/pg.ts: floor spaces and statuses as dictionary keys, one
 * arrival row per page, one narrow row per reading; SQLite keeps the time as integer milliseconds and UUID event ids
 * as 16 bytes), the cheapest correct way: dictionary keys in a Map (a miss inserts and reads the key back), one
 * prepared upsert per row (SQLite) or one unnest statement per page (Postgres), one transaction per page. Whoever
 * changes the layout updates only this module; the size measurement (bench/storage-size.ts) is generic over
 * whatever tables exist.
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

const LOWER_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const SQLITE_UPSERT =
  'INSERT INTO occupancy_readings (floor_space_key, observed_ms, status_code, headcount, polled_arrival, event_id) VALUES (?, ?, ?, ?, ?, ?) ' +
  'ON CONFLICT (floor_space_key, observed_ms) DO UPDATE SET status_code = excluded.status_code, headcount = excluded.headcount';

const PG_CONFLICT = 'ON CONFLICT (floor_space_key, observed_at) DO UPDATE SET status_code = excluded.status_code, headcount = excluded.headcount';

const PG_UNNEST =
  'INSERT INTO occupancy_readings (polled_arrival, floor_space_key, observed_at, status_code, headcount, event_uuid, event_text) ' +
  'SELECT $1::int4, u.f, u.o, u.s, u.h, u.eu, u.et ' +
  'FROM unnest($2::int4[], $3::timestamptz[], $4::int4[], $5::int4[], $6::uuid[], $7::text[]) AS u(f, o, s, h, eu, et) ' +
  PG_CONFLICT;

const PG_ROW =
  'INSERT INTO occupancy_readings (polled_arrival, floor_space_key, observed_at, status_code, headcount, event_uuid, event_text) ' +
  `VALUES ($1, $2, $3, $4, $5, $6, $7) ${PG_CONFLICT}`;

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

/** Dictionary keys of one customer's floor spaces and of statuses, from Maps; a miss inserts and reads the key back. */
function sqliteKeys(db: Database.Database, customerId: string) {
  const insertSpace = db.prepare('INSERT INTO floor_spaces (customer_id, floor_space_id) VALUES (?, ?) ON CONFLICT DO NOTHING');
  const readSpace = db.prepare('SELECT floor_space_key FROM floor_spaces WHERE customer_id = ? AND floor_space_id = ?').pluck();
  const insertStatus = db.prepare('INSERT INTO occupancy_statuses (occupancy_status) VALUES (?) ON CONFLICT DO NOTHING');
  const readStatus = db.prepare('SELECT status_code FROM occupancy_statuses WHERE occupancy_status = ?').pluck();
  const spaces = new Map<string, number>();
  const statuses = new Map<string, number>();
  return {
    space(id: string): number {
      let key = spaces.get(id);
      if (key === undefined) {
        insertSpace.run(customerId, id);
        key = readSpace.get(customerId, id) as number;
        spaces.set(id, key);
      }
      return key;
    },
    status(status: string): number {
      let key = statuses.get(status);
      if (key === undefined) {
        insertStatus.run(status);
        key = readStatus.get(status) as number;
        statuses.set(status, key);
      }
      return key;
    },
  };
}

/** A UUID event id as its 16 bytes, any other as text (the compact layout's event_id). */
const sqliteEvent = (id: string): Buffer | string => (LOWER_UUID.test(id) ? Buffer.from(id.replaceAll('-', ''), 'hex') : id);

/** Synchronous SQLite page writer: dictionary keys from Maps, one prepared upsert, one transaction per page. */
export function sqliteWriter(path: string, customerId: string): PageWriter & { write(nodes: Reading[]): void } {
  const db = openRawSqlite(path);
  const upsert = db.prepare(SQLITE_UPSERT);
  const keys = sqliteKeys(db, customerId);
  const insertArrival = db.prepare("INSERT INTO occupancy_arrivals (source, arrived_at) VALUES ('poll', ?) RETURNING arrival_key").pluck();
  const page = db.transaction((nodes: Reading[], at: string) => {
    const arrival = insertArrival.get(at) as number;
    for (const n of nodes) upsert.run(keys.space(n.floorSpaceId), Date.parse(n.created), keys.status(n.occupancyStatus), n.headcount, arrival, sqliteEvent(n.id));
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
  const spaces = new Map<string, number>();
  const statuses = new Map<string, number>();
  type Tx = postgres.TransactionSql;
  /** Keys of values not in `map` yet: inserted if missing, read back, remembered. */
  const learn = async (tx: Tx, map: Map<string, number>, values: Iterable<string>, insert: string, read: string, scoped: boolean) => {
    const missing = [...new Set([...values].filter((v) => !map.has(v)))];
    if (missing.length === 0) return;
    const params = scoped ? [customerId, missing] : [missing];
    await tx.unsafe(insert, params as never[]);
    for (const row of await tx.unsafe<{ k: number; v: string }[]>(read, params as never[])) map.set(row.v, row.k);
  };
  const write = async (nodes: Reading[]): Promise<void> => {
    const at = new Date().toISOString();
    await sql.begin(async (tx) => {
      await learn(tx, spaces, nodes.map((n) => n.floorSpaceId),
        'INSERT INTO floor_spaces (customer_id, floor_space_id) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING',
        'SELECT floor_space_key AS k, floor_space_id AS v FROM floor_spaces WHERE customer_id = $1 AND floor_space_id = ANY($2::text[])', true);
      await learn(tx, statuses, nodes.map((n) => n.occupancyStatus),
        'INSERT INTO occupancy_statuses (occupancy_status) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING',
        'SELECT status_code AS k, occupancy_status AS v FROM occupancy_statuses WHERE occupancy_status = ANY($1::text[])', false);
      const [arrival] = await tx.unsafe<{ k: number }[]>("INSERT INTO occupancy_arrivals (source, arrived_at) VALUES ('poll', $1) RETURNING arrival_key AS k", [at]);
      const uuid = (n: Reading) => LOWER_UUID.test(n.id);
      if (style === 'unnest') {
        const params = [
          arrival!.k,
          nodes.map((n) => spaces.get(n.floorSpaceId)!),
          nodes.map((n) => n.created),
          nodes.map((n) => statuses.get(n.occupancyStatus)!),
          nodes.map((n) => n.headcount),
          nodes.map((n) => (uuid(n) ? n.id : null)),
          nodes.map((n) => (uuid(n) ? null : n.id)),
        ];
        await tx.unsafe(PG_UNNEST, params as never[], { prepare: true });
      } else {
        // postgres.js pipelines the statements of a transaction that are issued without waiting for each other.
        await Promise.all(
          nodes.map((n) =>
            tx.unsafe(PG_ROW, [arrival!.k, spaces.get(n.floorSpaceId)!, n.created, statuses.get(n.occupancyStatus)!, n.headcount, uuid(n) ? n.id : null, uuid(n) ? null : n.id] as never[], { prepare: true }),
          ),
        );
      }
    });
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
      return db
        .prepare('DELETE FROM occupancy_readings WHERE observed_ms >= ? AND floor_space_key IN (SELECT floor_space_key FROM floor_spaces WHERE customer_id = ?)')
        .run(Date.parse(fromIso), customerId).changes;
    } finally {
      db.close();
    }
  }
  const sql = pgClient(t);
  try {
    const result = await sql.unsafe(
      'DELETE FROM occupancy_readings WHERE observed_at >= $2 AND floor_space_key IN (SELECT floor_space_key FROM floor_spaces WHERE customer_id = $1)',
      [customerId, fromIso],
    );
    return result.count;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * The receiver's storage floor (bench/receiver-floor.ts): the delivery row with its body, and its items as one page
 * of webhook arrivals in the compact layout: `items(customerId, receivedAt, observedAt, deliveryId, items)`.
 */
export function receiverFloorStatements(db: Database.Database) {
  const insertArrival = db.prepare("INSERT INTO occupancy_arrivals (source, arrived_at) VALUES ('webhook', ?) RETURNING arrival_key").pluck();
  const upsert = db.prepare(
    'INSERT INTO occupancy_readings (floor_space_key, observed_ms, status_code, headcount, delivered_arrival, event_id) VALUES (?, ?, ?, ?, ?, ?) ' +
      'ON CONFLICT (floor_space_key, observed_ms) DO UPDATE SET status_code = excluded.status_code, headcount = excluded.headcount',
  );
  const keysOf = new Map<string, ReturnType<typeof sqliteKeys>>();
  return {
    insertDelivery: db.prepare(
      'INSERT INTO webhook_deliveries (customer_id, id, type, created_at, sent_at, received_at, attempts, body) VALUES (?, ?, ?, ?, ?, ?, 1, ?) ' +
        'ON CONFLICT (customer_id, id) DO UPDATE SET attempts = webhook_deliveries.attempts + 1 RETURNING attempts',
    ),
    items(customerId: string, receivedAt: string, observedAt: string, deliveryId: string, items: ReadonlyArray<{ FloorSpaceId: string; OccupancyStatus: string; Headcount: number }>) {
      let keys = keysOf.get(customerId);
      if (!keys) keysOf.set(customerId, (keys = sqliteKeys(db, customerId)));
      const arrival = insertArrival.get(receivedAt) as number;
      const event = sqliteEvent(deliveryId);
      const observed = Date.parse(observedAt);
      for (const item of items) upsert.run(keys.space(item.FloorSpaceId), observed, keys.status(item.OccupancyStatus), item.Headcount, arrival, event);
    },
    savepoint: db.prepare('SAVEPOINT delivery'),
    release: db.prepare('RELEASE SAVEPOINT delivery'),
  };
}
