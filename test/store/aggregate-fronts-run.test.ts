import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { parseWorkingTime } from '../../src/config-working-time.ts';
import { REFRESH_INTERVAL_MS } from '../../src/store/run-refresh.ts';
import type { AggregateSettings, Store } from '../../src/store/index.ts';
import { DIALECTS, freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { waitFor } from '../support/wait.ts';
import { dumpAggregates } from '../sync/aggregate-dump.ts';

/**
 * A run's refreshes beside it leave each floor space's latest hour and day pending (src/store/aggregate-fronts.ts),
 * in a building whose local hours start at half past a UTC hour and whose working day starts inside one: the buckets
 * they write stop where the hour of the last reading starts, its day is not summed, and after the run's end the kept
 * aggregates equal a rebuild.
 */

const C = 'c1';
const MIN = 60_000;
const KOLKATA = parseWorkingTime('default:\n  zone: Asia/Kolkata\n  days: [1, 2, 3, 4, 5]\n  start: "08:15"\n  end: "17:00"\n', 'kolkata.yaml');
const SETTINGS: AggregateSettings = { workingTime: KOLKATA, maxHoldMs: 15 * MIN };
const DAY = Date.parse('2026-03-03T00:00:00.000Z');
const checkpoint = { customerId: C, stateKey: '', watermark: null, windowStart: null, windowEnd: null, pageCursor: null, rangeStart: null, rangeEnd: null };

async function commit(store: Store, sink: 'occupancy' | 'buildings' | 'floorSpaces', records: unknown[], at = '2026-03-10T00:00:00.000Z'): Promise<void> {
  await store.commitPage({ customerId: C, sink, records: records as never, at, checkpoint: { ...checkpoint, stateKey: sink } });
}

/** Both floor spaces' readings in [from, to) of one every 7 minutes from DAY. */
function readings(from: number, to: number): unknown[] {
  const out: unknown[] = [];
  for (const space of ['k1', 'k2']) {
    for (let i = Math.ceil((from - DAY) / (7 * MIN)), at = DAY + i * 7 * MIN; at < to; i++, at += 7 * MIN) {
      out.push({ floorSpaceId: space, observedAt: new Date(at).toISOString(), occupancyStatus: i % 3 === 0 ? 'Unoccupied' : 'CurrentlyOccupied', headcount: i % 4, eventId: null });
    }
  }
  return out;
}

const count = async (store: Store, sql: string) => Number((await store.query<{ n: unknown }>(sql))[0]?.n ?? 0);

describe.each(DIALECTS)('refreshes beside a run in Kolkata (%s)', (dialect) => {
  let db: TestDatabase | undefined;
  let store: Store | undefined;
  afterEach(async () => {
    await store?.close();
    await db?.drop();
  });

  it("stop at the hour of each space's last reading and leave its day, and the run's end makes the aggregates equal a rebuild", { timeout: 60_000 }, async () => {
    db = await freshDatabase(dialect, 'agg-fronts', { migrate: true });
    const clock = new FakeClock(Date.parse('2026-03-10T00:00:00.000Z'));
    store = await openTestStore(db, { clock });
    await commit(store, 'buildings', [{ id: 'b-kol', name: 'Lotus Tower', timeZone: 'Asia/Kolkata' }]);
    await commit(store, 'floorSpaces', ['k1', 'k2'].map((id) => ({ id, buildingId: 'b-kol', floorId: 'b-kol-1', name: id, capacity: 4, spaceType: 'desk' })));
    // The customer's settings, as a run's start gives them (nothing is pending yet).
    await store.refreshAggregates(C, SETTINGS);
    const beside = async (from: number, to: number, cut: number, what: string) => {
      // The last page commits 15 s after the first: a refresh starts beside the run. It replaces the pages' rows (and
      // the one the refresh before left) with one of what it leaves, in its transaction.
      const first = new Date(clock.now()).toISOString();
      await commit(store!, 'occupancy', readings(from, to - 7 * MIN), first);
      clock.advance(REFRESH_INTERVAL_MS);
      await commit(store!, 'occupancy', readings(to - 7 * MIN, to), new Date(clock.now()).toISOString());
      await waitFor(async () => (await count(store!, 'SELECT count(*) AS n FROM aggregate_page_invalidations')) === 1, what, 10_000);
      expect(await count(store!, `SELECT count(*) AS n FROM occupancy_buckets WHERE end_ms > ${cut}`)).toBe(0);
      expect(await count(store!, `SELECT count(*) AS n FROM occupancy_buckets WHERE end_ms = ${cut}`)).toBe(2);
      // Stale since the first of these pages, which wrote into the hour left: not since the run's first page.
      expect(await store!.pendingAggregates(C)).toMatchObject([{ floorSpaces: 2, since: first }]);
    };
    // The last reading, 02:55 UTC, is 08:25 in Kolkata, in the 08:00 hour (02:30 UTC), which the working day cuts at
    // 08:15: neither piece is written, the 07:00 hour is; the day of 2026-03-03 is not summed.
    await beside(DAY, DAY + 180 * MIN, DAY + 150 * MIN, 'the first refresh beside the run');
    expect(await count(store, 'SELECT count(*) AS n FROM occupancy_days')).toBe(0);
    // The last reading, 23:55 UTC, is 05:25 on 2026-03-04 in Kolkata, in the hour from 23:30 UTC: 2026-03-03 is
    // summed now, with the buckets the first refresh wrote; 2026-03-04 is not.
    await beside(DAY + 180 * MIN, DAY + 24 * 60 * MIN, DAY + 23.5 * 60 * MIN, 'the second refresh beside the run');
    expect(await store.query('SELECT DISTINCT local_date FROM occupancy_days')).toEqual([{ local_date: '2026-03-03' }]);
    // The run's end.
    expect((await store.refreshAggregates(C)).left).toBe(0);
    expect(await store.pendingAggregates(C)).toEqual([]);
    const kept = await dumpAggregates(store);
    expect(kept.length).toBeGreaterThan(0);
    await store.rebuildAggregates({ customerId: C }, SETTINGS);
    expect(await dumpAggregates(store)).toEqual(kept);
  });
});
