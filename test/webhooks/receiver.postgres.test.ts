import { DELIVERIES } from '../support/deliveries.ts';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import type { Store } from '../../src/store/types.ts';
import { startReceiver, type Receiver } from '../../src/webhooks/receiver.ts';
import { signatureHeader } from '../../src/webhooks/signature.ts';
import { CUSTOMER_A, SECRET_A, customer, delivery, flakyStore, send } from './helpers.ts';
import { migratedStore, type TestDatabase } from '../support/databases.ts';

const NOW = Date.UTC(2026, 0, 1, 10, 0, 5);
let pg: TestDatabase & { store: Store };
let store: Store;
let receiver: Receiver | undefined;

beforeEach(async () => {
  pg = await migratedStore('postgres', 'webhooks');
  store = pg.store;
});

afterEach(async () => {
  await receiver?.close();
  await pg.drop();
});

it('stores gzip and plain deliveries in Postgres once each, acknowledging retries and answering 503 on failure', async () => {
  let failing = false;
  receiver = await startReceiver({ deliveries: DELIVERIES, 
    store: flakyStore(store, { failing: () => failing }),
    customers: [customer(CUSTOMER_A, { webhookSecrets: [SECRET_A] })],
    clock: new FakeClock(NOW),
  });
  const post = (body: object, t: number, gzip = false) => {
    const raw = Buffer.from(JSON.stringify(body));
    return send(receiver!.url, {
      body: gzip ? gzipSync(raw) : raw,
      headers: {
        'Content-Type': 'application/json; charset=utf-8',
        'X-Service-Signature': signatureHeader(SECRET_A, raw, t),
        ...(gzip && { 'Content-Encoding': 'gzip' }),
      },
    });
  };
  const t = Math.floor(NOW / 1000);
  const first = delivery();
  const second = delivery({ Created: '2026-01-01T10:05:00+00:00' });
  expect((await post(first, t)).json).toEqual({ status: 'stored' });
  expect((await post(second, t, true)).json).toEqual({ status: 'stored' });
  expect((await post(first, t + 10, true)).json).toEqual({ status: 'duplicate' });
  failing = true;
  expect((await post(delivery(), t)).status).toBe(503);

  const deliveries = await store.query<{ id: string; attempts: number }>('SELECT id, attempts FROM webhook_deliveries ORDER BY created_at');
  expect(deliveries.map((d) => [d.id, Number(d.attempts)])).toEqual([[first.Id, 2], [second.Id, 1]]);
  const rows = await store.query<{ observed_at: unknown; source: string }>('SELECT observed_at, source FROM occupancy ORDER BY observed_at, floor_space_id');
  expect(rows).toHaveLength(4);
  expect(rows.every((r) => r.source === 'webhook')).toBe(true);
  expect(new Date(rows[3]!.observed_at as string).toISOString()).toBe('2026-01-01T10:05:00.000Z');
});
