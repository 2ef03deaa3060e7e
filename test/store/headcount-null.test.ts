import Database from 'better-sqlite3';
import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreError } from '../../src/errors.ts';
import { loadRepeatable } from '../../src/store/migrations.ts';
import type { OccupancyRecord } from '../../src/store/types.ts';
import { freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { migrateAsReleased } from '../support/legacy-database.ts';
import { checkpoint, DIALECTS, fresh } from './harness.ts';

/**
 * Presence-only sensors (issue 38): a reading without a headcount is stored as NULL, never 0, on both dialects; the
 * views say NULL (unknown) where they said a number; and a database of the previous version, readings in it, keeps
 * every reading through the change (on SQLite a rebuild of occupancy_readings).
 */

const C = 'cust-a';
const AT = '2026-03-01T12:00:00.000Z';

const reading = (minute: number, headcount: number | null, status = 'CurrentlyOccupied'): OccupancyRecord => ({
  floorSpaceId: 'fs-1',
  observedAt: `2026-03-01T10:${String(minute).padStart(2, '0')}:00.000Z`,
  occupancyStatus: status,
  headcount,
  eventId: `obs-${minute}`,
});

describe.each(DIALECTS)('headcount on %s', (dialect) => {
  it('a reading without a headcount is stored and read back as NULL, never 0, by the views too', async () => {
    const { store } = await fresh(dialect, 'nullhc');
    await store.commitPage({ customerId: C, sink: 'occupancy', at: AT, checkpoint: checkpoint(C, null), records: [reading(0, null), reading(5, null, 'CurrentlyUnoccupied')] });
    // A delivery's items go through the same sink.
    const delivery = { id: 'dlv-1', customerId: C, type: 'Occupancy', createdAt: AT, sentAt: AT, receivedAt: AT, body: '{}' };
    expect(await store.storeDelivery(delivery, [reading(10, null)])).toBe('stored');
    expect(await store.query('SELECT observed_at, occupancy_status, headcount FROM occupancy ORDER BY observed_at')).toEqual([
      { observed_at: '2026-03-01T10:00:00.000Z', occupancy_status: 'CurrentlyOccupied', headcount: null },
      { observed_at: '2026-03-01T10:05:00.000Z', occupancy_status: 'CurrentlyUnoccupied', headcount: null },
      { observed_at: '2026-03-01T10:10:00.000Z', occupancy_status: 'CurrentlyOccupied', headcount: null },
    ]);
    expect(await store.query('SELECT headcount FROM occupancy_latest')).toEqual([{ headcount: null }]);
    const [hour] = await store.query<Record<string, unknown>>('SELECT readings, occupied_readings, total_headcount, avg_headcount, peak_headcount FROM occupancy_hourly');
    expect({ ...hour, readings: Number(hour!.readings), occupied_readings: Number(hour!.occupied_readings) }).toEqual({
      readings: 3, occupied_readings: 2, total_headcount: null, avg_headcount: null, peak_headcount: null,
    });
    expect(await store.query('SELECT count(*) AS n FROM occupancy_readings WHERE headcount IS NULL')).toEqual([{ n: 3 }]);
  });

  it('the headcount aggregates of an hour count only the readings that have one', async () => {
    const { store } = await fresh(dialect, 'mixhc');
    await store.commitPage({ customerId: C, sink: 'occupancy', at: AT, checkpoint: checkpoint(C, null), records: [reading(0, 4), reading(5, null), reading(10, 2)] });
    const [hour] = await store.query<Record<string, unknown>>('SELECT readings, total_headcount, avg_headcount, peak_headcount FROM occupancy_hourly');
    expect([Number(hour!.readings), Number(hour!.total_headcount), Number(hour!.avg_headcount), Number(hour!.peak_headcount)]).toEqual([3, 6, 3, 4]);
  });

  it('a headcount that becomes NULL, or stops being NULL, is rewritten; the same NULL again touches nothing', async () => {
    const { store } = await fresh(dialect, 'flip');
    const page = (headcount: number | null, at: string) =>
      store.commitPage({ customerId: C, sink: 'occupancy', at, checkpoint: checkpoint(C, null), records: [reading(0, headcount)] });
    await page(3, AT);
    await page(null, '2026-03-01T12:05:00.000Z');
    expect(await store.query('SELECT headcount FROM occupancy')).toEqual([{ headcount: null }]);
    await page(null, '2026-03-01T12:10:00.000Z');
    expect(await store.query('SELECT headcount, polled_at FROM occupancy')).toEqual([{ headcount: null, polled_at: AT }]);
    await page(0, '2026-03-01T12:15:00.000Z');
    expect(await store.query('SELECT headcount FROM occupancy')).toEqual([{ headcount: 0 }]);
  });

  it('still refuses a negative headcount, and one beyond an integer, committing nothing of the page', async () => {
    const { store } = await fresh(dialect, 'neg');
    const write = (headcount: number) =>
      store.commitPage({ customerId: C, sink: 'occupancy', at: AT, checkpoint: { ...checkpoint(C, AT) }, records: [reading(0, null), reading(5, headcount)] }).then(() => undefined, (e: unknown) => e);
    const negative = await write(-1);
    expect(negative).toBeInstanceOf(StoreError);
    expect((negative as Error).message).toMatch(/occupancy_readings_headcount_non_negative/);
    const huge = await write(2 ** 31);
    expect((huge as Error).message).toContain('occupancy record 1: headcount must be an integer from -2147483648 to 2147483647, got 2147483648');
    expect(await store.query('SELECT count(*) AS n FROM occupancy')).toEqual([{ n: 0 }]);
    expect(await store.getState(C, 'occupancy')).toBeUndefined();
  });
});

describe.each(DIALECTS)('the migration to nullable headcounts on %s', (dialect) => {
  let db: TestDatabase | undefined;
  afterEach(async () => {
    await db?.drop();
    db = undefined;
  });

  /** Readings as the previous version stored them, in its compact tables (keys, statuses, arrivals). */
  const SPACES = 7;
  const READINGS = 1500;
  function previousVersionRows() {
    const base = Date.parse('2026-02-01T00:00:00.000Z');
    return Array.from({ length: READINGS }, (_, i) => ({
      space: (i % SPACES) + 1,
      observedMs: base + i * 60_000 + (i % 1000),
      status: (i % 3) + 1,
      headcount: (i * 31) % 97,
      polled: i % 4 === 3 ? null : 1,
      delivered: i % 4 === 0 || i % 4 === 3 ? 2 : null,
      event: i % 5 === 0 ? null : `obs-${i}`,
    }));
  }

  async function previousVersion(): Promise<void> {
    db = await freshDatabase(dialect, 'hc-migration');
    await migrateAsReleased(db, '0010_sync_windows');
    const rows = previousVersionRows();
    // The views that version had: today's script also has views over tables it did not have yet (calendar_days).
    const then = ['occupancy', 'occupancy_latest', 'occupancy_hourly', 'sync_health', 'webhook_reconciliation'];
    const views = loadRepeatable(dialect)[0]!.statements.filter((s) => then.some((v) => new RegExp(`VIEW (IF EXISTS )?${v}\\b`).test(s)));
    const dictionary = [
      ...Array.from({ length: SPACES }, (_, s) => `INSERT INTO floor_spaces (customer_id, floor_space_id) VALUES ('${C}', 'fs-${s + 1}')`),
      ...['CurrentlyOccupied', 'CurrentlyUnoccupied', 'Unknown'].map((s) => `INSERT INTO occupancy_statuses (occupancy_status) VALUES ('${s}')`),
      `INSERT INTO occupancy_arrivals (source, arrived_at) VALUES ('poll', '2026-02-03T00:00:00.000Z')`,
      `INSERT INTO occupancy_arrivals (source, arrived_at) VALUES ('webhook', '2026-02-03T00:01:00.000Z')`,
    ];
    if (dialect === 'sqlite') {
      const sqlite = new Database(db.path!);
      try {
        sqlite.transaction(() => {
          for (const s of [...views, ...dictionary]) sqlite.exec(s);
          const insert = sqlite.prepare('INSERT INTO occupancy_readings (floor_space_key, observed_ms, status_code, headcount, polled_arrival, delivered_arrival, event_id) VALUES (?, ?, ?, ?, ?, ?, ?)');
          for (const r of rows) insert.run(r.space, r.observedMs, r.status, r.headcount, r.polled, r.delivered, r.event);
        })();
      } finally {
        sqlite.close();
      }
      return;
    }
    const sql = postgres(db.url.replace(/[?&]schema=[^&]+/, ''), { max: 1, onnotice: () => {}, connection: { search_path: `"${db.schema}"`, TimeZone: 'UTC' } });
    try {
      await sql.begin(async (tx) => {
        for (const s of [...views, ...dictionary]) await tx.unsafe(s);
        for (let i = 0; i < rows.length; i += 500) {
          const chunk = rows.slice(i, i + 500);
          const values = chunk.map((_, r) => `($${r * 7 + 1}::int, to_timestamp($${r * 7 + 2}::bigint / 1000.0), $${r * 7 + 3}::int, $${r * 7 + 4}::int, $${r * 7 + 5}::int, $${r * 7 + 6}::int, $${r * 7 + 7}::text)`).join(', ');
          await tx.unsafe(
            `INSERT INTO occupancy_readings (floor_space_key, observed_at, status_code, headcount, polled_arrival, delivered_arrival, event_text) VALUES ${values}`,
            chunk.flatMap((r) => [r.space, r.observedMs, r.status, r.headcount, r.polled, r.delivered, r.event]) as never[],
          );
        }
      });
    } finally {
      await sql.end();
    }
  }

  it('a database of the previous version keeps every reading, its keys and its indexes, and then takes NULL headcounts', async () => {
    await previousVersion();
    const store = await openTestStore(db!);
    try {
      const stored = await store.query<Record<string, unknown>>(
        'SELECT r.floor_space_key, f.floor_space_id, o.observed_at, o.occupancy_status, o.headcount, o.source, o.event_id, o.ingested_at, o.polled_at, o.delivered_at ' +
          'FROM occupancy o JOIN floor_spaces f USING (customer_id, floor_space_id) JOIN occupancy_readings r ON r.floor_space_key = f.floor_space_key AND ' +
          (dialect === 'sqlite' ? "strftime('%Y-%m-%dT%H:%M:%fZ', r.observed_ms / 1000.0, 'unixepoch')" : 'r.observed_at') +
          ' = o.observed_at ORDER BY o.observed_at',
      );
      const iso = (ms: number) => new Date(ms).toISOString();
      const statuses = ['CurrentlyOccupied', 'CurrentlyUnoccupied', 'Unknown'];
      expect(stored).toEqual(previousVersionRows().map((r) => {
        const polledFirst = r.delivered === null || (r.polled !== null && r.polled < r.delivered);
        return {
          floor_space_key: r.space,
          floor_space_id: `fs-${r.space}`,
          observed_at: iso(r.observedMs),
          occupancy_status: statuses[r.status - 1],
          headcount: r.headcount,
          source: polledFirst ? 'poll' : 'webhook',
          event_id: r.event,
          ingested_at: polledFirst ? '2026-02-03T00:00:00.000Z' : '2026-02-03T00:01:00.000Z',
          polled_at: r.polled === null ? null : '2026-02-03T00:00:00.000Z',
          delivered_at: r.delivered === null ? null : '2026-02-03T00:01:00.000Z',
        };
      }));
      if (dialect === 'sqlite') {
        const [table] = await store.query<{ sql: string }>("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'occupancy_readings'");
        expect(table!.sql).toMatch(/\)\s*WITHOUT ROWID$/);
        expect(table!.sql).not.toContain('__new');
        const indexes = await store.query<{ name: string; sql: string | null }>("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'occupancy_readings' ORDER BY name");
        expect(indexes.map((i) => i.name)).toEqual(['occupancy_readings_observed_idx']);
        expect(indexes[0]!.sql).toContain("strftime('%Y-%m-%dT%H:%M:%fZ', observed_ms / 1000.0, 'unixepoch')");
        // The time-range filter on the view is still served by the expression index.
        const plan = await store.query<{ detail: string }>("EXPLAIN QUERY PLAN SELECT * FROM occupancy WHERE observed_at >= '2026-02-01T10:00:00.000Z' AND observed_at < '2026-02-01T11:00:00.000Z'");
        expect(plan.map((p) => p.detail).join('\n')).toContain('occupancy_readings_observed_idx');
        expect(await store.query('PRAGMA legacy_alter_table')).toEqual([{ legacy_alter_table: 0 }]);
      } else {
        expect(await store.query("SELECT is_nullable FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'occupancy_readings' AND column_name = 'headcount'")).toEqual([{ is_nullable: 'YES' }]);
        expect((await store.query<{ indexname: string }>("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'occupancy_readings' ORDER BY indexname")).map((r) => r.indexname)).toEqual(['occupancy_readings_observed_idx', 'occupancy_readings_pkey']);
      }
      await store.commitPage({ customerId: C, sink: 'occupancy', at: AT, checkpoint: checkpoint(C, null), records: [{ ...reading(0, null), floorSpaceId: 'fs-3' }, { ...reading(1, 5), floorSpaceId: 'fs-new' }] });
      expect(await store.query("SELECT floor_space_id, headcount FROM occupancy WHERE observed_at >= '2026-03-01T00:00:00.000Z' ORDER BY floor_space_id")).toEqual([
        { floor_space_id: 'fs-3', headcount: null },
        { floor_space_id: 'fs-new', headcount: 5 },
      ]);
      // The dictionary's keys went on where they were: the new space is the eighth.
      expect(await store.query("SELECT floor_space_key FROM floor_spaces WHERE floor_space_id = 'fs-new'")).toEqual([{ floor_space_key: SPACES + 1 }]);
      expect(await store.query('SELECT count(*) AS n FROM occupancy')).toEqual([{ n: READINGS + 2 }]);
    } finally {
      await store.close();
    }
  });
});
