import Database from 'better-sqlite3';
import postgres from 'postgres';
import { target } from './raw-writers.ts';

/**
 * Bytes on disk of a database, generic over whatever tables and indexes exist (the layout is changing; nothing here
 * names a table). SQLite: after `wal_checkpoint(TRUNCATE)`, page_count x page_size of the whole file, with a
 * per-table/index breakdown from the `dbstat` virtual table when the SQLite build has it. Postgres: after
 * `VACUUM ANALYZE` of every table of the schema, the sum of pg_total_relation_size over them, with a per-relation
 * breakdown (tables with their TOAST, indexes alone).
 */

export interface StorageSize {
  bytes: number;
  /** Per table or index, largest first; empty when the SQLite build has no dbstat. */
  relations: Array<{ name: string; bytes: number }>;
  breakdown: 'dbstat' | 'pg_class' | 'none';
}

export async function storageSize(databaseUrl: string): Promise<StorageSize> {
  const t = target(databaseUrl);
  if (t.dialect === 'sqlite') {
    const db = new Database(t.path);
    try {
      db.pragma('wal_checkpoint(TRUNCATE)');
      const pageSize = db.pragma('page_size', { simple: true }) as number;
      const pageCount = db.pragma('page_count', { simple: true }) as number;
      let relations: StorageSize['relations'] = [];
      let breakdown: StorageSize['breakdown'] = 'none';
      try {
        db.prepare('SELECT * FROM dbstat LIMIT 1').all();
        relations = db.prepare('SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC').all() as StorageSize['relations'];
        breakdown = 'dbstat';
      } catch {
        // This better-sqlite3 build has no dbstat: the total stands alone.
      }
      return { bytes: pageSize * pageCount, relations, breakdown };
    } finally {
      db.close();
    }
  }
  const schema = t.schema ?? 'public';
  const sql = postgres(t.url, { max: 1, onnotice: () => {} });
  try {
    const tables = await sql<{ relname: string }[]>`
      SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = ${schema} AND c.relkind IN ('r', 'm')`;
    for (const { relname } of tables) await sql.unsafe(`VACUUM ANALYZE "${schema}"."${relname}"`);
    const [total] = await sql<{ bytes: string }[]>`
      SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = ${schema} AND c.relkind IN ('r', 'm')`;
    const relations = await sql<{ name: string; bytes: string }[]>`
      SELECT c.relname AS name, CASE WHEN c.relkind = 'i' THEN pg_relation_size(c.oid) ELSE pg_table_size(c.oid) END AS bytes
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = ${schema} AND c.relkind IN ('r', 'm', 'i') ORDER BY 2 DESC`;
    return { bytes: Number(total!.bytes), relations: relations.map((r) => ({ name: r.name, bytes: Number(r.bytes) })), breakdown: 'pg_class' };
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** Bytes per reading: the database's growth over a freshly migrated empty one, per reading stored. */
export interface BytesPerReading {
  readings: number;
  bytes: number;
  emptyBytes: number;
  perReading: number;
  /** Per table or index: bytes over the empty database's, per reading; largest first. */
  relations: Array<{ name: string; perReading: number }>;
  breakdown: StorageSize['breakdown'];
}

export function perReading(full: StorageSize, empty: StorageSize, readings: number): BytesPerReading {
  const emptyOf = new Map(empty.relations.map((r) => [r.name.replace(/^.*\./, ''), r.bytes]));
  return {
    readings,
    bytes: full.bytes,
    emptyBytes: empty.bytes,
    perReading: (full.bytes - empty.bytes) / readings,
    relations: full.relations
      .map((r) => ({ name: r.name, perReading: (r.bytes - (emptyOf.get(r.name) ?? 0)) / readings }))
      .filter((r) => r.perReading > 0.05),
    breakdown: full.breakdown,
  };
}
