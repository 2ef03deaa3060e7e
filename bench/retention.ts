import postgres from 'postgres';
import { openStore, type Store } from '../src/store/index.ts';
import { freshDatabase, openTestStore, type TestDatabase } from '../test/support/databases.ts';
import { migrateAsReleased } from '../test/support/legacy-database.ts';
import { updateDoc } from './doc.ts';
import { formatNumber } from './stats.ts';
import { BENCH_PG_URL } from './sync-bench.ts';

/**
 * npm run bench:retention [-- --rows N] [--write]
 *
 * Readings retention of one month on Postgres, the two ways the store does it (src/store/reading-retention.ts): the
 * month is a partition of its own (the store made it) and is dropped whole, or the month is inside a larger partition
 * (the one migration 0013 makes of an existing table) and its rows are deleted 5,000 a statement, as the daemons do.
 * Each database holds N readings in January 2026 and N in February (500 floor spaces); the cutoff is February 1st.
 * Time and WAL written are measured around the retention alone; the upgrade of the second database (0013 attaching
 * its table) is timed too. --write puts the table into docs/performance.md.
 */

const BATCH = 5_000;
const SPACES = 500;

const argv = process.argv.slice(2);
const at = argv.indexOf('--rows');
const ROWS = at >= 0 ? Number(argv[at + 1]) : 1_000_000;
if (!Number.isInteger(ROWS) || ROWS < SPACES) throw new Error(`--rows must be a whole number of at least ${SPACES}, got ${argv[at + 1]}`);

function connect(db: TestDatabase) {
  return postgres(db.url.replace(/[?&]schema=[^&]+/, ''), { max: 1, onnotice: () => {}, connection: { search_path: `"${db.schema}"`, TimeZone: 'UTC' } });
}

/** N readings spread evenly over the month starting at `month`, round-robin over the floor spaces. */
const fill = (month: string, end: string) => `
  INSERT INTO occupancy_readings (floor_space_key, observed_at, status_code, headcount, polled_arrival)
  SELECT (i % ${SPACES}) + 1,
         '${month}'::timestamptz + ((i / ${SPACES}) * ((extract(epoch FROM '${end}'::timestamptz - '${month}'::timestamptz) * 1000)::bigint / ${Math.ceil(ROWS / SPACES)})) * interval '1 millisecond',
         1 + i % 2, i % 7, 1
    FROM generate_series(0, ${ROWS - 1}) i`;

async function dictionary(sql: postgres.TransactionSql): Promise<void> {
  await sql.unsafe(`INSERT INTO floor_spaces (customer_id, floor_space_id) SELECT 'c', 'fs-' || s FROM generate_series(1, ${SPACES}) s`);
  await sql.unsafe(`INSERT INTO occupancy_statuses (occupancy_status) VALUES ('CurrentlyOccupied'), ('CurrentlyUnoccupied')`);
  await sql.unsafe(`INSERT INTO occupancy_arrivals (source, arrived_at) VALUES ('poll', '2026-03-01T00:00:00Z')`);
}

interface Measured {
  ms: number;
  walBytes: number;
  partitions: string[];
  rows: number;
  statements: number;
  left: number;
}

async function measure(store: Store, sql: postgres.Sql): Promise<Measured> {
  await sql.unsafe('CHECKPOINT');
  const before = (await sql.unsafe<{ lsn: string }[]>('SELECT pg_current_wal_lsn()::text AS lsn'))[0]!.lsn;
  const started = performance.now();
  const partitions: string[] = [];
  let rows = 0;
  let statements = 0;
  for (;;) {
    const pass = await store.pruneReadings('2026-02-01T00:00:00.000Z', BATCH);
    statements++;
    partitions.push(...pass.partitions);
    rows += pass.rows;
    if (pass.rows < BATCH) break;
  }
  const ms = performance.now() - started;
  const wal = (await sql.unsafe<{ bytes: string }[]>(`SELECT pg_current_wal_lsn() - '${before}'::pg_lsn AS bytes`))[0]!;
  const left = (await sql.unsafe<{ n: string }[]>('SELECT count(*) AS n FROM occupancy_readings'))[0]!;
  return { ms, walBytes: Number(wal.bytes), partitions, rows, statements, left: Number(left.n) };
}

/** January is a partition of its own: the store made January's and February's with a first page. */
async function monthPartition(): Promise<Measured> {
  const db = await freshDatabase('postgres', 'retention_drop', { migrate: true, baseUrl: BENCH_PG_URL, schemaPrefix: 'osbench_' });
  const store = await openTestStore(db);
  const sql = connect(db);
  try {
    await sql.begin(async (tx) => dictionary(tx));
    await store.commitPage({ customerId: 'c', sink: 'occupancy', at: '2026-03-01T00:00:00.000Z', checkpoint: { customerId: 'c', stateKey: 'occupancy', watermark: null, windowStart: null, windowEnd: null, pageCursor: null, rangeStart: null, rangeEnd: null }, records: [{ floorSpaceId: 'fs-1', observedAt: '2026-01-01T00:00:00.000Z', occupancyStatus: 'CurrentlyOccupied', headcount: 0, eventId: null }] });
    await sql.unsafe("DELETE FROM occupancy_readings");
    await sql.unsafe(fill('2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z'));
    await sql.unsafe(fill('2026-02-01T00:00:00Z', '2026-03-01T00:00:00Z'));
    await sql.unsafe('VACUUM ANALYZE occupancy_readings');
    return await measure(store, sql);
  } finally {
    await sql.end();
    await store.close();
    await db.drop();
  }
}

/** January inside the partition migration 0013 made of a table that held January and February. */
async function migratedPartition(): Promise<Measured & { migrateMs: number }> {
  const db = await freshDatabase('postgres', 'retention_rows', { baseUrl: BENCH_PG_URL, schemaPrefix: 'osbench_' });
  const sql = connect(db);
  try {
    await migrateAsReleased(db, '0012_aggregates');
    await sql.begin(async (tx) => dictionary(tx));
    await sql.unsafe(fill('2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z'));
    await sql.unsafe(fill('2026-02-01T00:00:00Z', '2026-03-01T00:00:00Z'));
    await sql.unsafe('VACUUM ANALYZE occupancy_readings');
    const store = await openStore(db.database);
    try {
      const started = performance.now();
      await store.migrate();
      const migrateMs = performance.now() - started;
      await sql.unsafe('VACUUM ANALYZE occupancy_readings');
      return { ...(await measure(store, sql)), migrateMs };
    } finally {
      await store.close();
    }
  } finally {
    await sql.end();
    await db.drop();
  }
}

const mib = (bytes: number) => `${(bytes / 1_048_576).toFixed(1)} MiB`;

async function main(): Promise<void> {
  process.stderr.write(`retention of a month of ${formatNumber(ROWS)} readings: partition drop...\n`);
  const drop = await monthPartition();
  process.stderr.write('row-wise delete...\n');
  const rows = await migratedPartition();
  for (const m of [drop, rows]) if (m.left !== ROWS) throw new Error(`retention left ${m.left} readings, expected February's ${ROWS}`);
  const table = [
    `Retention of one month of ${formatNumber(ROWS)} readings (${SPACES} floor spaces, January 2026; February's ${formatNumber(ROWS)} stay), Postgres, \`npm run bench:retention -- --rows ${ROWS}\`:`,
    '',
    '| the month is | how it goes | time | WAL written | statements |',
    '|---|---|--:|--:|--:|',
    `| a partition of its own (made by the store) | \`DROP TABLE ${drop.partitions.join(', ')}\` | ${formatNumber(Math.round(drop.ms))} ms | ${mib(drop.walBytes)} | ${drop.statements} |`,
    `| inside \`occupancy_readings_migrated\` (0013's) | ${formatNumber(rows.rows)} rows deleted, ${formatNumber(BATCH)} a statement | ${formatNumber(Math.round(rows.ms))} ms | ${mib(rows.walBytes)} | ${rows.statements} |`,
    '',
    `The upgrade that made \`occupancy_readings_migrated\` of the ${formatNumber(2 * ROWS)} readings (migration 0013 and the views after it, \`store.migrate()\`) took ${formatNumber(Math.round(rows.migrateMs))} ms: one read of the table, no row written.`,
    '',
    `Dropping the partition is ${formatNumber(Math.round(rows.ms / Math.max(drop.ms, 1)))} times faster and writes ${formatNumber(Math.round(rows.walBytes / Math.max(drop.walBytes, 1)))} times less WAL; the deleted rows also leave dead tuples for VACUUM, a dropped partition leaves none.`,
  ].join('\n');
  process.stdout.write(`${table}\n`);
  if (argv.includes('--write')) updateDoc(new URL('../docs/performance.md', import.meta.url).pathname, { retention: table });
}

await main();
