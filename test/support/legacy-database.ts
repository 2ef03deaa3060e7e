import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { loadMigrations, MIGRATIONS_TABLE, type NamedMigration } from '../../src/store/migrations.ts';
import type { TestDatabase } from './databases.ts';

/**
 * Databases as earlier versions left them: their migrations (the files each version shipped) with drizzle's
 * bookkeeping and nothing of this version's, and, for the version before the compact occupancy layout (0000 to 0007),
 * occupancy rows written with its upsert, so a test can upgrade them with this version's migrate().
 */

export const LAST_WIDE_MIGRATION = '0007_last_runs';

export interface LegacyRow {
  customer_id: string;
  floor_space_id: string;
  observed_at: string;
  occupancy_status: string;
  headcount: number;
  source: 'poll' | 'webhook';
  event_id: string | null;
  ingested_at: string;
  polled_at: string | null;
  delivered_at: string | null;
}

const COLUMNS = ['customer_id', 'floor_space_id', 'observed_at', 'occupancy_status', 'headcount', 'source', 'event_id', 'ingested_at', 'polled_at', 'delivered_at'] as const;

/**
 * Readings with every kind of provenance the old version could store: polled only, delivered only, polled then
 * delivered, delivered then polled, and rows from before polled_at and delivered_at existed (NULL there, the
 * source column saying how they came); event ids that are lowercase UUIDs, other text, or missing.
 */
export function legacyRows(count: number): LegacyRow[] {
  const rows: LegacyRow[] = [];
  const base = Date.parse('2026-01-05T00:00:00.000Z');
  const iso = (ms: number) => new Date(ms).toISOString();
  for (let i = 0; i < count; i++) {
    const customer = i % 7 === 0 ? 'cust-b' : 'cust-a';
    const space = `fs-${(i * 7919) % 23}`;
    // Arrivals in pages: 40 readings share one arrival time; the second way to arrive comes 17 minutes later.
    const first = base + 86_400_000 + Math.floor(i / 40) * 60_000 + (i % 3);
    const second = first + 17 * 60_000;
    const kind = i % 6;
    const source = kind === 1 || kind === 3 || kind === 5 ? 'webhook' : 'poll';
    const event = i % 4 === 0 ? `${(i * 2654435761 >>> 0).toString(16).padStart(8, '0')}-1b2c-4d5e-8f90-${String(i).padStart(12, '0')}` : i % 4 === 1 ? `OBS-${i}` : i % 4 === 2 ? `AAAAAAAA-1B2C-4D5E-8F90-${String(i).padStart(12, '0')}` : null;
    rows.push({
      customer_id: customer,
      floor_space_id: space,
      observed_at: iso(base + i * 300_000 + (i % 1000)),
      occupancy_status: ['CurrentlyOccupied', 'CurrentlyUnoccupied', 'Unknown status é'][i % 3]!,
      headcount: (i * 31) % 97,
      source,
      event_id: event,
      ingested_at: iso(first),
      polled_at: kind === 0 || kind === 2 ? iso(first) : kind === 3 || kind === 5 ? iso(second) : null,
      delivered_at: kind === 1 || kind === 3 ? iso(first) : kind === 2 ? iso(second) : null,
    });
  }
  return rows;
}

const keyOf = (r: LegacyRow) => `${r.customer_id}\u0000${r.floor_space_id}\u0000${r.observed_at}`;
/** One order on both dialects (Postgres sorts text by its collation). */
export const byKey = (a: LegacyRow, b: LegacyRow) => (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0);

/** What `occupancy` shows once `rows` are converted: as before, but rows from before polled_at/delivered_at existed get them from their source. */
export function convertedRows(rows: readonly LegacyRow[]): LegacyRow[] {
  return rows
    .map((r) => ({
      ...r,
      polled_at: r.polled_at ?? (r.source === 'poll' ? r.ingested_at : null),
      delivered_at: r.delivered_at ?? (r.source === 'webhook' ? r.ingested_at : null),
    }))
    .sort(byKey);
}

/** Rows of `occupancy` as read, in convertedRows' order. */
export const readRows = (rows: LegacyRow[]) => rows.map((r) => ({ ...r, headcount: Number(r.headcount) })).sort(byKey);

/** Applies the old version's migrations and stores `rows` as it would have. */
export async function makeLegacyDatabase(db: TestDatabase, rows: readonly LegacyRow[]): Promise<void> {
  const insert = `INSERT INTO occupancy (${COLUMNS.join(', ')}) VALUES `;
  await applyAsReleased(db, (m) => m.name <= LAST_WIDE_MIGRATION, {
    sqlite: (sqlite) => {
      const stmt = sqlite.prepare(`${insert}(${COLUMNS.map(() => '?').join(', ')})`);
      for (const row of rows) stmt.run(COLUMNS.map((c) => row[c]));
    },
    postgres: async (tx) => {
      for (let i = 0; i < rows.length; i += 1000) {
        const chunk = rows.slice(i, i + 1000);
        const values = chunk.map((_, r) => `(${COLUMNS.map((__, c) => `$${r * COLUMNS.length + c + 1}`).join(', ')})`).join(', ');
        await tx.unsafe(insert + values, chunk.flatMap((row) => COLUMNS.map((c) => row[c])) as never[]);
      }
    },
  });
}

/**
 * Applies the migrations from the first one not yet applied through `last`, as the version that shipped `last` did:
 * the SQL of each file and drizzle's bookkeeping row, nothing else (no repeatable scripts: that version had none).
 */
export async function migrateAsReleased(db: TestDatabase, last: string): Promise<void> {
  await applyAsReleased(db, (m) => m.name <= last);
}

/** Runs statements on the database without a store: as an earlier version left it (whose schema no store of this version opens), or beside one. */
export async function execRaw(db: TestDatabase, statements: readonly string[]): Promise<void> {
  if (db.dialect === 'sqlite') {
    const sqlite = new Database(db.path!);
    try {
      for (const s of statements) sqlite.exec(s);
    } finally {
      sqlite.close();
    }
    return;
  }
  const sql = postgres(db.url.replace(/[?&]schema=[^&]+/, ''), { max: 1, onnotice: () => {}, connection: { search_path: `"${db.schema}"`, TimeZone: 'UTC' } });
  try {
    for (const s of statements) await sql.unsafe(s);
  } finally {
    await sql.end();
  }
}

async function applyAsReleased(
  db: TestDatabase,
  wanted: (m: NamedMigration) => boolean,
  then: { sqlite?(sqlite: Database.Database): void; postgres?(tx: postgres.TransactionSql): Promise<void> } = {},
): Promise<void> {
  const all = loadMigrations(db.dialect).filter(wanted);
  if (db.dialect === 'sqlite') {
    mkdirSync(dirname(db.path!), { recursive: true });
    const sqlite = new Database(db.path!);
    try {
      sqlite.pragma('journal_mode = WAL');
      sqlite.transaction(() => {
        sqlite.exec(`CREATE TABLE IF NOT EXISTS "${MIGRATIONS_TABLE}" (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)`);
        const done = new Set((sqlite.prepare(`SELECT created_at FROM "${MIGRATIONS_TABLE}"`).all() as Array<{ created_at: number }>).map((r) => Number(r.created_at)));
        for (const m of all.filter((m) => !done.has(m.folderMillis))) {
          for (const statement of m.sql) if (statement.trim()) sqlite.exec(statement);
          sqlite.prepare(`INSERT INTO "${MIGRATIONS_TABLE}" (hash, created_at) VALUES (?, ?)`).run(m.hash, m.folderMillis);
        }
        then.sqlite?.(sqlite);
      })();
    } finally {
      sqlite.close();
    }
    return;
  }
  const sql = postgres(db.url.replace(/[?&]schema=[^&]+/, ''), { max: 1, onnotice: () => {}, connection: { search_path: `"${db.schema}"`, TimeZone: 'UTC' } });
  const table = `"${db.schema}"."${MIGRATIONS_TABLE}"`;
  try {
    await sql.begin(async (tx) => {
      await tx.unsafe(`CREATE TABLE IF NOT EXISTS ${table} (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)`);
      const done = new Set((await tx.unsafe<Array<{ created_at: string }>>(`SELECT created_at FROM ${table}`)).map((r) => Number(r.created_at)));
      for (const m of all.filter((m) => !done.has(m.folderMillis))) {
        for (const statement of m.sql) if (statement.trim()) await tx.unsafe(statement);
        await tx.unsafe(`INSERT INTO ${table} (hash, created_at) VALUES ($1, $2)`, [m.hash, m.folderMillis]);
      }
      await then.postgres?.(tx);
    });
  } finally {
    await sql.end();
  }
}
