import { randomUUID } from 'node:crypto';
import { openStore } from '../src/store/index.ts';
import type { DeliveryRecord, OccupancyRecord } from '../src/store/types.ts';
import { flags } from './child.ts';
import { freshDatabase } from '../test/support/databases.ts';
import { deliveryStream } from './receiver-load.ts';

/**
 * Our store alone on the receiver's write path: `store.storeDelivery` for the load test's deliveries (10 items each),
 * `--group` of them submitted at once (they share one group commit on SQLite), on a fresh SQLite file. No HTTP, no
 * signature, no parsing: the isolated figure behind the receiver's storage changes in docs/performance.md.
 *
 *   node --import tsx bench/store-deliveries.ts [--group 64] [--deliveries 20000]
 */

const args = flags();
const group = Number(args.get('group') ?? 64);
const total = Number(args.get('deliveries') ?? 20_000);
const fresh = await freshDatabase('sqlite', 'store', { migrate: true });
try {
  const store = await openStore(fresh.database);
  const customerId = randomUUID();
  const next = deliveryStream(customerId);
  const deliveries = Array.from({ length: total }, () => {
    const d = next();
    const delivery: DeliveryRecord = { id: d.id, customerId, type: 'Occupancy', createdAt: d.created, sentAt: d.created, receivedAt: d.created, body: d.body };
    const occupancy: OccupancyRecord[] = d.items.map((item) => ({
      floorSpaceId: item.FloorSpaceId, observedAt: d.created, occupancyStatus: item.OccupancyStatus, headcount: item.Headcount, eventId: d.id,
    }));
    return { delivery, occupancy };
  });
  const started = performance.now();
  for (let i = 0; i < total; i += group) {
    await Promise.all(deliveries.slice(i, i + group).map((d) => store.storeDelivery(d.delivery, d.occupancy)));
  }
  const ms = performance.now() - started;
  await store.close();
  process.stdout.write(`${total} deliveries, ${group} at a time: ${((ms * 1000) / total).toFixed(1)} us per delivery, ${Math.round((total / ms) * 1000)}/s\n`);
} finally {
  await fresh.drop();
}
