import { afterEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.ts';
import type { Store } from '../../src/store/types.ts';
import { runMain } from '../support/cli.ts';
import { freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { checkpoint } from '../store/harness.ts';

/**
 * `aggregates rebuild` and `report` refuse a --customer or --building that names nothing before any work: the
 * rebuild refreshed every pending page and rebuilt, and only then said the building was unknown; with no customer
 * configured, an unknown --customer rebuilt nothing (or reported nothing) and exited 0.
 */

const C = '6f1c0d2e-8a4b-4c1d-9e2f-0123456789ab';

describe('aggregates rebuild and report: unknown names (sqlite)', () => {
  let db: TestDatabase | undefined;
  let store: Store | undefined;
  afterEach(async () => {
    await store?.close();
    await db?.drop();
  });

  it('refuses an unknown --building or --customer with exit 64 before refreshing or rebuilding anything', async () => {
    db = await freshDatabase('sqlite', 'rebuild-names', { migrate: true });
    store = await openTestStore(db);
    await store.commitPage({ customerId: C, sink: 'floorSpaces', at: '2026-03-01T00:00:00.000Z', checkpoint: { ...checkpoint(C, null), stateKey: 'floor_spaces' }, records: [{ id: 'fs-1', buildingId: 'b-1', floorId: null, name: 'Desk', capacity: 1, spaceType: 'desk' }] });
    // A page a killed run left unrefreshed: a rebuild or report would refresh it first.
    await store.commitPage({ customerId: C, sink: 'occupancy', at: '2026-03-02T00:00:00.000Z', checkpoint: checkpoint(C, null), records: [{ floorSpaceId: 'fs-1', observedAt: '2026-03-02T09:00:00.000Z', occupancyStatus: 'CurrentlyOccupied', headcount: 1, eventId: null }] });
    const pending = async () => (await store!.pendingAggregates()).length;
    expect(await pending()).toBe(1);
    const configured = { DATABASE_URL: db.url, LOG_LEVEL: 'warn', CUSTOMER_ID: C, API_KEY: 'k', API_SECRET: 'a-secret-of-some-length-0123456789' };
    const reader = { DATABASE_URL: db.url, LOG_LEVEL: 'warn' };

    const building = await runMain(['aggregates', 'rebuild', '--building', 'no-such-building'], configured);
    expect([building.code, building.stdout]).toEqual([ExitCode.USAGE, '']);
    expect(building.stderr).toBe(`occupancy-sync: --building "no-such-building": no floor space of ${C} is in it. Fix: give a building id as buildings.id and floor_spaces.building_id hold it ('' for the floor spaces of no known building)\n`);

    const refusals = [
      await runMain(['aggregates', 'rebuild', '--customer', 'someone-else'], reader),
      await runMain(['report', '--customer', 'someone-else', '--from', '2026-03-01', '--to', '2026-03-03'], reader),
    ];
    for (const r of refusals) {
      expect([r.code, r.stdout]).toEqual([ExitCode.USAGE, '']);
      expect(r.stderr).toBe(`occupancy-sync: --customer "someone-else": the database holds no floor space of that customer. Fix: use one of ${C}\n`);
    }
    expect(await pending()).toBe(1);

    // The building known, the same command does the work.
    const done = await runMain(['aggregates', 'rebuild', '--building', 'b-1', '--json'], configured);
    expect(done.code, done.stderr).toBe(ExitCode.OK);
    expect((JSON.parse(done.stdout) as { buildings: Array<{ buildingId: string }> }).buildings.map((b) => b.buildingId)).toEqual(['b-1']);
    expect(await pending()).toBe(0);
  });
});
