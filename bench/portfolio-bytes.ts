import Database from 'better-sqlite3';
import postgres from 'postgres';
import { freshDatabase, type Dialect } from '../test/support/databases.ts';
import { flags, spawnBench } from './child.ts';
import { AGGREGATE_TABLES, loadQuarterThenRest, portfolioDefinitions, portfolioSandboxArgs } from './portfolio.ts';
import { target } from './raw-writers.ts';
import type { SandboxInfo } from './sandbox-process.ts';
import { BENCH_PG_URL, dataStart } from './sync-bench.ts';

/**
 * The portfolio benchmark's bytes per reading, relation by relation, in three states (docs/performance.md, "Bytes per
 * reading, relation by relation"): as the load left the database, after a plain VACUUM (what bench/storage-size.ts
 * measures on Postgres, and what autovacuum reaches on a steady database; SQLite has none), and compacted (Postgres
 * VACUUM FULL, SQLite VACUUM: the live rows alone). Bytes per reading are a relation's growth over the freshly
 * migrated database, divided by the readings stored. A portfolio loaded as the benchmark loads it (bench/portfolio.ts: the listings, then
 * the first quarter of the days, then the rest with `--restart`, the aggregates kept by every commit), smaller.
 *
 *   node --import tsx bench/portfolio-bytes.ts [--dialect postgres] [--buildings 10] [--spaces 50] [--days 60]
 */

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

interface Relation {
  name: string;
  kind: 'table' | 'index' | 'free';
  bytes: number;
  /** Postgres: the table's TOAST (in bytes too). */
  toast?: number;
  dead?: number;
  live?: number;
}

async function pgRelations(url: string, vacuum: '' | 'VACUUM ANALYZE' | 'VACUUM FULL ANALYZE'): Promise<Relation[]> {
  const t = target(url);
  if (t.dialect !== 'postgres') throw new Error(`not a Postgres URL: ${url}`);
  const schema = t.schema ?? 'public';
  const sql = postgres(t.url, { max: 1, onnotice: () => {} });
  try {
    if (vacuum) {
      const tables = await sql<{ relname: string }[]>`
        SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ${schema} AND c.relkind IN ('r', 'm')`;
      for (const { relname } of tables) await sql.unsafe(`${vacuum} "${schema}"."${relname}"`);
    }
    // The cumulative statistics are flushed by each backend within a second of its transaction: read what they say now.
    const rows = await sql<{ name: string; kind: string; bytes: string; toast: string | null; dead: string | null; live: string | null }[]>`
      SELECT c.relname AS name, c.relkind AS kind,
        CASE WHEN c.relkind = 'i' THEN pg_relation_size(c.oid) ELSE pg_table_size(c.oid) END AS bytes,
        CASE WHEN c.reltoastrelid <> 0 THEN pg_total_relation_size(c.reltoastrelid) END AS toast,
        s.n_dead_tup AS dead, s.n_live_tup AS live
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
      WHERE n.nspname = ${schema} AND c.relkind IN ('r', 'm', 'i')`;
    return rows.map((r) => ({
      name: r.name,
      kind: r.kind === 'i' ? 'index' : 'table',
      bytes: Number(r.bytes),
      ...(r.toast !== null && { toast: Number(r.toast) }),
      ...(r.dead !== null && { dead: Number(r.dead), live: Number(r.live) }),
    }));
  } finally {
    await sql.end({ timeout: 5 });
  }
}

function sqliteRelations(url: string, vacuum: boolean): Relation[] {
  const t = target(url);
  if (t.dialect !== 'sqlite') throw new Error(`not a SQLite URL: ${url}`);
  const db = new Database(t.path);
  try {
    db.pragma('wal_checkpoint(TRUNCATE)');
    if (vacuum) db.exec('VACUUM');
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    const free = (db.pragma('freelist_count', { simple: true }) as number) * pageSize;
    const rows = db.prepare("SELECT d.name, s.type AS kind, SUM(d.pgsize) AS bytes FROM dbstat d LEFT JOIN sqlite_schema s ON s.name = d.name GROUP BY d.name").all() as Array<{ name: string; kind: string | null; bytes: number }>;
    return [...rows.map((r): Relation => ({ name: r.name, kind: r.kind === 'index' ? 'index' : 'table', bytes: r.bytes })), { name: '(free pages)', kind: 'free', bytes: free }];
  } finally {
    db.close();
  }
}

const options = flags();
const dialect = (options.get('dialect') ?? 'postgres') as Dialect;
const size = { buildings: Number(options.get('buildings') ?? 10), spacesPerBuilding: Number(options.get('spaces') ?? 50), days: Number(options.get('days') ?? 60) };
const log = (line: string) => process.stdout.write(`${line}\n`);
const definitions = portfolioDefinitions('60m');
const sandbox = spawnBench<SandboxInfo>('sandbox-process.ts', portfolioSandboxArgs(dataStart(), size));
const db = await freshDatabase(dialect, `portfolio_bytes_${dialect}`, { migrate: true, baseUrl: BENCH_PG_URL, schemaPrefix: 'osbench_' });
const snapshot = async (state: 'loaded' | 'vacuum' | 'full') =>
  dialect === 'postgres' ? pgRelations(db.url, state === 'loaded' ? '' : state === 'vacuum' ? 'VACUUM ANALYZE' : 'VACUUM FULL ANALYZE') : sqliteRelations(db.url, state === 'full');
try {
  const info = await sandbox.message;
  const empty = await snapshot('vacuum');
  await loadQuarterThenRest(info, db, size.days, definitions.file, (line) => log(`${dialect}: ${line}`));
  const readings = ((size.days * DAY_MS) / HOUR_MS) * info.floorSpaces;
  const states = { loaded: await snapshot('loaded'), vacuum: await snapshot('vacuum'), full: await snapshot('full') };
  const emptyOf = new Map(empty.map((r) => [r.name, r.bytes]));
  const per = (list: Relation[], name: string) => ((list.find((r) => r.name === name)?.bytes ?? 0) - (emptyOf.get(name) ?? 0)) / readings;
  const names = states.loaded.map((r) => r.name).filter((n) => Math.max(...Object.values(states).map((l) => Math.abs(per(l, n)))) >= 0.05);
  names.sort((a, b) => per(states.loaded, b) - per(states.loaded, a));
  const fmt = (n: number) => n.toFixed(1);
  log(`\n${dialect}, ${size.buildings} x ${size.spacesPerBuilding} floor spaces x ${size.days} days, ${readings.toLocaleString('en-US')} readings: bytes per reading over the empty database\n`);
  // SQLite has no plain VACUUM (its VACUUM rewrites the file): its middle column is the database as loaded, and what
  // deletes left behind is the free pages' row; its dead-row and TOAST columns stay empty.
  log(`| Relation | Kind | As loaded | ${dialect === 'postgres' ? 'After VACUUM' : 'As loaded'} | Compacted | Dead rows as loaded | TOAST as loaded (B/reading) |`);
  log('|---|---|---:|---:|---:|---:|---:|');
  for (const name of names) {
    const r = states.loaded.find((x) => x.name === name)!;
    const agg = AGGREGATE_TABLES.test(name) ? ' (aggregate)' : '';
    const dead = r.dead === undefined ? '' : `${r.dead.toLocaleString('en-US')} of ${(r.dead + r.live!).toLocaleString('en-US')}`;
    const toast = r.toast === undefined ? '' : fmt(r.toast / readings);
    log(`| ${name}${agg} | ${r.kind} | ${fmt(per(states.loaded, name))} | ${fmt(per(states.vacuum, name))} | ${fmt(per(states.full, name))} | ${dead} | ${toast} |`);
  }
  for (const [label, test] of [['aggregates', (n: string) => AGGREGATE_TABLES.test(n)], ['the rest', (n: string) => !AGGREGATE_TABLES.test(n)], ['total', () => true]] as const) {
    const sum = (list: Relation[]) => list.filter((r) => test(r.name)).reduce((a, r) => a + (r.bytes - (emptyOf.get(r.name) ?? 0)), 0) / readings;
    log(`| **${label}** | | ${fmt(sum(states.loaded))} | ${fmt(sum(states.vacuum))} | ${fmt(sum(states.full))} | | |`);
  }
} finally {
  await db.drop();
  await sandbox.stop();
  definitions.remove();
}
