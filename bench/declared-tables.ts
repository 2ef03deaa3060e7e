/**
 * What a declared table costs (docs/tables.md), on each dialect, in one run: creating it, declaring it again when
 * nothing changed (every run of its stream does, before its first page), and committing pages of 1,000 rows into it
 * against the same pages of the built-in `buildings` sink (the same upsert machinery, alternating). Fresh databases;
 * prints a table, writes nothing.
 *
 *   node --import tsx bench/declared-tables.ts [--pages 20] [--rows 1000]
 */
import { columnOfField } from '../src/store/declared-tables.ts';
import type { DeclaredTable, Store, TableColumnType } from '../src/store/types.ts';
import { DIALECTS, migratedStore } from '../test/support/databases.ts';

const arg = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? fallback : Number(process.argv[at + 1]);
};
const pages = arg('pages', 20);
const rows = arg('rows', 1000);

const FIELDS: Record<string, TableColumnType> = { id: 'text', name: 'text', capacity: 'integer', bookable: 'boolean', installedAt: 'timestamp' };
const TABLE: DeclaredTable = { name: 'bench_desks', key: ['id'], columns: Object.entries(FIELDS).map(([field, type]) => ({ field, column: columnOfField(field), type })) };
const checkpoint = (stateKey: string) => ({ customerId: 'c', stateKey, watermark: null, windowStart: null, windowEnd: null, pageCursor: null, rangeStart: null, rangeEnd: null });
const at = (p: number) => new Date(Date.UTC(2026, 0, 1, 0, p)).toISOString();

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

async function measure(store: Store) {
  const create = await timed(() => store.declareTables([TABLE]));
  let again = 0;
  for (let i = 0; i < 50; i++) again += await timed(() => store.declareTables([TABLE]));
  const desks = Array.from({ length: rows }, (_, i) => ({ id: `d-${i}`, name: `Desk ${i}`, capacity: i % 7, bookable: i % 2 === 0, installedAt: '2025-06-01T08:00:00.000Z' }));
  const buildings = Array.from({ length: rows }, (_, i) => ({ id: `b-${i}`, name: `Building ${i}`, timeZone: 'Europe/London' }));
  let table = 0;
  let builtin = 0;
  // Alternating, page by page, so a machine that slows down mid-run weighs on both alike.
  for (let p = 0; p < pages; p++) {
    table += await timed(() => store.commitPage({ customerId: 'c', sink: 'table', table: TABLE, at: at(p), records: desks, checkpoint: checkpoint('desks') }));
    builtin += await timed(() => store.commitPage({ customerId: 'c', sink: 'buildings', at: at(p), records: buildings, checkpoint: checkpoint('buildings') }));
  }
  return { create, again: again / 50, table: table / pages, builtin: builtin / pages };
}

const fmt = (ms: number) => ms.toFixed(ms < 10 ? 2 : 1);
console.log(`| Dialect | create (ms) | declare again, unchanged (ms) | page of ${rows} into api_bench_desks (ms) | the same into buildings (ms) | rows/s, declared |`);
console.log('|---|---|---|---|---|---|');
for (const dialect of DIALECTS) {
  const db = await migratedStore(dialect, 'bench-declared');
  try {
    const r = await measure(db.store);
    console.log(`| ${dialect} | ${fmt(r.create)} | ${fmt(r.again)} | ${fmt(r.table)} | ${fmt(r.builtin)} | ${Math.round((rows / r.table) * 1000).toLocaleString('en')} |`);
  } finally {
    await db.drop();
  }
}
