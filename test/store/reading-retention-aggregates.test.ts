import { describe, expect, it } from 'vitest';
import { DEFAULT_WORKING_TIME } from '../../src/config-working-time.ts';
import type { AggregateSettings, OccupancyRecord, Store } from '../../src/store/index.ts';
import { DIALECTS, checkpoint, fresh } from './harness.ts';

/**
 * Readings retention and the time-weighted aggregates (src/store/reading-retention.ts): the aggregates of the hours
 * before the cutoff stay, and the hours after it that a deleted reading's hold reached are computed again from the
 * readings kept, so they equal a rebuild's, whole or over a range across the cutoff. Change-only sensors (a long
 * hold), buildings west and east of UTC (the bucket holding the cutoff is a whole hour in one, half past in the other).
 */

const C = 'cust-retention';
const HOUR = 3_600_000;
const SETTINGS: AggregateSettings = { workingTime: DEFAULT_WORKING_TIME, maxHoldMs: 12 * HOUR };
const CUTOFF = '2026-02-01T00:00:00.000Z';
const AT = '2026-03-01T00:00:00.000Z';

const reading = (space: string, observedAt: string, occupied: boolean): OccupancyRecord => ({
  floorSpaceId: space,
  observedAt,
  occupancyStatus: occupied ? 'CurrentlyOccupied' : 'CurrentlyUnoccupied',
  headcount: occupied ? 2 : 0,
  eventId: null,
});

/** The buckets that end after the cutoff, per floor space and start, with every figure: what retention must not leave stale. */
async function afterCutoff(store: Store): Promise<string[]> {
  const rows = await store.query<Record<string, unknown>>(
    `SELECT f.floor_space_id, b.start_ms, b.end_ms, b.local_date, b.local_hour, b.working, b.known_ms, b.occupied_ms, b.headcount_ms,
            b.headcount_known_ms, b.peak_headcount, b.readings
       FROM occupancy_buckets b JOIN floor_spaces f ON f.floor_space_key = b.floor_space_key
      WHERE b.end_ms > ${Date.parse(CUTOFF)} ORDER BY f.floor_space_id, b.start_ms`,
  );
  return rows.map((r) => Object.values(r).map((v) => (typeof v === 'boolean' ? Number(v) : String(v))).join(' '));
}

const bucketsBefore = async (store: Store) =>
  Number((await store.query<{ n: unknown }>(`SELECT count(*) AS n FROM occupancy_buckets WHERE end_ms <= ${Date.parse(CUTOFF)}`))[0]!.n);

describe.each(DIALECTS)('readings retention and the aggregates (%s)', (dialect) => {
  it('the hours after the cutoff that a deleted reading held are computed again from the readings kept: kept equals rebuilt', async () => {
    const { store } = await fresh(dialect, 'retention_aggregates');
    const commit = (sink: 'buildings' | 'floorSpaces' | 'occupancy', records: unknown[]) =>
      store.commitPage({ customerId: C, sink, at: AT, checkpoint: { ...checkpoint(C, null), stateKey: sink }, records: records as never });
    await commit('buildings', [
      { id: 'b-west', name: 'Harbour Hall', timeZone: 'America/New_York' },
      { id: 'b-east', name: 'Lotus Tower', timeZone: 'Asia/Kolkata' },
    ]);
    await commit('floorSpaces', [
      { id: 's-west', buildingId: 'b-west', floorId: 'f-3', name: 'west', capacity: 4, spaceType: 'room' },
      { id: 's-east', buildingId: 'b-east', floorId: 'f-1', name: 'east', capacity: 4, spaceType: 'room' },
    ]);
    await store.reconcileAggregates(C, SETTINGS);
    // Each space's last reading before the cutoff holds (12 h at most) across it, into February.
    const readings = ['s-west', 's-east'].flatMap((s) => [
      reading(s, '2026-01-30T20:00:00.000Z', true),
      reading(s, '2026-01-31T20:00:00.000Z', true),
      reading(s, '2026-02-01T03:00:00.000Z', false),
      reading(s, '2026-02-01T10:00:00.000Z', true),
      reading(s, '2026-02-02T10:00:00.000Z', false),
    ]);
    await commit('occupancy', readings);
    await store.refreshAggregates(C, SETTINGS);
    const before = await afterCutoff(store);
    const heldBefore = await bucketsBefore(store);

    const pruned = await store.pruneReadings(CUTOFF, 10_000);
    if (dialect === 'postgres') expect(pruned).toEqual({ partitions: ['occupancy_readings_2026_01'], rows: 0 });
    else expect(pruned).toEqual({ partitions: [], rows: 4 });
    // The pass marked both spaces stale from the cutoff; the next refresh computes those hours from what is kept.
    expect((await store.pendingAggregates(C)).map((p) => [p.floorSpaces, p.from])).toEqual([[2, CUTOFF]]);
    await store.refreshAggregates(C, SETTINGS);
    const kept = await afterCutoff(store);
    // The first February hours held the deleted 20:00 reading: they are unknown now, as the readings say.
    expect(kept).not.toEqual(before);
    // The hours before the cutoff keep their aggregates (reports still show them), as documented.
    expect(await bucketsBefore(store)).toBe(heldBefore);

    // A range across the cutoff, and everything, rebuilt from the readings: the same rows after the cutoff.
    await store.rebuildAggregates({ customerId: C, from: '2026-01-31', to: '2026-02-03' }, SETTINGS);
    expect(await afterCutoff(store)).toEqual(kept);
    await store.rebuildAggregates({ customerId: C }, SETTINGS);
    expect(await afterCutoff(store)).toEqual(kept);
    expect(await bucketsBefore(store)).toBe(0);

    // A pass with nothing to delete marks nothing.
    expect(await store.pruneReadings(CUTOFF, 10_000)).toEqual({ partitions: [], rows: 0 });
    expect(await store.pendingAggregates(C)).toEqual([]);
  });
});
