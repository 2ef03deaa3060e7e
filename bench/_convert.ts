import { openStore } from '../src/store/index.ts';
import { freshDatabase } from '../test/support/databases.ts';
import { legacyRows, makeLegacyDatabase } from '../test/support/legacy-database.ts';
const n = Number(process.argv[2] ?? 1_000_000);
for (const dialect of ['sqlite', 'postgres'] as const) {
  const db = await freshDatabase(dialect, 'convert', { schemaPrefix: 'osbench_' });
  await makeLegacyDatabase(db, legacyRows(n));
  const store = await openStore(db.database);
  const t = performance.now();
  await store.migrate();
  const ms = performance.now() - t;
  const [row] = await store.query<{ n: number }>('SELECT count(*) AS n FROM occupancy');
  console.log(dialect, n, 'rows converted in', (ms / 1000).toFixed(1), 's =', Math.round(n / ms * 1000), 'rows/s; view count', row!.n);
  await store.close();
  await db.drop();
}
