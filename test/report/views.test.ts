import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';
import { FakeClock } from '../../src/clock.ts';
import type { Store } from '../../src/store/types.ts';
import { loadFixture } from './fixture.ts';
import { DIALECTS, migratedStore, PG_BASE_URL, type TestDatabase } from '../support/databases.ts';

/**
 * The reporting views against a small fixture whose figures are computed by hand below, on both dialects.
 * The fixture goes in through the store (commitPage, storeDelivery, runs), exactly as sync and webhooks write it.
 * db/views/<dialect>.sql is the one definition of the views (the migrator re-applies it when it changes), so it must
 * define every view the migrations ever created.
 */

const hourly = (customer_id: string, floor_space_id: string, hour: string, readings: number, occupied_readings: number, total_headcount: number, avg_headcount: number, peak_headcount: number, occupied_share: number) =>
  ({ customer_id, floor_space_id, hour, readings, occupied_readings, total_headcount, avg_headcount, peak_headcount, occupied_share });

/** Each `CREATE VIEW name AS ...` statement of a SQL text, by view name (with its leading comment lines). */
function viewDefinitions(text: string): Map<string, string> {
  const views = new Map<string, string>();
  for (const statement of text.split('--> statement-breakpoint')) {
    const match = /CREATE VIEW (\w+) AS/.exec(statement);
    if (match) views.set(match[1]!, statement.trim());
  }
  return views;
}

it('db/views/*.sql defines every view the migrations created (the migrator applies it after them), and may define more', () => {
  const root = join(import.meta.dirname, '../..');
  for (const dialect of ['sqlite', 'pg']) {
    const folder = join(root, 'db/migrations', dialect);
    const latest = new Map<string, string>();
    for (const file of readdirSync(folder).filter((f) => f.endsWith('.sql')).sort()) {
      for (const [name, definition] of viewDefinitions(readFileSync(join(folder, file), 'utf8'))) latest.set(name, definition);
    }
    const documented = viewDefinitions(readFileSync(join(root, 'db/views', `${dialect}.sql`), 'utf8'));
    // A superset: views added after the migrations (the time-weighted ones) live in the script alone.
    expect([...documented.keys()].filter((name) => latest.has(name)).sort(), dialect).toEqual([...latest.keys()].sort());
  }
});

describe.each(DIALECTS)('reporting views on %s', (dialect) => {
  let target: TestDatabase & { store: Store };
  beforeEach(async () => {
    // The views come from the migrations (db/migrations/*/0001_reporting_views.sql), as in production.
    target = await migratedStore(dialect, 'views', { clock: new FakeClock('2026-01-06T00:00:00.000Z') });
    await loadFixture(target.store);
  });
  afterEach(async () => {
    await target.drop();
  });

  it('occupancy_latest holds exactly the latest reading of each customer and floor space', async () => {
    const rows = await target.store.query(
      'SELECT customer_id, floor_space_id, observed_at, occupancy_status, headcount, source, event_id FROM occupancy_latest ORDER BY customer_id, floor_space_id',
    );
    expect(rows).toEqual([
      { customer_id: 'c1', floor_space_id: 'A', observed_at: '2026-01-05T10:00:00.000Z', occupancy_status: 'CurrentlyOccupied', headcount: 7, source: 'poll', event_id: 'o4' },
      { customer_id: 'c1', floor_space_id: 'B', observed_at: '2026-01-05T23:59:00.000Z', occupancy_status: 'CurrentlyOccupied', headcount: 1, source: 'webhook', event_id: 'dlv-1' },
      { customer_id: 'c2', floor_space_id: 'A', observed_at: '2026-01-05T09:10:00.000Z', occupancy_status: 'CurrentlyOccupied', headcount: 10, source: 'poll', event_id: 'o6' },
    ]);
  });

  it('occupancy_hourly buckets by UTC hour with hand-computed counts, averages, peaks and occupied shares', async () => {
    const rows = await target.store.query('SELECT * FROM occupancy_hourly ORDER BY customer_id, floor_space_id, hour');
    expect(rows).toEqual([
      // 09:00, 09:20, 09:59:59.999 -> 3 readings, 2 occupied, headcounts 4 + 2 + 0 = 6.
      hourly('c1', 'A', '2026-01-05T09:00:00.000Z', 3, 2, 6, 2, 4, 2 / 3),
      // 10:00:00.000 starts the next hour.
      hourly('c1', 'A', '2026-01-05T10:00:00.000Z', 1, 1, 7, 7, 7, 1),
      hourly('c1', 'B', '2026-01-05T09:00:00.000Z', 1, 0, 0, 0, 0, 0),
      hourly('c1', 'B', '2026-01-05T23:00:00.000Z', 1, 1, 1, 1, 1, 1),
      hourly('c2', 'A', '2026-01-05T09:00:00.000Z', 1, 1, 10, 10, 10, 1),
    ]);
    // Filtering on hour with ISO text parameters works the same on both dialects.
    const filtered = await target.store.query('SELECT floor_space_id FROM occupancy_hourly WHERE hour >= $1 AND hour < $2 AND customer_id = $3', [
      '2026-01-05T10:00:00.000Z',
      '2026-01-06T00:00:00.000Z',
      'c1',
    ]);
    expect(filtered.map((r) => r.floor_space_id).sort()).toEqual(['A', 'B']);
  });

  it('sync_health shows per customer and stream the watermark, its lag behind now and the latest run', async () => {
    const before = Date.now();
    const rows = await target.store.query<Record<string, unknown>>('SELECT * FROM sync_health ORDER BY customer_id, stream');
    const after = Date.now();
    const lags = rows.map((r) => r.lag_seconds);
    expect(rows.map(({ lag_seconds: _lag, last_run_id: _id, ...rest }) => rest)).toEqual([
      {
        customer_id: 'c1', stream: 'buildings', watermark: null, state_updated_at: null,
        last_run_mode: 'full', last_run_status: 'succeeded', last_run_started_at: '2026-01-05T09:05:00.000Z', last_run_finished_at: '2026-01-05T09:06:00.000Z',
        last_run_pages: 0, last_run_records: 0, last_run_rejected: 0, last_run_error: null, last_success_at: '2026-01-05T09:06:00.000Z',
      },
      {
        customer_id: 'c1', stream: 'occupancy', watermark: '2026-01-05T10:00:00.000Z', state_updated_at: '2026-01-06T00:00:00.000Z',
        last_run_mode: 'incremental', last_run_status: 'failed', last_run_started_at: '2026-01-05T09:00:00.000Z', last_run_finished_at: '2026-01-05T09:00:30.000Z',
        last_run_pages: 0, last_run_records: 0, last_run_rejected: 0, last_run_error: 'boom', last_success_at: '2026-01-05T08:01:00.000Z',
      },
      {
        customer_id: 'c2', stream: 'occupancy', watermark: '2026-01-05T09:00:00.000Z', state_updated_at: '2026-01-06T00:00:00.000Z',
        last_run_mode: null, last_run_status: null, last_run_started_at: null, last_run_finished_at: null,
        last_run_pages: null, last_run_records: null, last_run_rejected: null, last_run_error: null, last_success_at: null,
      },
    ]);
    expect(lags[0]).toBeNull();
    for (const [i, watermark] of [[1, '2026-01-05T10:00:00.000Z'], [2, '2026-01-05T09:00:00.000Z']] as const) {
      const lag = lags[i] as number;
      expect(typeof lag).toBe('number');
      expect(lag).toBeGreaterThanOrEqual((before - Date.parse(watermark)) / 1000 - 1);
      expect(lag).toBeLessThanOrEqual((after - Date.parse(watermark)) / 1000 + 1);
    }
  });

  it.runIf(dialect === 'postgres')('buckets by UTC hour whatever the session time zone (half-hour offsets too)', async () => {
    const sql = postgres(PG_BASE_URL, { max: 1, onnotice: () => {} });
    try {
      await sql.unsafe("SET TimeZone = 'Asia/Kolkata'");
      const rows = await sql.unsafe(
        `SELECT to_char(hour AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI') AS h FROM "${target.schema}".occupancy_hourly WHERE customer_id = 'c1' AND floor_space_id = 'A' ORDER BY hour`,
      );
      expect(rows.map((r) => r.h)).toEqual(['2026-01-05T09:00', '2026-01-05T10:00']);
    } finally {
      await sql.end();
    }
  });
});
