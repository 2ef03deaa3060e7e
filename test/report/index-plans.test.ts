import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.ts';
import type { OccupancyRecord } from '../../src/store/types.ts';
import { DIALECTS, migratedStore, type TestDatabase } from '../support/databases.ts';
import type { Store } from '../../src/store/types.ts';

/**
 * Users' SQL against the documented `occupancy` view and `occupancy_latest` stays index-served over the compact
 * tables: by time range (SQLite: an index on the view's own observed_at expression; Postgres: observed_at itself)
 * and by floor space (the primary key). Checked on the plans each dialect chooses for a realistic table, with
 * statistics, so a change that falls back to scanning every reading fails here. docs/reporting.md shows the plans.
 * On Postgres the readings are monthly partitions (migration 0013): each partition that holds readings is read
 * through its own copy of the index, and a time range opens only its months; an empty partition (the next month,
 * made ahead, and the default one) may be scanned, which reads nothing.
 */

const SPACES = 40;
const TICKS = 250;

function readings(tick: number): OccupancyRecord[] {
  const at = new Date(Date.parse('2026-01-05T00:00:00.000Z') + tick * 300_000).toISOString();
  return Array.from({ length: SPACES }, (_, s) => ({ floorSpaceId: `fs-${s}`, observedAt: at, occupancyStatus: s % 2 ? 'CurrentlyOccupied' : 'Unoccupied', headcount: s, eventId: null }));
}

async function plan(target: TestDatabase & { store: Store }, query: string, params: unknown[]): Promise<string> {
  if (target.dialect === 'sqlite') {
    const rows = await target.store.query<{ detail: string }>(`EXPLAIN QUERY PLAN ${query}`, params);
    return rows.map((r) => r.detail).join('\n');
  }
  const rows = await target.store.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${query}`, params);
  return rows.map((r) => r['QUERY PLAN']).join('\n');
}

describe.each(DIALECTS)('index plans of the reporting SQL on %s', (dialect) => {
  let target: TestDatabase & { store: Store };
  /** A scan of every reading of a table that holds some: r and x are the views' aliases of occupancy_readings. */
  let fullScan: RegExp;
  /** The time index: SQLite's on the view's expression, Postgres's on each partition (named after the partition). */
  const timeIndex = dialect === 'sqlite' ? /occupancy_readings_observed_idx/ : /Index Scan (using|on) occupancy_readings_2026_01_observed_at_idx\b/;
  const primaryKey = dialect === 'sqlite' ? /SEARCH r USING PRIMARY KEY \(floor_space_key=\?/ : /Index Scan (using|on) occupancy_readings_2026_01_pkey\b/;
  beforeEach(async () => {
    target = await migratedStore(dialect, 'plans');
    const checkpoint = { customerId: 'c1', stateKey: 'occupancy', watermark: null, windowStart: null, windowEnd: null, pageCursor: null, rangeStart: null, rangeEnd: null };
    for (const customer of ['c1', 'c2']) {
      for (let tick = 0; tick < TICKS; tick += 25) {
        const records = Array.from({ length: 25 }, (_, i) => readings(tick + i)).flat();
        await target.store.commitPage({ customerId: customer, sink: 'occupancy', records, at: '2026-02-01T00:00:00.000Z', checkpoint: { ...checkpoint, customerId: customer } });
      }
    }
    await target.store.query(dialect === 'sqlite' ? 'ANALYZE' : 'ANALYZE occupancy_readings', []);
    if (dialect === 'postgres') await target.store.query('ANALYZE floor_spaces', []);
    const filled = dialect === 'sqlite' ? [] : (await target.store.query<{ p: string }>('SELECT DISTINCT tableoid::regclass::text AS p FROM occupancy_readings', [])).map((r) => r.p);
    if (dialect === 'postgres') expect(filled).toEqual(['occupancy_readings_2026_01']);
    fullScan = dialect === 'sqlite' ? /SCAN [rx]\b/ : new RegExp(`Seq Scan on (${filled.join('|')})\\b`);
  }, 60_000);
  afterEach(async () => {
    await target.drop();
  });

  it('a time range of one customer reads the time index, not every reading', async () => {
    const text = await plan(target, 'SELECT * FROM occupancy WHERE customer_id = $1 AND observed_at >= $2 AND observed_at < $3', ['c1', '2026-01-05T10:00:00.000Z', '2026-01-05T11:00:00.000Z']);
    expect(text).toMatch(timeIndex);
    expect(text).not.toMatch(fullScan);
    // Only the month asked for is opened.
    if (dialect === 'postgres') expect(new Set(text.match(/occupancy_readings_(\d{4}_\d{2}|default|migrated)\b/g))).toEqual(new Set(['occupancy_readings_2026_01']));
  });

  it('one floor space over time reads the primary key', async () => {
    const text = await plan(target, 'SELECT * FROM occupancy WHERE customer_id = $1 AND floor_space_id = $2 AND observed_at >= $3', ['c1', 'fs-3', '2026-01-05T10:00:00.000Z']);
    expect(text).toMatch(primaryKey);
    expect(text).not.toMatch(fullScan);
  });

  it('the latest reading per floor space descends the primary key once per floor space', async () => {
    const text = await plan(target, 'SELECT * FROM occupancy_latest WHERE customer_id = $1', ['c1']);
    // r is the latest reading, x the subquery that finds its time: neither may scan.
    expect(text).not.toMatch(fullScan);
    const rows = await target.store.query<{ observed_at: string }>('SELECT observed_at FROM occupancy_latest WHERE customer_id = $1', ['c1']);
    expect(rows).toHaveLength(SPACES);
    expect(new Set(rows.map((r) => r.observed_at))).toEqual(new Set([new Date(Date.parse('2026-01-05T00:00:00.000Z') + (TICKS - 1) * 300_000).toISOString()]));
  });

  it.runIf(dialect === 'postgres')('read-only sessions (report, status) plan without JIT and sort with more memory; writing sessions keep the server defaults', async () => {
    const settings = (store: Store) =>
      store.query<{ name: string; setting: string; unit: string | null; source: string }>("SELECT name, setting, unit, source FROM pg_settings WHERE name IN ('jit', 'work_mem') ORDER BY name", []);
    const reader = await openStore(target.database, { readonly: true });
    try {
      expect(await settings(reader)).toEqual([
        { name: 'jit', setting: 'off', unit: null, source: 'client' },
        { name: 'work_mem', setting: String(64 * 1024), unit: 'kB', source: 'client' },
      ]);
    } finally {
      await reader.close();
    }
    expect((await settings(target.store)).map((r) => r.source)).not.toContain('client');
  });
});
