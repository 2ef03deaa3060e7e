import { describe, expect, it } from 'vitest';
import { startRetention } from '../../src/app/retention.ts';
import { memoryLogger } from '../../src/logger.ts';
import type { OccupancyRecord, Store } from '../../src/store/index.ts';
import { checkpoint, DIALECTS, fresh } from './harness.ts';

/**
 * Readings retention (READINGS_RETENTION, src/app/retention.ts and the store's pruneReadings): readings observed
 * before the cutoff go and every other stays exactly. On Postgres a month wholly older than the cutoff is its
 * partition dropped (the table gone, not its rows deleted), the month at the edge deleted row-wise in batches; on
 * SQLite, one table, every old row is deleted row-wise.
 */

const C = 'cust-r';
const SPACES = 4;
const STEP = 3 * 3_600_000;
/** Every 3 hours for each space from 2026-01-01 to 2026-03-31: three months. */
const START = Date.parse('2026-01-01T00:00:00.000Z');
const END = Date.parse('2026-04-01T00:00:00.000Z');
const CUTOFF = '2026-02-15T00:00:00.000Z';

function readings(): OccupancyRecord[] {
  const out: OccupancyRecord[] = [];
  for (let t = START; t < END; t += STEP) {
    for (let s = 0; s < SPACES; s++) out.push({ floorSpaceId: `fs-${s}`, observedAt: new Date(t + s * 1000).toISOString(), occupancyStatus: s % 2 ? 'CurrentlyOccupied' : 'CurrentlyUnoccupied', headcount: s, eventId: null });
  }
  return out;
}

async function load(store: Store): Promise<OccupancyRecord[]> {
  const all = readings();
  for (let i = 0; i < all.length; i += 500) {
    await store.commitPage({ customerId: C, sink: 'occupancy', at: '2026-04-01T00:00:00.000Z', checkpoint: checkpoint(C, null), records: all.slice(i, i + 500) });
  }
  return all;
}

/** Count and md5 of the readings at or after `from` (all of them without), as the documented view shows them. */
async function fingerprint(store: Store, from = '2000-01-01T00:00:00.000Z') {
  const rows = await store.query<{ floor_space_id: string; observed_at: string; occupancy_status: string; headcount: number }>(
    'SELECT floor_space_id, observed_at, occupancy_status, headcount FROM occupancy WHERE observed_at >= $1 ORDER BY observed_at, floor_space_id',
    [from],
  );
  return { n: rows.length, rows: JSON.stringify(rows) };
}

const tables = async (store: Store) =>
  (await store.query<{ name: string }>("SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE 'occupancy_readings%' ORDER BY 1")).map((r) => r.name);

describe.each(DIALECTS)('readings retention on %s', (dialect) => {
  it('readings before the cutoff go, every later one stays; on Postgres a month wholly older is its partition dropped', async () => {
    const { store } = await fresh(dialect, 'retention');
    const all = await load(store);
    const kept = await fingerprint(store, CUTOFF);
    const old = all.filter((r) => r.observedAt < CUTOFF);
    const january = all.filter((r) => r.observedAt < '2026-02-01');
    expect((await fingerprint(store)).n).toBe(all.length);
    expect(kept.n).toBe(all.length - old.length);
    if (dialect === 'postgres') {
      expect(await tables(store)).toEqual(['occupancy_readings', 'occupancy_readings_2026_01', 'occupancy_readings_2026_02', 'occupancy_readings_2026_03', 'occupancy_readings_2026_04', 'occupancy_readings_default']);
    }

    // Small batches, to see the row-wise part go in several.
    const passes = [];
    for (;;) {
      const pass = await store.pruneReadings(CUTOFF, 40);
      passes.push(pass);
      if (pass.rows < 40) break;
    }
    const rowWise = passes.reduce((n, p) => n + p.rows, 0);
    if (dialect === 'postgres') {
      // January dropped whole: its rows were never deleted one by one; February before the 15th was.
      expect(passes.flatMap((p) => p.partitions)).toEqual(['occupancy_readings_2026_01']);
      expect(rowWise).toBe(old.length - january.length);
      expect(await tables(store)).toEqual(['occupancy_readings', 'occupancy_readings_2026_02', 'occupancy_readings_2026_03', 'occupancy_readings_2026_04', 'occupancy_readings_default']);
    } else {
      expect(passes.flatMap((p) => p.partitions)).toEqual([]);
      expect(rowWise).toBe(old.length);
    }
    expect(passes.length).toBeGreaterThan(2);
    expect(await fingerprint(store)).toEqual(kept);
    // Nothing more to do; and a late reading of a dropped month is stored again (its partition made anew).
    expect(await store.pruneReadings(CUTOFF, 40)).toEqual({ partitions: [], rows: 0 });
    await store.commitPage({ customerId: C, sink: 'occupancy', at: '2026-04-02T00:00:00.000Z', checkpoint: checkpoint(C, null), records: [{ ...january[0]!, headcount: 9 }] });
    expect((await fingerprint(store)).n).toBe(kept.n + 1);
  }, 60_000);

  it('the daemons prune readings older than READINGS_RETENTION, and say what went', async () => {
    const { store, clock } = await fresh(dialect, 'retention-daemon');
    const all = await load(store);
    clock.set('2026-03-17T00:00:00.000Z');
    const { logger, records } = memoryLogger();
    const retention = startRetention({ store, retentionMs: 0, readingsRetentionMs: 30 * 86_400_000, clock, logger });
    try {
      await retention.prune();
      // The pass started with the retention may still be running: prune() shares it, or runs once more (nothing left).
      await retention.prune();
    } finally {
      await retention.stop();
    }
    const cutoff = '2026-02-15T00:00:00.000Z';
    expect((await fingerprint(store)).n).toBe(all.filter((r) => r.observedAt >= cutoff).length);
    const said = records().map((r) => String(r.msg)).filter((m) => /READINGS_RETENTION/.test(m));
    if (dialect === 'postgres') expect(said[0]).toBe(`dropped 1 partition(s) of readings observed before ${cutoff}: occupancy_readings_2026_01 (READINGS_RETENTION)`);
    expect(said.at(-1)).toMatch(new RegExp(`^deleted \\d+ reading\\(s\\) observed before ${cutoff} \\(READINGS_RETENTION\\)$`));
  }, 60_000);
});
