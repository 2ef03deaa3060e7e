import { DELIVERIES as DELIVERY_RULES } from '../support/deliveries.ts';
import { Pool } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { memoryLogger } from '../../src/logger.ts';
import type { Store } from '../../src/store/types.ts';
import { startReceiver, type Receiver, type WebhookOutcome } from '../../src/webhooks/receiver.ts';
import { customer, send } from '../webhooks/helpers.ts';
import { publishFigures, scaled } from './figures.ts';
import { forceGc, sendTruncated } from './support.ts';
import { migratedStore } from '../support/databases.ts';
import { runPool } from '../support/pool.ts';
import { waitFor } from '../support/wait.ts';
import {
  CUSTOMER_A,
  CUSTOMER_B,
  DESCRIPTION,
  EXPECTED,
  MAX_BODY_BYTES,
  MAX_DECOMPRESSED_BYTES,
  NOW,
  STREAM_HEADER_B,
  STREAM_SECRET_A,
  STREAM_SECRET_B,
  StreamGenerator,
  TOLERANCE_MS,
  WEIGHTS,
  type Kind,
  type StreamRequest,
} from './webhook-stream-gen.ts';

const SEED = 20260108;
const DELIVERIES = scaled(10_000);
const CONCURRENCY = 16;

let db: Awaited<ReturnType<typeof migratedStore>>;
let store: Store;
let receiver: Receiver;
const outcomes: WebhookOutcome[] = [];
const log = memoryLogger({ level: 'info' });

beforeAll(async () => {
  db = await migratedStore('sqlite', 'stream');
  store = db.store;
  receiver = await startReceiver({ deliveries: DELIVERY_RULES, 
    store,
    customers: [
      customer(CUSTOMER_A, { webhookSecrets: [STREAM_SECRET_A] }),
      customer(CUSTOMER_B, { webhookSecrets: [STREAM_SECRET_B], webhookHeaders: { [STREAM_HEADER_B.name]: STREAM_HEADER_B.value } }),
    ],
    clock: new FakeClock(NOW),
    toleranceMs: TOLERANCE_MS,
    maxBodyBytes: MAX_BODY_BYTES,
    maxDecompressedBytes: MAX_DECOMPRESSED_BYTES,
    logger: log.logger,
    onOutcome: (o) => outcomes.push(o),
  });
});

afterAll(async () => {
  await receiver?.close();
  await db?.drop();
});

it(`answers a seeded stream of ${DELIVERIES.toLocaleString('en-US')} valid and hostile deliveries correctly, stores each valid one exactly once and returns to its starting memory`, async () => {
  const generator = new StreamGenerator(SEED);
  const pool = new Pool(new URL(receiver.url).origin, { connections: CONCURRENCY, pipelining: 1 });
  const path = new URL(receiver.url).pathname;
  const answered: Record<Kind, Record<string, number>> = Object.fromEntries(Object.keys(WEIGHTS).map((k) => [k, {}])) as Record<Kind, Record<string, number>>;
  const wrong: string[] = [];
  const acknowledged = new Map<string, string[]>();
  const truncated: StreamRequest[] = [];

  const record = (request: StreamRequest, status: number, reason: string) => {
    const key = `${status} ${reason}`;
    answered[request.kind][key] = (answered[request.kind][key] ?? 0) + 1;
    const expected = EXPECTED[request.kind];
    // The first copy of a delivery and its retries race through the pool: exactly one of them stores it.
    const ok = request.storedId ? status === 200 && (reason === 'stored' || reason === 'duplicate') : status === expected.status && reason === expected.reason;
    if (!ok && wrong.length < 20) wrong.push(`#${request.index} ${request.kind}: got ${key}, expected ${expected.status} ${expected.reason}`);
    if (request.storedId && status === 200) acknowledged.set(request.storedId, [...(acknowledged.get(request.storedId) ?? []), reason]);
  };

  const requests = (function* () {
    for (let i = 0; i < DELIVERIES; i++) yield generator.next(i);
  })();

  forceGc();
  const before = process.memoryUsage();
  await runPool(requests, CONCURRENCY, async (request) => {
    if (request.kind === 'truncated') {
      truncated.push(request);
      return;
    }
    if (request.kind === 'oversized' || request.kind === 'gzip_bomb') {
      // The receiver answers before reading the whole upload and closes the connection: a plain one-shot request.
      const res = await send(receiver.url, { headers: request.headers, body: request.body });
      record(request, res.status, String(res.json?.error));
      return;
    }
    const res = await pool.request({ path, method: 'POST', headers: request.headers, body: request.body });
    const json = (await res.body.json()) as { status?: string; error?: string };
    record(request, res.statusCode, json.status ?? json.error ?? '?');
  });
  // Senders that hang up mid-body, one at a time so each is seen by the handler before it disappears.
  for (const request of truncated) {
    const seen = outcomes.length;
    await sendTruncated(receiver.url, request.headers, request.body, () => receiver.handler.inFlight > 0);
    await waitFor(() => outcomes.length > seen, `the receiver's outcome of truncated request #${request.index}`, 10_000, { everyMs: 0 });
    const last = outcomes[outcomes.length - 1]!;
    record(request, last.status, last.reason);
  }
  await pool.close();
  await receiver.handler.idle();
  forceGc();
  const after = process.memoryUsage();

  expect(wrong, 'requests answered with the wrong status or reason').toEqual([]);

  // Exactly one `stored` per accepted delivery, every other copy `duplicate`.
  for (const [id, reasons] of acknowledged) {
    expect(reasons.filter((r) => r === 'stored'), `delivery ${id}`).toHaveLength(1);
    expect(reasons).toHaveLength(generator.expected.get(id)!.sends);
  }
  expect(acknowledged.size).toBe(generator.expected.size);

  // The database holds exactly the expected deliveries and items: nothing lost, nothing invalid, nothing twice.
  const deliveries = await store.query<{ id: string; customer_id: string; attempts: unknown }>('SELECT id, customer_id, attempts FROM webhook_deliveries');
  expect(deliveries.length).toBe(generator.expected.size);
  for (const d of deliveries) {
    const expected = generator.expected.get(d.id);
    expect(expected, `unexpected delivery ${d.id} stored`).toBeDefined();
    expect(d.customer_id).toBe(expected!.customerId);
    expect(Number(d.attempts)).toBe(expected!.sends);
  }
  const rows = await store.query<{ floor_space_id: string; observed_at: string; headcount: unknown; event_id: string; source: string }>(
    'SELECT floor_space_id, observed_at, headcount, event_id, source FROM occupancy',
  );
  const expectedItems = [...generator.expected.values()].flatMap((d) => d.items).sort();
  const storedItems = rows.map((r) => `${r.floor_space_id}|${new Date(r.observed_at).toISOString()}|${Number(r.headcount)}`).sort();
  expect(storedItems.length).toBe(expectedItems.length);
  expect(storedItems).toEqual(expectedItems);
  expect(rows.every((r) => r.source === 'webhook' && generator.expected.has(r.event_id))).toBe(true);
  // Each broken item is quarantined once with its reason (a retry of its delivery is a duplicate, not a second one).
  const quarantined = await store.query<{ reason: string }>('SELECT reason FROM quarantined_records');
  expect(quarantined.length).toBe(generator.planned.broken_item);
  expect(quarantined.every((q) => /headcount/i.test(q.reason))).toBe(true);

  // Memory: the heap after a full GC is back near its level before the stream (generous bound: the expectation map
  // and SQLite's page cache legitimately grew; a leak of request bodies would be tens of megabytes).
  const heapGrowthMb = (after.heapUsed - before.heapUsed) / 1024 / 1024;
  expect(heapGrowthMb).toBeLessThan(32 * Math.max(1, DELIVERIES / 10_000));

  const counts = generator.planned;
  const statusOf = (kind: Kind) => {
    const e = EXPECTED[kind];
    if (kind === 'retry') return '200 duplicate; stored once, attempts counted';
    if (kind === 'valid' || kind === 'valid_gzip' || kind === 'unknown_type') return `200 stored, exactly once${kind === 'unknown_type' ? ' (raw, no occupancy rows)' : ''}`;
    if (kind === 'truncated') return 'sender hung up mid-body: handler outcome 400 body_aborted, nothing stored';
    if (kind === 'broken_item') return '200 stored, exactly once: the broken item quarantined with its reason, the others stored';
    return `${e.status} ${e.reason}, nothing stored`;
  };
  const problems = publishFigures({
    section: 'webhook-stream',
    title: `Hostile input: a seeded stream of ${DELIVERIES.toLocaleString('en-US')} deliveries over real HTTP (seed ${SEED}, SQLite, ${CONCURRENCY} connections)`,
    rows: (Object.keys(WEIGHTS) as Kind[]).map((kind) => ({ key: `webhook-stream/${kind}`, tried: DESCRIPTION[kind], count: counts[kind], held: statusOf(kind) })),
    measured: {
      heapGrowthMb: Math.round(heapGrowthMb * 10) / 10,
      rssBeforeMb: Math.round(before.rss / 1048576),
      rssAfterMb: Math.round(after.rss / 1048576),
      storedDeliveries: deliveries.length,
      storedRows: rows.length,
    },
  });
  expect(problems).toEqual([]);
}, 240_000);
