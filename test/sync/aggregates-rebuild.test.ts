import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { aggregateSettings } from '../../src/app/aggregates.ts';
import { FakeClock } from '../../src/clock.ts';
import { parseWorkingTime } from '../../src/config-working-time.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import type { Store } from '../../src/store/types.ts';
import { streams as allStreams } from '../../jobs/index.ts';
import { signatureHeader } from '../../src/webhooks/signature.ts';
import { startReceiver, type Receiver } from '../../src/webhooks/receiver.ts';
import { DELIVERIES } from '../support/deliveries.ts';
import { waitFor } from '../support/wait.ts';
import { DIALECTS, freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { customer, send, SECRET_A } from '../webhooks/helpers.ts';
import { dumpAggregates } from './aggregate-dump.ts';
import { DAY, HOUR, MIN, syncOnce, syncSettings } from './helpers.ts';

/**
 * Issue 40's "done when": the aggregates kept (poll pages invalidate, a refresh recomputes, deliveries recompute) equal the ones rebuilt from the readings, after a
 * backfill, an incremental sync, late webhook deliveries and a rewind read again, through the real engine and
 * receiver against the sandbox, on SQLite and Postgres.
 */

const START = Date.parse('2026-03-27T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

describe.each(DIALECTS)('aggregates kept and rebuilt (%s)', (dialect) => {
  let sandbox: Sandbox | undefined;
  let receiver: Receiver | undefined;
  let db: TestDatabase | undefined;
  let store: Store | undefined;
  afterEach(async () => {
    await receiver?.close();
    await sandbox?.close();
    await store?.close();
    await db?.drop();
  });

  it('are equal bit for bit after a backfill, a sync, late webhook deliveries and a rewind', { timeout: 60_000 }, async () => {
    const clock = new FakeClock(START + 3 * DAY);
    sandbox = await startSandbox({ clock, seed: 12, customers: 1, dataStart: START, lateArrivalMaxMs: 20 * MIN });
    const customerId = sandbox.customers[0]!.id;
    db = await freshDatabase(dialect, 'aggregates-e2e', { migrate: true });
    store = await openTestStore(db, { clock });
    const workingTime = parseWorkingTime('default:\n  zone: Europe/Berlin\n  start: "08:30"\n  end: "17:45"\n  holidays: [2026-03-30]\n', 'hours.yaml');
    const settings = aggregateSettings({ workingTime }, allStreams);
    await store.reconcileAggregates(customerId, settings);
    const settle = syncSettings({ initialHistoryMs: DAY, stepMs: HOUR, pageSize: 200, settleDelayMs: MIN, lookbackMs: 15 * MIN });

    // A backfill of the first two days, then the incremental sync of the last one.
    const backfill = await syncOnce({ store, sandbox, clock, settings: settle, request: { mode: 'backfill', from: START, to: START + 2 * DAY } });
    expect(backfill.outcomes.every((o) => o.status === 'succeeded'), JSON.stringify(backfill.outcomes)).toBe(true);
    const synced = await syncOnce({ store, sandbox, clock, settings: settle });
    expect(synced.outcomes.every((o) => o.status === 'succeeded')).toBe(true);
    // The engine's pages recorded what they made stale; the refresh (a run's end does it) recomputes it once.
    expect((await store.pendingAggregates(customerId))[0]?.floorSpaces).toBeGreaterThan(0);
    await store.refreshAggregates(customerId);
    expect(await store.pendingAggregates(customerId)).toEqual([]);
    const [count] = await store.query<{ n: number }>('SELECT count(*) AS n FROM occupancy_buckets');
    expect(Number(count?.n)).toBeGreaterThan(500);

    // Late deliveries: readings of hours long since synced, some at instants polled already (other values), some new.
    const spaces = (await store.query<{ id: string }>('SELECT floor_space_id AS id FROM floor_spaces ORDER BY floor_space_id')).map((r) => r.id);
    receiver = await startReceiver({ deliveries: DELIVERIES, store, customers: [customer(customerId, { webhookSecrets: [SECRET_A] })], clock });
    const before = await dumpAggregates(store);
    for (let k = 0; k < 12; k++) {
      const created = iso(START + 30 * HOUR + k * 47 * MIN + (k % 2 === 0 ? 0 : 5 * MIN));
      const body = JSON.stringify({
        Id: randomUUID(),
        Type: 'Occupancy',
        CustomerId: customerId,
        Created: created,
        Sent: iso(clock.now()),
        Data: spaces.slice(0, 4).map((FloorSpaceId, i) => ({ FloorSpaceId, OccupancyStatus: (k + i) % 3 === 0 ? 'Unoccupied' : 'CurrentlyOccupied', Headcount: (k + i) % 3 === 0 ? 0 : 1 + ((k * i) % 6) })),
      });
      const res = await send(receiver.url, { headers: { 'Content-Type': 'application/json', 'X-Service-Signature': signatureHeader(SECRET_A, body, Math.floor(clock.now() / 1000)) }, body });
      expect(res.status).toBe(200);
    }
    // The store refreshes what the deliveries made stale a second after the first of them: nobody calls it here.
    const writer = store;
    await waitFor(async () => (await writer.pendingAggregates(customerId)).length === 0, "the store's refresh after the deliveries", 10_000);
    expect(await dumpAggregates(store)).not.toEqual(before);

    // A rewind reads the last half day again (the sandbox's late arrivals come in with it).
    await store.changeState({ action: 'rewind', customerId, stateKey: 'occupancy', to: iso(clock.now() - 12 * HOUR), actor: 'test', at: iso(clock.now()) });
    clock.advance(2 * HOUR);
    const again = await syncOnce({ store, sandbox, clock, settings: settle });
    expect(again.outcomes.every((o) => o.status === 'succeeded')).toBe(true);
    await store.refreshAggregates(customerId);

    const kept = await dumpAggregates(store);
    const rebuilt = await store.rebuildAggregates({ customerId }, settings);
    expect(rebuilt.length).toBeGreaterThan(0);
    expect(rebuilt.every((b) => b.whole && b.change === '')).toBe(true);
    expect(await dumpAggregates(store)).toEqual(kept);
  });
});
