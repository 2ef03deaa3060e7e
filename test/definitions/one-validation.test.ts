import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { startSandbox, HOSTILE_VALUES, type Sandbox } from '../../src/sandbox/index.ts';
import type { Store } from '../../src/store/types.ts';
import { signatureHeader } from '../../src/webhooks/signature.ts';
import { startReceiver, type Receiver } from '../../src/webhooks/receiver.ts';
import { DELIVERIES } from '../support/deliveries.ts';
import { DIALECTS, freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { CUSTOMER_A, SECRET_A, customer, delivery, send } from '../webhooks/helpers.ts';
import { HOUR, MIN, syncOnce, syncSettings } from '../sync/helpers.ts';

/**
 * One validation of a reading, whichever way it arrives (issue 27): the values no reading may carry (the sandbox's
 * HOSTILE_VALUES), polled in a page and delivered by a webhook, give the same outcome on both dialects: each refused,
 * quarantined with the same reason, and nothing of them stored. A delivery is also kept verbatim (its body), so one
 * whose JSON holds a NUL or a lone surrogate is refused whole before any item is read (a body SQL's JSON functions
 * could not read), on both dialects alike.
 */

/** The item's field each record column is read from, polled and delivered (jobs/streams.yaml). */
const FIELDS = {
  headcount: { polled: 'headcount', delivered: 'Headcount' },
  floorSpaceId: { polled: 'floorSpaceId', delivered: 'FloorSpaceId' },
  occupancyStatus: { polled: 'occupancyStatus', delivered: 'OccupancyStatus' },
} as const;

/** `Headcount: expected ...` and `headcount: expected ...` are the same reason, about the same column. */
function byColumn(reason: string, way: 'polled' | 'delivered'): string {
  const field = Object.entries(FIELDS).find(([, f]) => reason.startsWith(`${f[way]}: `));
  return field ? `${field[0]}: ${reason.slice(field[1][way].length + 2)}` : reason;
}

const START = Date.parse('2026-01-10T00:00:00.000Z');

describe.each(DIALECTS)('the same hostile readings polled and delivered (%s)', (dialect) => {
  let sandbox: Sandbox | undefined;
  let receiver: Receiver | undefined;
  const dbs: Array<{ db: TestDatabase; store: Store }> = [];
  afterEach(async () => {
    await receiver?.close();
    await sandbox?.close();
    for (const { db, store } of dbs.splice(0)) {
      await store.close();
      await db.drop();
    }
  });
  async function database(name: string) {
    const db = await freshDatabase(dialect, name, { migrate: true });
    const store = await openTestStore(db);
    dbs.push({ db, store });
    return store;
  }
  const quarantined = (store: Store) => store.query<{ reason: string; record: string }>('SELECT reason, record FROM quarantined_records ORDER BY reason');

  it('are refused alike: the same reasons, none stored, on both paths', async () => {
    const clock = new FakeClock(START);
    sandbox = await startSandbox({ clock, seed: 9, customers: 1, dataStart: START - 2 * HOUR, lateArrivalMaxMs: 0, misbehave: 'hostileItems' });
    const polledStore = await database('hostile-polled');
    const report = await syncOnce({ store: polledStore, sandbox, clock, settings: syncSettings({ initialHistoryMs: HOUR, stepMs: HOUR, pageSize: 500, settleDelayMs: MIN }) });
    expect(report.outcomes.every((o) => o.status === 'succeeded')).toBe(true);
    const polled = (await quarantined(polledStore)).map((q) => byColumn(q.reason, 'polled'));

    const deliveredStore = await database('hostile-delivered');
    receiver = await startReceiver({ deliveries: DELIVERIES, store: deliveredStore, customers: [customer(CUSTOMER_A, { webhookSecrets: [SECRET_A] })], clock: new FakeClock(Date.parse('2026-01-01T10:00:30Z')) });
    const good = { FloorSpaceId: '9e8d7c6b-0000-4000-8000-000000000001', OccupancyStatus: 'CurrentlyOccupied', Headcount: 3 };
    const unreadableBody = (v: unknown) => typeof v === 'string' && /[\u0000\ud800-\udfff]/.test(v);
    const post = (items: unknown[]) => {
      const body = JSON.stringify(delivery({ Data: [good, ...items] }));
      const t = Math.floor(Date.parse('2026-01-01T10:00:30Z') / 1000);
      return send(receiver!.url, { headers: { 'Content-Type': 'application/json', 'X-Service-Signature': signatureHeader(SECRET_A, body, t) }, body });
    };
    const itemOf = (h: (typeof HOSTILE_VALUES)[number]) => ({ ...good, [FIELDS[h.field].delivered]: h.value });
    const readable = HOSTILE_VALUES.filter((h) => !unreadableBody(h.value));
    const res = await post(readable.map(itemOf));
    expect(res.status).toBe(200);
    for (const h of HOSTILE_VALUES.filter((x) => unreadableBody(x.value))) {
      const refused = await post([itemOf(h)]);
      expect(refused.status).toBe(400);
    }
    const delivered = (await quarantined(deliveredStore)).map((q) => byColumn(q.reason, 'delivered'));

    expect(polled).toHaveLength(HOSTILE_VALUES.length);
    const polledReadable = (await quarantined(polledStore)).filter((q) => !unreadableBody(JSON.parse(q.record)[Object.keys(FIELDS).find((f) => q.reason.startsWith(`${f}: `))!]));
    expect(delivered.sort()).toEqual(polledReadable.map((q) => byColumn(q.reason, 'polled')).sort());
    expect(delivered).toHaveLength(readable.length);
    // The good item alone was stored from the delivery; no hostile value reached the occupancy table on either path.
    expect(await deliveredStore.query('SELECT floor_space_id FROM occupancy')).toHaveLength(1);
    const [row] = await polledStore.query<{ n: unknown }>(`SELECT count(*) AS n FROM occupancy WHERE headcount > 2147483647 OR headcount < 0 OR floor_space_id = '' OR occupancy_status = ''`);
    expect(Number(row!.n)).toBe(0);
  });
});
