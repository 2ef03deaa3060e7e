import { DELIVERIES } from '../support/deliveries.ts';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/client.ts';
import { runOnce } from '../../src/app/run-once.ts';
import { FakeClock } from '../../src/clock.ts';
import { resolveConfig } from '../../src/config.ts';
import { silentLogger } from '../../src/logger.ts';
import { startSandbox } from '../../src/sandbox/index.ts';
import type { Store } from '../../src/store/types.ts';
import { createWebhookAdmin, generateSecret } from '../../src/webhooks/admin.ts';
import { startReceiver } from '../../src/webhooks/receiver.ts';
import { signatureHeader } from '../../src/webhooks/signature.ts';
import { streams } from '../../jobs/index.ts';
import { dataCheckLines, runDataChecks } from '../../src/app/data-checks.ts';
import { createMetrics } from '../../src/metrics.ts';
import { evaluateHealth } from '../../src/serve/health.ts';
import { childEnv } from '../sync/helpers.ts';
import { freshDatabase, openTestStore } from '../support/databases.ts';

/**
 * Webhook and poll reconciliation (issue 17): the sandbox drops every 4th tick's delivery on purpose; polling then
 * reads the same hours. The webhook_reconciliation view counts exactly the dropped readings as missed deliveries, and
 * a delivery polling never finds (before the watermark) as unconfirmed.
 */

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

interface Reconciliation {
  customer_id: string;
  day: string;
  readings: unknown;
  polled: unknown;
  delivered: unknown;
  missed_deliveries: unknown;
  unconfirmed_deliveries: unknown;
}

describe.each(['sqlite', 'postgres'] as const)('webhook and poll reconciliation (%s)', (dialect) => {
  it('counts the deliveries the platform dropped as missed, and a delivery polling never confirmed', async () => {
    const T0 = Date.UTC(2026, 0, 12, 6);
    const clock = new FakeClock(T0);
    const sandbox = await startSandbox({ clock, seed: 17, customers: 1, buildingsPerCustomer: 1, floorSpacesPerBuilding: 3, dataStart: T0, webhooks: { dropEvery: 4 } });
    cleanups.push(() => sandbox.close());
    const db = await freshDatabase(dialect, 'reconcile');
    cleanups.push(() => db.drop());
    const store: Store = await openTestStore(db);
    cleanups.push(() => store.close());

    const customer = sandbox.customers[0]!;
    const secret = generateSecret();
    const receiver = await startReceiver({ deliveries: DELIVERIES, 
      store,
      customers: [{ id: customer.id, apiKey: customer.writeKey.key, apiSecret: customer.writeKey.secret, webhookSecrets: [secret], webhookHeaders: {} }],
      clock,
      logger: silentLogger,
    });
    cleanups.push(() => receiver.close());
    const client = createApiClient({ baseUrl: sandbox.url, apiKey: customer.writeKey.key, apiSecret: customer.writeKey.secret, clock });
    cleanups.push(() => client.close());
    await createWebhookAdmin(client).register({ url: receiver.url, eventTypes: ['Occupancy'], signatureSecret: secret });

    // Two hours of deliveries, then a poll of the same hours.
    while (clock.now() < T0 + 2 * HOUR) {
      clock.advance(5 * MINUTE);
      await sandbox.pumpDeliveries();
    }
    const dropped = sandbox.stats.deliveries.dropped;
    expect(dropped).toBeGreaterThan(0);
    const config = resolveConfig(childEnv(sandbox, db.url, { SYNC_INITIAL_HISTORY: '3h', SYNC_SETTLE_DELAY: '1m', SYNC_LOOKBACK: '0m' }));
    const report = await runOnce({ config, store, logger: silentLogger, customers: config.customers, streams, clock, baseUrl: sandbox.url });
    expect(report.outcomes.map((o) => o.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
    const watermark = report.outcomes.find((o) => o.stream === 'occupancy')!.watermark!;

    // A delivery of a reading the platform never had: before the watermark, so polling would have found it.
    const ghost = JSON.stringify({
      Id: '7a0b0000-0000-4000-8000-0000000000aa',
      CustomerId: customer.id,
      Type: 'Occupancy',
      Created: new Date(T0 + 30 * MINUTE).toISOString(),
      Sent: new Date(clock.now()).toISOString(),
      Data: [{ FloorSpaceId: '9e8d7c6b-0000-4000-8000-00000000ffff', OccupancyStatus: 'CurrentlyOccupied', Headcount: 2 }],
    });
    const res = await fetch(receiver.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Service-Signature': signatureHeader(secret, ghost, Math.floor(clock.now() / 1000)) },
      body: ghost,
    });
    expect(res.status).toBe(200);

    const rows = await store.query<Reconciliation>('SELECT * FROM webhook_reconciliation WHERE customer_id = $1', [customer.id]);
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    const n = (v: unknown) => Number(v);
    expect(row.day).toBe('2026-01-12');
    // The oracle: ticks k = 0, 4, 8, ... (every 5 minutes from T0) were dropped; those polling read (before the
    // watermark) are the missed deliveries, 3 floor spaces each.
    let expected = 0;
    for (let k = 0; T0 + k * 5 * MINUTE < Date.parse(watermark); k += 4) expected += 3;
    expect(expected).toBeGreaterThan(0);
    expect(n(row.missed_deliveries)).toBe(expected);
    expect(expected).toBeLessThanOrEqual(dropped);
    expect(n(row.unconfirmed_deliveries)).toBe(1);
    expect(n(row.readings)).toBe(n(row.polled) + 1);
    expect(n(row.delivered)).toBe(n(row.readings) - n(row.missed_deliveries));

    // The same counts reach status, /healthz (degraded) and /metrics, for the customers that have webhooks.
    const webhookCustomer = { id: customer.id, apiKey: customer.writeKey.key, apiSecret: customer.writeKey.secret, webhookSecrets: [secret], webhookHeaders: {} };
    const checks = await runDataChecks({ store, streams, customers: [webhookCustomer], settings: config.sync, now: clock.now() });
    expect(checks.reconciliation).toEqual([{ customerId: customer.id, since: '2026-01-11', missedDeliveries: expected, unconfirmedDeliveries: 1 }]);
    const lines = dataCheckLines(checks);
    expect(lines).toEqual([expect.stringContaining(`${customer.id} webhooks since 2026-01-11: ${expected} reading(s) polling found that no delivery brought, 1 delivered`)]);
    const health = evaluateHealth([], { now: clock.now(), dataWarnings: lines });
    expect(health.status).toBe('degraded');
    const metrics = createMetrics({ processMetrics: false });
    metrics.observeDataChecks(checks);
    const text = await metrics.text();
    expect(text).toContain(`occupancy_sync_webhook_missed_deliveries ${expected}\n`);
    expect(text).toContain('occupancy_sync_webhook_unconfirmed_deliveries 1\n');
    // A customer without webhooks is not counted: every polled reading would look missed.
    const none = await runDataChecks({ store, streams, customers: [{ ...webhookCustomer, webhookSecrets: [] }], settings: config.sync, now: clock.now() });
    expect(none.reconciliation).toEqual([]);
  });
});
