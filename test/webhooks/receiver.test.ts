import { DELIVERIES } from '../support/deliveries.ts';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { memoryLogger } from '../../src/logger.ts';
import type { Store } from '../../src/store/types.ts';
import { startReceiver, type Receiver, type ReceiverOptions, type WebhookOutcome } from '../../src/webhooks/receiver.ts';
import { signatureHeader } from '../../src/webhooks/signature.ts';
import {
  CUSTOMER_A,
  CUSTOMER_B,
  HEADER_B,
  SECRET_A,
  SECRET_A_OLD,
  SECRET_B,
  customer,
  delivery,
  flakyStore,
  send,
  type DeliveryBody,
} from './helpers.ts';
import { migratedStore } from '../support/databases.ts';
import { waitFor } from '../support/wait.ts';

const NOW = Date.UTC(2026, 0, 1, 10, 0, 5);
const T = Math.floor(NOW / 1000);

let store: Store;
let dropStore: () => Promise<void>;
let receiver: Receiver | undefined;
let outcomes: WebhookOutcome[];
let log: ReturnType<typeof memoryLogger>;
const clock = new FakeClock(NOW);

beforeEach(async () => {
  ({ store, drop: dropStore } = await migratedStore('sqlite', 'webhooks'));
  outcomes = [];
  log = memoryLogger();
  clock.set(NOW);
});

afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
  await dropStore();
});

/** Customer A signs with a secret (previous one too, mid-rotation); customer B uses a custom header only. */
async function start(overrides: Partial<ReceiverOptions> = {}): Promise<Receiver> {
  receiver = await startReceiver({ deliveries: DELIVERIES, 
    store,
    customers: [
      customer(CUSTOMER_A, { webhookSecrets: [SECRET_A, SECRET_A_OLD] }),
      customer(CUSTOMER_B, { webhookHeaders: { [HEADER_B.name]: HEADER_B.value } }),
    ],
    clock,
    logger: log.logger,
    onOutcome: (o) => outcomes.push(o),
    ...overrides,
  });
  return receiver;
}

function signed(body: DeliveryBody | string, options: { secret?: string; t?: number; gzip?: boolean; headers?: Record<string, string> } = {}) {
  const raw = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body), 'utf8');
  const headers: Record<string, string> = {
    'Content-Type': 'application/json; charset=utf-8',
    'X-Service-Signature': signatureHeader(options.secret ?? SECRET_A, raw, options.t ?? T),
    ...options.headers,
  };
  if (options.gzip) headers['Content-Encoding'] = 'gzip';
  return { headers, body: options.gzip ? gzipSync(raw) : raw };
}

/**
 * A well-formed signature that will not verify: the receiver reads (and counts) the body before it can tell, which
 * is what the size limits are about. Without a signature header a request is refused before its body is read.
 */
const FORGED = { 'X-Service-Signature': signatureHeader(SECRET_A, 'not this body', T) };

const occupancyRows = () =>
  store.query<{ customer_id: string; floor_space_id: string; observed_at: string; headcount: number; source: string; event_id: string }>(
    'SELECT customer_id, floor_space_id, observed_at, headcount, source, event_id FROM occupancy ORDER BY floor_space_id',
  );
const deliveryRows = () =>
  store.query<{ id: string; customer_id: string; type: string; attempts: number; body: string; created_at: string }>(
    'SELECT id, customer_id, type, attempts, body, created_at FROM webhook_deliveries ORDER BY id',
  );

describe('webhook receiver over real HTTP with a real SQLite store', () => {
  it('stores a signed delivery: the raw body, and its occupancy items with source webhook', async () => {
    const r = await start();
    const body = delivery();
    const res = await send(r.url, signed(body));
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ status: 'stored' });
    const rows = await occupancyRows();
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({ customer_id: CUSTOMER_A, observed_at: '2026-01-01T10:00:00.000Z', headcount: 3, source: 'webhook', event_id: body.Id });
    const [stored] = await deliveryRows();
    expect(stored).toMatchObject({ id: body.Id, customer_id: CUSTOMER_A, type: 'Occupancy', created_at: '2026-01-01T10:00:00.000Z' });
    expect(stored!.body).toBe(JSON.stringify(body));
    expect(outcomes).toEqual([{ status: 200, reason: 'stored', customerId: CUSTOMER_A, deliveryId: body.Id }]);
  });

  it('acknowledges a retry of a stored delivery (new t) and stores it once, counting 2 attempts', async () => {
    const r = await start();
    const body = delivery();
    expect((await send(r.url, signed(body))).json).toEqual({ status: 'stored' });
    clock.advance(30_000);
    const retry = await send(r.url, signed(body, { t: T + 30 }));
    expect(retry.status).toBe(200);
    expect(retry.json).toEqual({ status: 'duplicate' });
    expect(await occupancyRows()).toHaveLength(2);
    expect((await deliveryRows()).map((d) => Number(d.attempts))).toEqual([2]);
  });

  it('accepts gzip bodies whose signature covers the decompressed bytes', async () => {
    const r = await start();
    const res = await send(r.url, signed(delivery(), { gzip: true }));
    expect(res.status).toBe(200);
    expect(await occupancyRows()).toHaveLength(2);
  });

  it('refuses a gzip bomb with 413 after inflating no more than the limit plus one chunk', async () => {
    const limit = 1024 * 1024;
    const r = await start({ maxDecompressedBytes: limit });
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x20), { level: 9 });
    expect(bomb.length).toBeLessThan(1024 * 1024);
    const res = await send(r.url, { headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', ...FORGED }, body: bomb });
    expect(res.status).toBe(413);
    expect(res.json).toEqual({ error: 'decompressed_too_large' });
    const refusal = log.records().find((l) => l.reason === 'decompressed_too_large')!;
    expect(refusal.inflatedBytes as number).toBeLessThanOrEqual(limit + 64 * 1024);
  });

  it('refuses the default-limit gzip bomb too (16 MiB after decompression)', async () => {
    const r = await start();
    const bomb = gzipSync(Buffer.alloc(40 * 1024 * 1024, 0x20), { level: 9 });
    const res = await send(r.url, { headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', ...FORGED }, body: bomb });
    expect(res.status).toBe(413);
    expect(log.records().find((l) => l.reason === 'decompressed_too_large')!.inflatedBytes as number).toBeLessThanOrEqual(16 * 1024 * 1024 + 64 * 1024);
  });

  it('refuses an oversized body with 413, declared or streamed chunked', async () => {
    const r = await start({ maxBodyBytes: 64 * 1024 });
    const big = Buffer.alloc(2 * 1024 * 1024, 0x61);
    const declared = await send(r.url, { headers: { 'Content-Type': 'application/json' }, body: big });
    expect(declared.status).toBe(413);
    expect(declared.headers.connection).toBe('close');
    const chunked = await send(r.url, { headers: { 'Content-Type': 'application/json', ...FORGED }, body: big, chunked: true });
    expect(chunked.status).toBe(413);
    expect(outcomes.map((o) => o.reason)).toEqual(['body_too_large', 'body_too_large']);
    expect(await deliveryRows()).toHaveLength(0);
  });

  it('answers 404 for another path and 405 for another method', async () => {
    const r = await start();
    expect((await send(r.url, { ...signed(delivery()), path: '/other' })).status).toBe(404);
    const get = await send(r.url, { method: 'GET' });
    expect(get.status).toBe(405);
    expect(get.headers.allow).toBe('POST');
    expect((await send(r.url + '?x=1', signed(delivery()))).status).toBe(200);
  });

  it('refuses unknown encodings and non-JSON content types with 415, corrupt gzip and non-JSON bodies with 400', async () => {
    const r = await start();
    const ok = signed(delivery());
    expect((await send(r.url, { ...ok, headers: { ...ok.headers, 'Content-Encoding': 'br' } })).json).toEqual({ error: 'unsupported_encoding' });
    expect((await send(r.url, { ...ok, headers: { ...ok.headers, 'Content-Type': 'text/plain' } })).status).toBe(415);
    const noType = { ...ok.headers } as Record<string, string>;
    delete noType['Content-Type'];
    expect((await send(r.url, { body: ok.body, headers: noType })).status).toBe(415);
    const corrupt = await send(r.url, { body: Buffer.from('definitely not gzip'), headers: { ...ok.headers, 'Content-Encoding': 'gzip' } });
    expect(corrupt.status).toBe(400);
    expect(corrupt.json).toEqual({ error: 'corrupt_gzip' });
    const notJson = await send(r.url, signed('this is not json'));
    expect(notJson.status).toBe(400);
    expect(notJson.json).toEqual({ error: 'invalid_json' });
    const badUtf8 = Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]);
    expect((await send(r.url, { body: badUtf8, headers: { ...ok.headers, 'X-Service-Signature': signatureHeader(SECRET_A, badUtf8, T) } })).json).toEqual({ error: 'invalid_utf8' });
    expect(await deliveryRows()).toHaveLength(0);
  });

  it.each([
    ['Data not an array', { Data: {} as unknown as unknown[] }, 'Data'],
    ['a Created without zone', { Created: '2026-01-01T10:00:00' }, 'Created'],
    ['a Created in month 13', { Created: '2026-13-01T10:00:00.000Z' }, 'Created'],
    ['a Sent at hour 25', { Sent: '2026-01-01T25:00:00.000Z' }, 'Sent'],
    ['an Id that is not a UUID', { Id: 'abc' }, 'Id'],
    // Times the receiver's clock cannot have seen (5 minutes of skew allowed, the signature's tolerance): stored,
    // such a reading would be its space's latest for good, or its hours would leave the calendar.
    ['a Created in the future', { Created: '2099-01-01T00:00:00Z', Sent: '2099-01-01T00:00:01Z' }, 'Created'],
    ['a Sent in the future', { Sent: '2026-01-01T10:06:00Z' }, 'Sent'],
    ['a Created after its Sent', { Created: '2026-01-01T10:00:00Z', Sent: '2025-12-31T10:00:00Z' }, 'Created'],
    ['a Created in year 1', { Created: '0001-01-01T00:00:00Z' }, 'Created'],
  ])('refuses a delivery with %s as 400 naming the field', async (_label, overrides, field) => {
    const r = await start();
    const res = await send(r.url, signed(delivery(overrides as Partial<DeliveryBody>)));
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ error: 'invalid_delivery' });
    expect(log.records().find((l) => l.reason === 'invalid_delivery')!.field).toBe(field);
    expect(await deliveryRows()).toHaveLength(0);
  });

  it.each([
    ['a negative Headcount', { FloorSpaceId: '9e8d7c6b-0000-4000-8000-000000000001', OccupancyStatus: 'CurrentlyOccupied', Headcount: -1 }, 'Headcount: expected a whole number from 0 to 2,147,483,647, got number -1'],
    ['a fractional Headcount', { FloorSpaceId: '9e8d7c6b-0000-4000-8000-000000000001', OccupancyStatus: 'CurrentlyOccupied', Headcount: 1.5 }, 'Headcount: expected a whole number from 0 to 2,147,483,647, got number 1.5'],
    ['a missing FloorSpaceId', { OccupancyStatus: 'CurrentlyOccupied', Headcount: 1 }, 'FloorSpaceId: expected a non-empty string id, got nothing (the field is missing)'],
    ['an empty OccupancyStatus', { FloorSpaceId: '9e8d7c6b-0000-4000-8000-000000000001', OccupancyStatus: '', Headcount: 1 }, 'OccupancyStatus: expected a non-empty string, got the string ""'],
  ])('stores a delivery with an item of %s, that item quarantined with its reason as a polled record would be', async (_label, item, reason) => {
    const r = await start();
    const good = { FloorSpaceId: '9e8d7c6b-0000-4000-8000-000000000002', OccupancyStatus: 'Unoccupied', Headcount: 2 };
    const res = await send(r.url, signed(delivery({ Data: [good, item] } as Partial<DeliveryBody>)));
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ status: 'stored' });
    expect(await occupancyRows()).toHaveLength(1);
    const quarantined = await store.query<{ stream: string; reason: string; record: string; window_start: unknown }>('SELECT stream, reason, record, window_start FROM quarantined_records');
    expect(quarantined).toEqual([{ stream: 'occupancy', reason, record: JSON.stringify(item), window_start: null }]);
  });

  it('stores a delivery of an unknown Type raw, with no occupancy rows, and acknowledges it', async () => {
    const r = await start();
    const body = delivery({ Type: 'BuildingChanged', Data: [{ anything: true }] });
    expect((await send(r.url, signed(body))).json).toEqual({ status: 'stored' });
    expect(await occupancyRows()).toHaveLength(0);
    expect((await deliveryRows())[0]).toMatchObject({ type: 'BuildingChanged', body: JSON.stringify(body) });
  });
});

describe('authentication of deliveries', () => {
  it.each([
    ['a missing signature', (b: DeliveryBody) => { const s = signed(b); delete (s.headers as Record<string, string>)['X-Service-Signature']; return s; }, 'signature_missing'],
    ['a malformed signature', (b: DeliveryBody) => signed(b, { headers: { 'X-Service-Signature': 't=abc,s=123' } }), 'signature_malformed'],
    ['a tampered body', (b: DeliveryBody) => { const s = signed(b); return { ...s, body: Buffer.from(s.body.toString().replace('"Headcount":3', '"Headcount":4')) }; }, 'signature_mismatch'],
    ['a wrong secret', (b: DeliveryBody) => signed(b, { secret: SECRET_B }), 'signature_mismatch'],
    ['a stale timestamp', (b: DeliveryBody) => signed(b, { t: T - 301 }), 'signature_stale'],
    ['a future timestamp', (b: DeliveryBody) => signed(b, { t: T + 301 }), 'signature_future'],
  ])('refuses %s with 401 and stores nothing', async (_label, build, reason) => {
    const r = await start();
    const res = await send(r.url, build(delivery()));
    expect(res.status).toBe(401);
    expect(res.json).toEqual({ error: reason });
    expect(await deliveryRows()).toHaveLength(0);
  });

  it('accepts lowercase hex and both secrets during a rotation', async () => {
    const r = await start();
    const lower = signed(delivery());
    lower.headers['X-Service-Signature'] = lower.headers['X-Service-Signature']!.toLowerCase();
    expect((await send(r.url, lower)).status).toBe(200);
    expect((await send(r.url, signed(delivery(), { secret: SECRET_A_OLD }))).status).toBe(200);
    expect(log.records().filter((l) => l.outcome === 'stored').map((l) => l.secretIndex)).toEqual([0, 1]);
  });

  it('matches customer B by its custom header, and refuses a wrong or missing header with 401', async () => {
    const r = await start();
    const body = delivery({ CustomerId: CUSTOMER_B });
    const raw = JSON.stringify(body);
    const json = { 'Content-Type': 'application/json' };
    expect((await send(r.url, { body: raw, headers: { ...json, [HEADER_B.name]: HEADER_B.value } })).json).toEqual({ status: 'stored' });
    expect((await send(r.url, { body: raw, headers: { ...json, [HEADER_B.name]: 'wrong' } })).json).toEqual({ error: 'signature_missing' });
    expect((await send(r.url, { body: raw, headers: json })).status).toBe(401);
    expect(outcomes.map((o) => o.status)).toEqual([200, 401, 401]);
  });

  it('refuses a delivery whose CustomerId is not the customer that authenticated (401 customer_mismatch)', async () => {
    const r = await start();
    // Signed with A's secret but claiming to be B's: A's key cannot write B's data.
    const res = await send(r.url, signed(delivery({ CustomerId: CUSTOMER_B })));
    expect(res.json).toEqual({ error: 'customer_mismatch' });
    // B's header but A's CustomerId, unsigned.
    const res2 = await send(r.url, { body: JSON.stringify(delivery()), headers: { 'Content-Type': 'application/json', [HEADER_B.name]: HEADER_B.value } });
    expect(res2.json).toEqual({ error: 'customer_mismatch' });
    expect(await deliveryRows()).toHaveLength(0);
  });

  it('requires both the header and the signature when a customer has both, and refuses a header-only forgery', async () => {
    const r = await start({ customers: [customer(CUSTOMER_A, { webhookSecrets: [SECRET_A], webhookHeaders: { 'X-Extra': 'extra-value-123456' } })] });
    expect((await send(r.url, signed(delivery()))).json).toEqual({ error: 'header_mismatch' });
    expect((await send(r.url, signed(delivery(), { headers: { 'X-Extra': 'extra-value-123456' } }))).status).toBe(200);
    const unsigned = { body: JSON.stringify(delivery()), headers: { 'Content-Type': 'application/json', 'X-Extra': 'extra-value-123456' } };
    expect((await send(r.url, unsigned)).json).toEqual({ error: 'signature_missing' });
  });

  it('is closed by default: no secret and no header means refused, unless WEBHOOK_ACCEPT_UNSIGNED asks for it by name', async () => {
    const closed = await start({ customers: [customer(CUSTOMER_A)] });
    expect(log.records().some((l) => l.level === 40 && String(l.msg).includes('its deliveries will be refused'))).toBe(true);
    const refused = await send(closed.url, { body: JSON.stringify(delivery({ Data: [{ FloorSpaceId: '9e8d7c6b-0000-4000-8000-000000000001', OccupancyStatus: 'CurrentlyOccupied', Headcount: 9999 }] })), headers: { 'Content-Type': 'application/json' } });
    expect(refused.status).toBe(401);
    expect(await occupancyRows()).toHaveLength(0);
    await closed.close();
    const r = await start({ customers: [customer(CUSTOMER_A)], acceptUnsigned: true });
    expect(log.records().some((l) => l.level === 40 && String(l.msg).includes('UNSIGNED'))).toBe(true);
    expect((await send(r.url, { body: JSON.stringify(delivery()), headers: { 'Content-Type': 'application/json' } })).status).toBe(200);
    // Still only for configured customers.
    expect((await send(r.url, { body: JSON.stringify(delivery({ CustomerId: CUSTOMER_B })), headers: { 'Content-Type': 'application/json' } })).json).toEqual({ error: 'customer_mismatch' });
  });

  it('never logs a secret, a custom header value or the body', async () => {
    const r = await start();
    const body = delivery({ Data: [{ FloorSpaceId: '9e8d7c6b-0000-4000-8000-000000000001', OccupancyStatus: 'MarkerStatusXYZ', Headcount: 1 }] });
    await send(r.url, signed(body));
    await send(r.url, signed(body, { secret: SECRET_B }));
    await send(r.url, { body: JSON.stringify(delivery({ CustomerId: CUSTOMER_B })), headers: { 'Content-Type': 'application/json', [HEADER_B.name]: 'wrong-value-zzz' } });
    await send(r.url, signed('{"not":"a delivery"}'));
    const all = log.lines.join('\n');
    for (const forbidden of [SECRET_A, SECRET_A_OLD, SECRET_B, HEADER_B.value, 'wrong-value-zzz', 'MarkerStatusXYZ', '"not"']) {
      expect(all).not.toContain(forbidden);
    }
    expect(log.records().filter((l) => l.reason).map((l) => l.reason)).toEqual(['signature_mismatch', 'signature_missing', 'invalid_delivery']);
  });
});

describe('storage failures and shutdown', () => {
  it('records a sender that disconnects mid-body as body_aborted, stores nothing and keeps serving', async () => {
    let outcome!: (o: WebhookOutcome) => void;
    const refused = new Promise<WebhookOutcome>((resolve) => (outcome = resolve));
    const r = await start({ onOutcome: (o) => outcome(o) });
    const { port } = new URL(r.url);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(`POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Service-Signature: ${FORGED['X-Service-Signature']}\r\nContent-Length: 1000\r\n\r\n{"Id":`);
    // Wait until the receiver is reading the body, then vanish.
    await waitFor(() => r.handler.inFlight > 0, 'the receiver to read the body', 5_000, { everyMs: 0 });
    socket.destroy();
    expect(await refused).toEqual({ status: 400, reason: 'body_aborted' });
    expect(await deliveryRows()).toHaveLength(0);
    expect((await send(r.url, signed(delivery()))).status).toBe(200);
  });


  it('answers 503 when storage fails, so the platform retries, and stores the retry', async () => {
    let failing = true;
    const flaky = flakyStore(store, { failing: () => failing });
    const r = await start({ store: flaky });
    const body = delivery();
    const first = await send(r.url, signed(body));
    expect(first.status).toBe(503);
    expect(first.json).toEqual({ error: 'storage_failed' });
    expect(log.records().find((l) => l.reason === 'storage_failed')!.level).toBe(50);
    failing = false;
    expect((await send(r.url, signed(body))).json).toEqual({ status: 'stored' });
    expect(await occupancyRows()).toHaveLength(2);
  });

  it('close() lets an in-flight delivery finish and be acknowledged', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const started = new Promise<void>((resolve) => (entered = resolve));
    const slow = new Proxy(store, {
      get(target, prop) {
        if (prop === 'storeDelivery') {
          return async (...args: Parameters<Store['storeDelivery']>) => {
            entered();
            await gate;
            return target.storeDelivery(...args);
          };
        }
        const value = Reflect.get(target, prop, target) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const r = await start({ store: slow });
    const pending = send(r.url, signed(delivery()));
    await started;
    const closed = r.close();
    release();
    expect((await pending).status).toBe(200);
    await closed;
    receiver = undefined;
    expect(await deliveryRows()).toHaveLength(1);
  });
});
