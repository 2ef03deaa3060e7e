import { afterEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/types.ts';
import { freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { runCli } from '../support/process.ts';
import { checkpoint } from './harness.ts';

/**
 * A whole rebuild (`aggregates rebuild`) holds what a refresh holds, a month of days at a time, however long a floor
 * space's history: it computed each space's buckets from its first reading to its last at once, so two readings
 * decades apart (a sensor's clock gone wrong once, within the years a reading may have) made it hold every hour
 * between them. The CLI runs here with a heap far below what those hours take (it ran out of memory).
 */

const C = '6f1c0d2e-8a4b-4c1d-9e2f-0123456789ab';
const YEARS = 60;

describe('a whole rebuild of a floor space whose readings are decades apart (sqlite)', () => {
  let db: TestDatabase | undefined;
  let store: Store | undefined;
  afterEach(async () => {
    await store?.close();
    await db?.drop();
  });

  it(`rebuilds ${YEARS} years of hours in a bounded heap, and gives the buckets of its readings`, { timeout: 120_000 }, async () => {
    db = await freshDatabase('sqlite', 'rebuild-bounded', { migrate: true });
    store = await openTestStore(db);
    const reading = (observedAt: string, status: string) => ({ floorSpaceId: 'fs-far', observedAt, occupancyStatus: status, headcount: 1, eventId: null });
    await store.commitPage({
      customerId: C,
      sink: 'occupancy',
      at: '2026-03-10T00:00:00.000Z',
      checkpoint: checkpoint(C, null),
      records: [reading('1990-01-01T09:00:00.000Z', 'CurrentlyOccupied'), reading(`${1990 + YEARS}-01-01T09:00:00.000Z`, 'CurrentlyUnoccupied')],
    });
    // Nothing left for the rebuild's refresh first: what is timed and bounded is the rebuild itself.
    await store.query('DELETE FROM aggregate_page_invalidations');
    await store.close();
    store = undefined;

    const result = await runCli(['aggregates', 'rebuild', '--json'], {
      env: { ...process.env, DATABASE_URL: db.url, CUSTOMER_ID: C, API_KEY: 'k', API_SECRET: 'a-secret-of-some-length-0123456789', LOG_LEVEL: 'warn', NODE_OPTIONS: '--max-old-space-size=160' },
      timeoutMs: 110_000,
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const rebuilt = JSON.parse(result.stdout) as { buildings: Array<{ buildingId: string; spaces: number; buckets: number }> };
    // Each reading holds the sensor's max hold into its own hour, no further: two buckets, decades apart.
    expect(rebuilt.buildings.map((b) => [b.buildingId, b.spaces, b.buckets])).toEqual([['', 1, 2]]);

    store = await openTestStore(db);
    const buckets = await store.query<{ d: string; o: number | string }>('SELECT local_date AS d, occupied_ms AS o FROM occupancy_buckets ORDER BY start_ms');
    expect(buckets.map((b) => [b.d, Number(b.o) > 0])).toEqual([
      ['1990-01-01', true],
      [`${1990 + YEARS}-01-01`, false],
    ]);
  });
});
