import { DELIVERIES } from '../support/deliveries.ts';
import { afterEach, expect, it } from 'vitest';
import { createApiClient, type ApiClient } from '../../src/api/index.ts';
import { FakeClock } from '../../src/clock.ts';
import { resolveConfig, type CustomerConfig } from '../../src/config.ts';
import { memoryLogger } from '../../src/logger.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import type { Store } from '../../src/store/types.ts';
import { runOnce } from '../../src/app/run-once.ts';
import { selectStreams } from '../../src/app/streams.ts';
import { createWebhookAdmin, generateSecret } from '../../src/webhooks/admin.ts';
import { startReceiver, type Receiver } from '../../src/webhooks/receiver.ts';
import { flakyStore } from './helpers.ts';
import { migratedStore } from '../support/databases.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

type Row = { customer_id: string; floor_space_id: string; observed_at: string; occupancy_status: string; headcount: number };
const key = (customerId: string, floorSpaceId: string, at: string, status: string, headcount: number | null) =>
  `${customerId}|${floorSpaceId}|${at}|${status}|${headcount}`;

it('receives a day of occupancy for two customers (gzip for one, a secret rotation, receiver failures): every observation stored once', async () => {
  const T0 = Date.UTC(2026, 0, 12);
  const clock = new FakeClock(T0);
  const { logger, lines } = memoryLogger({ level: 'info' });
  const sandbox: Sandbox = await startSandbox({ clock, seed: 7, buildingsPerCustomer: 1, floorSpacesPerBuilding: 3, dataStart: T0 - 2 * HOUR });
  cleanups.push(() => sandbox.close());
  const { store: realStore, drop } = await migratedStore('sqlite', 'webhooks');
  cleanups.push(drop);
  // The first 3 storeDelivery calls fail, then every 11th: the receiver answers 503 and the sandbox retries.
  let calls = 0;
  const store: Store & { failures: number } = flakyStore(realStore, { failing: () => ++calls <= 3 || calls % 11 === 0 });

  const [a, b] = sandbox.customers;
  const secretA1 = generateSecret();
  const secretA2 = generateSecret();
  const secretB = generateSecret();
  const headerB = { key: 'X-Webhook-Token', value: 'customer-b-shared-header-value' };
  const configFor = (secretsA: string[]): CustomerConfig[] => [
    { id: a!.id, apiKey: a!.writeKey.key, apiSecret: a!.writeKey.secret, webhookSecrets: secretsA, webhookHeaders: {} },
    { id: b!.id, apiKey: b!.writeKey.key, apiSecret: b!.writeKey.secret, webhookSecrets: [secretB], webhookHeaders: { [headerB.key]: headerB.value } },
  ];

  let receiver: Receiver = await startReceiver({ deliveries: DELIVERIES,  store, customers: configFor([secretA1]), clock, logger });
  const port = receiver.port;
  cleanups.push(() => receiver.close());
  /** Restarting on the same port, as a redeploy with a new configuration would. */
  const restart = async (secretsA: string[]) => {
    await receiver.close();
    receiver = await startReceiver({ deliveries: DELIVERIES,  store, customers: configFor(secretsA), clock, logger, port });
  };

  const clients: ApiClient[] = [a!, b!].map((c) => createApiClient({ baseUrl: sandbox.url, apiKey: c.writeKey.key, apiSecret: c.writeKey.secret, clock }));
  cleanups.push(() => Promise.all(clients.map((c) => c.close())));
  const [adminA, adminB] = clients.map((c) => createWebhookAdmin(c));
  const hookA = await adminA!.register({ url: receiver.url, eventTypes: ['Occupancy'], signatureSecret: secretA1, compress: true });
  await adminB!.register({ url: receiver.url, eventTypes: ['Occupancy'], signatureSecret: secretB, additionalHeaders: [headerB] });

  const end = T0 + 24 * HOUR;
  while (clock.now() < end + 15 * MINUTE) {
    clock.advance(5 * MINUTE);
    await sandbox.pumpDeliveries();
    // Rotation as docs/webhooks.md describes it: the receiver gets the new secret with the old one as previous,
    // the webhook switches half an hour later, and the previous secret goes once retries are over.
    if (clock.now() === T0 + 12 * HOUR) await restart([secretA2, secretA1]);
    if (clock.now() === T0 + 12 * HOUR + 30 * MINUTE) {
      const updated = await adminA!.update(hookA.id, { signatureSecret: secretA2 });
      expect(updated.signed).toBe(true);
    }
    if (clock.now() === T0 + 13 * HOUR) await restart([secretA2]);
  }

  const storedA = (records: Array<Record<string, unknown>>, index: number) =>
    records.filter((r) => r.outcome === 'stored' && r.customerId === a!.id && r.secretIndex === index).length;
  const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(storedA(records, 1)).toBeGreaterThan(0); // the previous secret was needed during the changeover
  expect(storedA(records, 0)).toBeGreaterThan(200);
  const stored = records.filter((r) => r.outcome === 'stored');
  expect(stored.filter((r) => r.customerId === a!.id).every((r) => r.gzip === true)).toBe(true);
  expect(stored.filter((r) => r.customerId === b!.id).every((r) => r.gzip === false)).toBe(true);
  expect(store.failures).toBeGreaterThan(20);
  expect(sandbox.stats.deliveries.failed).toBe(store.failures);
  expect(sandbox.stats.deliveries.abandoned).toBe(0);
  const finalNow = clock.now();
  for (const customer of [a!, b!]) {
    const expected = [...sandbox.truth.observations(customer.id, { from: T0 - 2 * HOUR, to: finalNow, visibleAt: finalNow })]
      .filter((o) => Date.parse(o.visibleAt) > T0)
      .map((o) => key(customer.id, o.floorSpaceId, o.created, o.occupancyStatus, o.headcount))
      .sort();
    const rows = await realStore.query<Row>(
      'SELECT customer_id, floor_space_id, observed_at, occupancy_status, headcount FROM occupancy WHERE customer_id = $1',
      [customer.id],
    );
    const actual = rows.map((r) => key(r.customer_id, r.floor_space_id, r.observed_at, r.occupancy_status, Number(r.headcount))).sort();
    expect(expected.length).toBeGreaterThan(24 * 12 * 3 - 3);
    expect(actual).toEqual(expected);
  }
  // A delivery that failed to store was retried: some deliveries record more than one attempt.
  const [{ n }] = (await realStore.query<{ n: number }>('SELECT COUNT(*) AS n FROM webhook_deliveries WHERE attempts > 1')) as [{ n: number }];
  expect(Number(n)).toBe(0); // a 503 stores nothing, so the retry is the first stored attempt
  for (const secret of [secretA1, secretA2, secretB, headerB.value]) expect(lines.join('\n')).not.toContain(secret);

  // Polling afterwards (the safety net) reads the same observations again: it must add none twice. The database then
  // holds the webhook observations plus what polling alone saw (created before T0's deliveries), each exactly once.
  const config = resolveConfig({ API_BASE_URL: sandbox.url, DATABASE_URL: 'file:/unused.db' });
  const report = await runOnce({ config, store: realStore, logger, customers: configFor([secretA2]), streams: selectStreams('occupancy'), clock, baseUrl: sandbox.url });
  expect(report.outcomes.map((o) => o.status)).toEqual(['succeeded', 'succeeded']);
  for (const outcome of report.outcomes) {
    const watermark = Date.parse(outcome.watermark!);
    expect(watermark).toBeGreaterThan(end);
    const expected = [...sandbox.truth.observations(outcome.customerId, { from: T0 - 2 * HOUR, to: finalNow, visibleAt: finalNow })]
      .filter((o) => Date.parse(o.created) < watermark || Date.parse(o.visibleAt) > T0)
      .map((o) => key(outcome.customerId, o.floorSpaceId, o.created, o.occupancyStatus, o.headcount))
      .sort();
    const rows = await realStore.query<Row>(
      'SELECT customer_id, floor_space_id, observed_at, occupancy_status, headcount FROM occupancy WHERE customer_id = $1',
      [outcome.customerId],
    );
    const actual = rows.map((r) => key(r.customer_id, r.floor_space_id, r.observed_at, r.occupancy_status, Number(r.headcount))).sort();
    // The poll re-read the whole webhook day, so "no duplicate" is tested, not vacuous.
    expect(outcome.records).toBeGreaterThan(24 * 12 * 3);
    expect(actual).toEqual(expected);
  }
});
