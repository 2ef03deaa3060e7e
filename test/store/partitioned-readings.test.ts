import { readFileSync } from 'node:fs';
import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import { memoryLogger } from '../../src/logger.ts';
import { loadRepeatable } from '../../src/store/migrations.ts';
import { openStore, type OccupancyRecord, type Store } from '../../src/store/index.ts';
import { freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { migrateAsReleased } from '../support/legacy-database.ts';
import { checkpoint } from './harness.ts';

/**
 * Postgres keeps occupancy_readings partitioned by UTC month (migration 0013, src/store/reading-partitions.ts). A
 * database of the previous version, readings of three months in it, keeps every row exactly (count and checksum of
 * the table and of the documented view, before and after) without a row moving: its table becomes one partition. The
 * store then makes each month's partition (and the next month's) before a page with readings in it commits, once
 * even when writers race, and a month whose rows already sit in the default partition stays there without failing a
 * page. Retention deletes from the migrated partition row-wise until its last month is past, then drops it whole
 * (readings-retention.test.ts has the month partitions' case, on both dialects).
 */

const C = 'cust-a';
const AT = '2026-05-01T12:00:00.000Z';
const SPACES = 9;
/** Readings every 7 minutes from mid-January to mid-March 2026: three months. */
const READINGS = 3 * 4_000;
const FIRST = Date.parse('2026-01-14T03:00:00.000Z');

let db: TestDatabase | undefined;
const stores: Store[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close().catch(() => undefined)));
  await db?.drop();
  db = undefined;
});

function connect(target: TestDatabase) {
  return postgres(target.url.replace(/[?&]schema=[^&]+/, ''), { max: 1, onnotice: () => {}, connection: { search_path: `"${target.schema}"`, TimeZone: 'UTC' } });
}

/**
 * This version's views that 0012's tables can hold: those reading a table a later migration adds (the daily rollup,
 * occupancy_days; the floor-level hourly rollup, occupancy_floor_hours), or a view that does, are left out.
 */
function viewsOfReleased(statements: readonly string[]): string[] {
  const missing = ['occupancy_days', 'occupancy_floor_hours'];
  return statements.filter((s) => {
    const name = /VIEW (\w+) AS/.exec(s)?.[1];
    if (!missing.some((m) => new RegExp(`\\b${m}\\b`).test(s))) return true;
    if (name) missing.push(name);
    return false;
  });
}

/** The previous version's database (0000 to 0012 and its views), with READINGS readings in its compact tables. */
async function previousVersion(): Promise<void> {
  db = await freshDatabase('postgres', 'partitions-migration');
  await migrateAsReleased(db, '0012_aggregates');
  const sql = connect(db);
  try {
    await sql.begin(async (tx) => {
      for (const s of viewsOfReleased(loadRepeatable('postgres')[0]!.statements)) await tx.unsafe(s);
      for (let s = 1; s <= SPACES; s++) await tx.unsafe(`INSERT INTO floor_spaces (customer_id, floor_space_id) VALUES ('${C}', 'fs-${s}')`);
      for (const s of ['CurrentlyOccupied', 'CurrentlyUnoccupied']) await tx.unsafe(`INSERT INTO occupancy_statuses (occupancy_status) VALUES ('${s}')`);
      await tx.unsafe(`INSERT INTO occupancy_arrivals (source, arrived_at) VALUES ('poll', '2026-03-20T00:00:00.000Z')`);
      await tx.unsafe(`
        INSERT INTO occupancy_readings (floor_space_key, observed_at, status_code, headcount, polled_arrival, event_uuid, event_text)
        SELECT (i % ${SPACES}) + 1, to_timestamp((${FIRST} + i::bigint * 420000 + i % 1000) / 1000.0), (i % 2) + 1,
               CASE WHEN i % 11 = 0 THEN NULL ELSE (i * 31) % 97 END, 1,
               CASE WHEN i % 3 = 0 THEN md5(i::text)::uuid END, CASE WHEN i % 3 = 1 THEN 'obs-' || i END
          FROM generate_series(0, ${READINGS - 1}) i`);
    });
  } finally {
    await sql.end();
  }
}

/** Count and an md5 over every row of the table and of the documented view, in key order. */
async function fingerprint(store: Store) {
  const [table] = await store.query<{ n: number | string; sum: string }>(
    'SELECT count(*) AS n, md5(string_agg(r::text, \'|\' ORDER BY floor_space_key, observed_at)) AS sum FROM occupancy_readings r',
  );
  const [view] = await store.query<{ n: number | string; sum: string }>(
    'SELECT count(*) AS n, md5(string_agg(o::text, \'|\' ORDER BY floor_space_id, observed_at)) AS sum FROM occupancy o',
  );
  return { table: { n: Number(table!.n), sum: table!.sum }, view: { n: Number(view!.n), sum: view!.sum } };
}

async function partitions(store: Store) {
  return store.query<{ name: string; bound: string }>(`
    SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'occupancy_readings'::regclass ORDER BY 1`);
}

/** Rows per partition, by the partition each row is stored in. */
async function rowsPerPartition(store: Store): Promise<Record<string, number>> {
  const rows = await store.query<{ p: string; n: number | string }>('SELECT tableoid::regclass::text AS p, count(*) AS n FROM occupancy_readings GROUP BY 1 ORDER BY 1');
  return Object.fromEntries(rows.map((r) => [r.p, Number(r.n)]));
}

const reading = (observedAt: string, space = 'fs-1'): OccupancyRecord => ({ floorSpaceId: space, observedAt, occupancyStatus: 'CurrentlyOccupied', headcount: 2, eventId: null });
const page = (store: Store, records: OccupancyRecord[]) => store.commitPage({ customerId: C, sink: 'occupancy', at: AT, checkpoint: checkpoint(C, null), records });

describe('occupancy_readings partitioned by month on Postgres', () => {
  it('the migration keeps every reading of a populated table, moves none, and the store then writes by month', async () => {
    await previousVersion();
    const before = await (async () => {
      const old = await openStore(db!.database);
      try {
        return await fingerprint(old);
      } finally {
        await old.close();
      }
    })();
    expect(before.table.n).toBe(READINGS);
    expect(before.view.n).toBe(READINGS);

    const { logger, records } = memoryLogger();
    const store = await openStore(db!.database, { logger });
    stores.push(store);
    // 0013 first; later migrations (0014 on) follow it.
    expect((await store.migrate())[0]).toBe('0013_partitioned_readings');
    expect(await fingerprint(store)).toEqual(before);
    expect(await store.query("SELECT relkind FROM pg_class WHERE oid = 'occupancy_readings'::regclass")).toEqual([{ relkind: 'p' }]);
    // The old table is the one partition of its months, from the first of its oldest reading's month to the first of
    // the month after its newest; nothing went elsewhere.
    expect(await partitions(store)).toEqual([
      { name: 'occupancy_readings_default', bound: 'DEFAULT' },
      { name: 'occupancy_readings_migrated', bound: "FOR VALUES FROM ('2026-01-01 00:00:00+00') TO ('2026-04-01 00:00:00+00')" },
    ]);
    expect(await rowsPerPartition(store)).toEqual({ occupancy_readings_migrated: READINGS });
    // The parent has the indexes the plans and the views read, and the old table's serve as its partitions' own.
    const indexes = await store.query<{ indexname: string; tablename: string }>(
      "SELECT tablename, indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename LIKE 'occupancy_readings%' ORDER BY 1, 2",
    );
    expect(indexes).toEqual([
      { tablename: 'occupancy_readings', indexname: 'occupancy_readings_observed_idx' },
      { tablename: 'occupancy_readings', indexname: 'occupancy_readings_pkey' },
      { tablename: 'occupancy_readings_default', indexname: 'occupancy_readings_default_observed_at_idx' },
      { tablename: 'occupancy_readings_default', indexname: 'occupancy_readings_default_pkey' },
      { tablename: 'occupancy_readings_migrated', indexname: 'occupancy_readings_migrated_observed_idx' },
      { tablename: 'occupancy_readings_migrated', indexname: 'occupancy_readings_migrated_pkey' },
    ]);
    expect(await store.query("SELECT count(*)::int AS n FROM pg_constraint WHERE conname = 'occupancy_readings_migrated_bound'")).toEqual([{ n: 0 }]);
    // The views read the partitioned table (the latest reading is the newest of the migrated rows).
    const newest = new Date(FIRST + (READINGS - 1) * 420_000 + ((READINGS - 1) % 1000)).toISOString();
    expect((await store.query<{ m: string }>('SELECT max(observed_at) AS m FROM occupancy_latest'))[0]!.m).toBe(newest);

    // A page in a month the old table covers goes there; one of April makes April and May; one of December 2025
    // makes December (January is the old table's).
    await page(store, [reading('2026-02-10T10:00:00.000Z', 'fs-new'), reading('2026-04-02T10:00:00.000Z'), reading('2025-12-31T23:59:59.999+00:00')]);
    expect(await rowsPerPartition(store)).toEqual({
      occupancy_readings_2025_12: 1,
      occupancy_readings_2026_04: 1,
      occupancy_readings_migrated: READINGS + 1,
    });
    expect((await partitions(store)).map((p) => p.name)).toEqual([
      'occupancy_readings_2025_12',
      'occupancy_readings_2026_04',
      'occupancy_readings_2026_05',
      'occupancy_readings_default',
      'occupancy_readings_migrated',
    ]);
    expect(records().filter((r) => /^made partition/.test(String(r.msg))).map((r) => r.partition)).toEqual([
      'occupancy_readings_2025_12',
      'occupancy_readings_2026_04',
      'occupancy_readings_2026_05',
    ]);
    // A time offset that is another UTC month: 2026-05-31T23:30-02:00 is June.
    await page(store, [reading('2026-05-31T23:30:00.000-02:00')]);
    expect(await rowsPerPartition(store)).toMatchObject({ occupancy_readings_2026_06: 1 });
    expect(await store.query('SELECT count(*)::int AS n FROM occupancy_readings_default')).toEqual([{ n: 0 }]);
    expect((await fingerprint(store)).view.n).toBe(READINGS + 4);
  }, 60_000);

  it('retention deletes from the migrated partition row-wise until its last month is past, then drops it whole', async () => {
    await previousVersion();
    const store = await openTestStore(db!);
    stores.push(store);
    await page(store, [reading('2026-04-02T10:00:00.000Z')]);
    const count = async (where: string) => Number((await store.query<{ n: string }>(`SELECT count(*) AS n FROM occupancy_readings WHERE ${where}`))[0]!.n);
    const january = await count("observed_at < '2026-02-01T00:00:00Z'");
    expect(january).toBeGreaterThan(0);
    const rest = await store.query("SELECT md5(string_agg(r::text, '|' ORDER BY floor_space_key, observed_at)) AS sum FROM occupancy_readings r WHERE observed_at >= '2026-02-01T00:00:00Z'");
    // January is in the migrated partition, which reaches into March: its rows go one by one, the partition stays.
    let rows = 0;
    for (let pass = await store.pruneReadings('2026-02-01T00:00:00.000Z', 1000); ; pass = await store.pruneReadings('2026-02-01T00:00:00.000Z', 1000)) {
      expect(pass.partitions).toEqual([]);
      rows += pass.rows;
      if (pass.rows < 1000) break;
    }
    expect(rows).toBe(january);
    expect(await store.query("SELECT md5(string_agg(r::text, '|' ORDER BY floor_space_key, observed_at)) AS sum FROM occupancy_readings r")).toEqual(rest);
    // Once its last month is past the cutoff, it is dropped whole.
    expect(await store.pruneReadings('2026-04-01T00:00:00.000Z', 1000)).toEqual({ partitions: ['occupancy_readings_migrated'], rows: 0 });
    expect(await rowsPerPartition(store)).toEqual({ occupancy_readings_2026_04: 1 });
    expect((await partitions(store)).map((p) => p.name)).toEqual(['occupancy_readings_2026_04', 'occupancy_readings_2026_05', 'occupancy_readings_default']);
  }, 60_000);

  it('a fresh database has no migrated partition; writers racing into a new month make its partition once', async () => {
    db = await freshDatabase('postgres', 'partitions-race');
    const writers = await Promise.all([0, 1, 2].map(() => openTestStore(db!)));
    stores.push(...writers);
    expect((await partitions(writers[0]!)).map((p) => p.name)).toEqual(['occupancy_readings_default']);
    await Promise.all(writers.map((w, i) => page(w, [reading(`2026-07-0${i + 1}T08:00:00.000Z`, `fs-${i}`), reading(`2026-08-0${i + 1}T08:00:00.000Z`, `fs-${i}`)])));
    expect((await partitions(writers[0]!)).map((p) => p.name)).toEqual([
      'occupancy_readings_2026_07',
      'occupancy_readings_2026_08',
      'occupancy_readings_2026_09',
      'occupancy_readings_default',
    ]);
    expect(await rowsPerPartition(writers[0]!)).toEqual({ occupancy_readings_2026_07: 3, occupancy_readings_2026_08: 3 });
    // A webhook delivery's readings take the same path.
    const delivery = { id: 'dlv-1', customerId: C, type: 'Occupancy', createdAt: AT, sentAt: AT, receivedAt: AT, body: '{}' };
    expect(await writers[1]!.storeDelivery(delivery, [reading('2026-10-01T00:00:00.000Z')])).toBe('stored');
    expect(await rowsPerPartition(writers[0]!)).toMatchObject({ occupancy_readings_2026_10: 1 });
  }, 60_000);

  it('a month whose rows already sit in the default partition stays there: pages still commit, and it is said once', async () => {
    db = await freshDatabase('postgres', 'partitions-default');
    const { logger, records } = memoryLogger();
    const store = await openStore(db.database, { logger });
    stores.push(store);
    await store.migrate();
    await page(store, [reading('2026-03-05T00:00:00.000Z')]);
    // A user's own INSERT of a month the store never wrote lands in the default partition.
    await store.query("INSERT INTO occupancy_readings (floor_space_key, observed_at, status_code, headcount) SELECT floor_space_key, '2026-09-09T09:00:00Z', 1, 1 FROM floor_spaces LIMIT 1");
    await page(store, [reading('2026-09-10T00:00:00.000Z'), reading('2026-09-11T00:00:00.000Z')]);
    await page(store, [reading('2026-09-12T00:00:00.000Z')]);
    expect(await rowsPerPartition(store)).toEqual({ occupancy_readings_2026_03: 1, occupancy_readings_default: 4 });
    expect((await partitions(store)).map((p) => p.name)).toEqual(['occupancy_readings_2026_03', 'occupancy_readings_2026_04', 'occupancy_readings_2026_10', 'occupancy_readings_default']);
    const said = records().filter((r) => r.level === 40).map((r) => String(r.msg));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/^readings of 2026-09 are in occupancy_readings_default .* Fix: split it as docs\/operations\.md, "Partitions \(Postgres\)", shows$/);
    // The recipe of docs/operations.md, as printed there, moves the month to a partition of its own.
    const doc = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
    const recipe = /To split a month out of it[^`]*```sql\n([\s\S]*?)```/.exec(doc)![1]!;
    const sql = connect(db);
    try {
      await sql.unsafe(recipe).simple();
    } finally {
      await sql.end();
    }
    expect(await rowsPerPartition(store)).toEqual({ occupancy_readings_2026_03: 1, occupancy_readings_2026_09: 4 });
    expect((await partitions(store)).map((p) => p.bound)).toContain("FOR VALUES FROM ('2026-09-01 00:00:00+00') TO ('2026-10-01 00:00:00+00')");
    expect((await partitions(store)).find((p) => p.name === 'occupancy_readings_default')).toEqual({ name: 'occupancy_readings_default', bound: 'DEFAULT' });
  }, 60_000);
});
