import { DELIVERIES } from '../support/deliveries.ts';
import { randomUUID } from 'node:crypto';
import { Pool } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.ts';
import { memoryLogger } from '../../src/logger.ts';
import { startReceiver, type Receiver } from '../../src/webhooks/receiver.ts';
import { signatureHeader } from '../../src/webhooks/signature.ts';
import { customer, flakyStore } from '../webhooks/helpers.ts';
import { publishFigures, SCALE } from './figures.ts';
import { migratedStore } from '../support/databases.ts';
import { runPool } from '../support/pool.ts';

const CUSTOMER = '10ad0000-0000-4000-8000-000000000001';
const LOAD_SECRET = 'load-test-signature-secret-'.padEnd(88, 'L0ad');
const CONNECTIONS = 128;
const DURATION_MS = Math.round(5_000 * SCALE);
/** Storage fails for this slice of the run: from 30 % to 60 % of it. */
const FAIL_FROM = 0.3;
const FAIL_TO = 0.6;
/**
 * The floor spaces the deliveries are of: a platform's fixed set, not a new one per delivery. (Spaces never listed are
 * all on one floor, no building's and no floor's, whose hourly rollup each delivery sums again: thousands of them made
 * each delivery cost as much as the floor, which is not what this test measures.)
 */
const SPACES = Array.from({ length: 200 }, () => randomUUID());

let db: Awaited<ReturnType<typeof migratedStore>>;
let receiver: Receiver;
let failing = false;
let flaky: ReturnType<typeof flakyStore>;

beforeAll(async () => {
  db = await migratedStore('sqlite', 'load');
  flaky = flakyStore(db.store, { failing: () => failing });
  receiver = await startReceiver({ deliveries: DELIVERIES, 
    store: flaky,
    customers: [customer(CUSTOMER, { webhookSecrets: [LOAD_SECRET] })],
    clock: systemClock,
    logger: memoryLogger({ level: 'warn' }).logger,
  });
});

afterAll(async () => {
  await receiver?.close();
  await db?.drop();
});

function signedDelivery(id: string, n: number) {
  const body = Buffer.from(
    JSON.stringify({
      Id: id,
      Type: 'Occupancy',
      CustomerId: CUSTOMER,
      Created: new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString(),
      Sent: new Date().toISOString(),
      Data: [{ FloorSpaceId: SPACES[n % SPACES.length], OccupancyStatus: 'CurrentlyOccupied', Headcount: 1 + (n % 20) }],
    }),
  );
  const headers = { 'content-type': 'application/json', 'x-service-signature': signatureHeader(LOAD_SECRET, body, Math.floor(Date.now() / 1000)) };
  return { headers, body };
}

it(`keeps answering ${CONNECTIONS} concurrent connections for ${DURATION_MS / 1000} s; a storage outage mid-load answers 503 and loses no acknowledged delivery`, async () => {
  const origin = new URL(receiver.url).origin;
  const path = new URL(receiver.url).pathname;
  const pool = new Pool(origin, { connections: CONNECTIONS, pipelining: 1, keepAliveTimeout: 10_000 });
  const statusById = new Map<string, number>();
  const bodies = new Map<string, ReturnType<typeof signedDelivery>>();
  const errors: string[] = [];
  let n = 0;
  let maxConnected = 0;
  let sentWhileFailing = 0;
  const started = Date.now();
  const deadline = started + DURATION_MS;
  const phase = setInterval(() => {
    const elapsed = (Date.now() - started) / DURATION_MS;
    failing = elapsed >= FAIL_FROM && elapsed < FAIL_TO;
    maxConnected = Math.max(maxConnected, pool.stats.connected);
  }, 10);

  // Requests until the deadline, CONNECTIONS at a time: each connection sends its next one as soon as it is answered.
  const untilDeadline = (function* () {
    while (Date.now() < deadline) yield n++;
  })();
  await runPool(untilDeadline, CONNECTIONS, async (i) => {
    const id = randomUUID();
    const delivery = signedDelivery(id, i);
    if (failing) sentWhileFailing++;
    try {
      const res = await pool.request({ path, method: 'POST', headers: delivery.headers, body: delivery.body });
      await res.body.dump();
      statusById.set(id, res.statusCode);
      if (res.statusCode !== 200) bodies.set(id, delivery);
    } catch (error) {
      errors.push(`${(error as Error).name}: ${(error as Error).message}`);
    }
  });
  clearInterval(phase);
  failing = false;
  await receiver.handler.idle();

  // Every request got an answer, and the only answers are 200 (stored) and 503 (storage failed: retry).
  expect(errors.slice(0, 5), `${errors.length} requests without an answer`).toEqual([]);
  const statuses = [...statusById.values()];
  const ok = statuses.filter((s) => s === 200).length;
  const unavailable = statuses.filter((s) => s === 503).length;
  expect(ok + unavailable).toBe(statuses.length);
  expect(unavailable).toBeGreaterThan(0);
  expect(unavailable).toBe(flaky.failures);
  expect(maxConnected).toBeGreaterThanOrEqual(100);

  // No lost acknowledgement: every 200 is in the database, no 503 is.
  const stored = new Set((await db.store.query<{ id: string }>('SELECT id FROM webhook_deliveries')).map((r) => r.id));
  const acknowledgedMissing = [...statusById].filter(([id, s]) => s === 200 && !stored.has(id));
  expect(acknowledgedMissing).toEqual([]);
  expect(stored.size).toBe(ok);

  // The platform retries what got 503: now that storage is back, all of it lands, once. Its retries come as its
  // deliveries do, many at a time (one at a time, thousands of them outlast the test's bound on a busy machine).
  const retried: Array<{ id: string; status: number; answer: unknown }> = [];
  await runPool(bodies.entries(), CONNECTIONS, async ([id, delivery]) => {
    const res = await pool.request({ path, method: 'POST', headers: delivery.headers, body: delivery.body });
    retried.push({ id, status: res.statusCode, answer: await res.body.json() });
  });
  expect(retried.filter((r) => r.status !== 200 || JSON.stringify(r.answer) !== '{"status":"stored"}').slice(0, 5)).toEqual([]);
  expect(retried.length).toBe(bodies.size);
  for (const r of retried) statusById.set(r.id, r.status);
  await pool.close();
  const [{ n: total }] = (await db.store.query<{ n: unknown }>('SELECT count(*) AS n FROM webhook_deliveries')) as [{ n: unknown }];
  expect(Number(total)).toBe(statusById.size);
  const [{ n: rows }] = (await db.store.query<{ n: unknown }>('SELECT count(*) AS n FROM occupancy')) as [{ n: unknown }];
  expect(Number(rows)).toBe(statusById.size);

  const problems = publishFigures({
    section: 'webhook-load',
    title: 'Load: concurrent connections on loopback, with a storage outage in the middle',
    rows: [
      {
        key: 'webhook-load/connections',
        tried: `${CONNECTIONS} concurrent keep-alive connections for ${DURATION_MS / 1000} s, storage failing from ${FAIL_FROM * 100} % to ${FAIL_TO * 100} % of the run`,
        count: CONNECTIONS,
        held: 'every request answered (200 or 503, nothing else); every 200 in the database; every 503 stored once when retried',
      },
    ],
    measured: { requests: statusById.size, acknowledged: ok, answered503: unavailable, sentWhileFailing, maxConnected, requestsPerSecond: Math.round(statusById.size / (DURATION_MS / 1000)) },
  });
  expect(problems).toEqual([]);
}, 120_000);
