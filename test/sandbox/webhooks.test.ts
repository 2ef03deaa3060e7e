import { createHmac, timingSafeEqual } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { startSandbox, type SandboxOptions } from '../../src/sandbox/index.ts';
import { authenticate, gql, pageAll, startReceiver, type Received } from './helpers.ts';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanup.splice(0).map((f) => f()));
});
const MIN = 60_000;
const SECRET = 'k'.repeat(40) + 'S3cr3t-0123456789-abcdefghij'; // 68 characters
const OTHER_SECRET = 'r'.repeat(100);

async function setup(options: SandboxOptions = {}, respond?: (n: number) => number) {
  const clock = new FakeClock('2026-01-08T00:00:00Z');
  const sandbox = await startSandbox({ clock, expiresIn: 86_400, ...options });
  const receiver = await startReceiver(respond);
  cleanup.push(() => sandbox.close(), () => receiver.close());
  const customer = sandbox.customers[0]!;
  const token = await authenticate(sandbox.url, customer.writeKey);
  const mutate = async (query: string, variables: Record<string, unknown>) => {
    const res = await gql(sandbox.url, token, { query, variables, operationName: /^mutation (\w+)/.exec(query)![1] });
    expect(res.status).toBe(200);
    return res.json as { data: Record<string, any> | null; errors?: Array<{ message: string }> };
  };
  return { clock, sandbox, receiver, customer, token, mutate };
}

const REGISTER = `mutation Register($input: RegisterWebhookInput!) {
  registerWebhook(input: $input) { id url eventTypes additionalHeaders { key value } signed compress }
}`;
const UPDATE = `mutation Update($id: ID!, $input: UpdateWebhookInput!) {
  updateWebhook(id: $id, input: $input) { id url signed compress additionalHeaders { key value } }
}`;

/** Independent implementation of the API document's 5.1 check, with node:crypto only. */
function verify(header: string | undefined, body: Buffer, secret: string): number {
  const match = /^t=(\d+),s=([0-9A-F]{64})$/.exec(header ?? '');
  if (!match) throw new Error(`bad signature header ${header}`);
  const expected = createHmac('sha256', secret).update(`${match[1]}.`).update(body).digest();
  if (!timingSafeEqual(expected, Buffer.from(match[2]!, 'hex'))) throw new Error('signature mismatch');
  return Number(match[1]);
}

function bodyOf(r: Received): Buffer {
  return r.headers['content-encoding'] === 'gzip' ? gunzipSync(r.raw) : r.raw;
}

describe('sandbox webhook registration', () => {
  it('accepts https and loopback http URLs only', async () => {
    const { mutate } = await setup();
    for (const url of ['http://example.com/hook', 'ftp://example.com/x', 'not a url', 'http://10.0.0.1/hook']) {
      const res = await mutate(REGISTER, { input: { url, eventTypes: ['Occupancy'] } });
      expect(res.errors?.[0]?.message, url).toMatch(/^input\.url: /);
    }
    for (const url of ['https://example.com/hook', 'http://127.0.0.1:9/hook', 'http://localhost:9/hook', 'http://[::1]:9/hook']) {
      const res = await mutate(REGISTER, { input: { url, eventTypes: ['Occupancy'] } });
      expect(res.data?.registerWebhook.url, url).toBe(url);
    }
  });

  it('requires a signatureSecret of 64 to 256 characters and never returns it', async () => {
    const { mutate, sandbox, customer, token } = await setup();
    for (const secret of ['x'.repeat(63), 'x'.repeat(257)]) {
      const res = await mutate(REGISTER, { input: { url: 'https://example.com/h', eventTypes: ['Occupancy'], signatureSecret: secret } });
      expect(res.errors?.[0]?.message).toMatch(/signatureSecret: must have 64 to 256 characters/);
    }
    for (const secret of ['x'.repeat(64), 'y'.repeat(256)]) {
      const res = await mutate(REGISTER, { input: { url: 'https://example.com/h', eventTypes: ['Occupancy'], signatureSecret: secret } });
      expect(res.data?.registerWebhook.signed).toBe(true);
      expect(JSON.stringify(res)).not.toContain(secret);
    }
    const list = await gql(sandbox.url, token, { query: '{ webhooks { id signed } }' });
    expect(list.json.data.webhooks.filter((w: { signed: boolean }) => w.signed)).toHaveLength(2);
    const asked = await gql(sandbox.url, token, { query: '{ webhooks { signatureSecret } }' });
    expect(asked.status).toBe(400);
    expect(sandbox.webhooks(customer.id).every((w) => !('secret' in w) && !('signatureSecret' in w))).toBe(true);
  });

  it('updateWebhook validates everything before changing anything', async () => {
    const { mutate } = await setup();
    const reg = await mutate(REGISTER, { input: { url: 'https://example.com/h', eventTypes: ['Occupancy'], signatureSecret: SECRET } });
    const id = reg.data!.registerWebhook.id;
    const bad = await mutate(UPDATE, { id, input: { url: 'https://changed.example.com', signatureSecret: 'short' } });
    expect(bad.errors?.[0]?.message).toMatch(/signatureSecret/);
    const both = await mutate(UPDATE, { id, input: { signatureSecret: OTHER_SECRET, clearSignatureSecret: true } });
    expect(both.errors?.[0]?.message).toMatch(/clearSignatureSecret/);
    const reserved = await mutate(UPDATE, { id, input: { additionalHeaders: [{ key: 'X-Service-Signature', value: 'forged' }] } });
    expect(reserved.errors?.[0]?.message).toMatch(/cannot be overridden/);
    const ok = await mutate(UPDATE, { id, input: { compress: true } });
    expect(ok.data!.updateWebhook).toMatchObject({ url: 'https://example.com/h', signed: true, compress: true });
  });
});

describe('sandbox webhook deliveries', () => {
  it('delivers each newly visible tick once, signed, with headers verbatim and the polled data; no history', async () => {
    const { clock, sandbox, receiver, customer, token, mutate } = await setup({ seed: 4 });
    const headers = [{ key: 'X-Shared-Token', value: 'Abc 123 ==' }, { key: 'x-lower', value: 'v' }];
    const reg = await mutate(REGISTER, { input: { url: receiver.url, eventTypes: ['Occupancy'], signatureSecret: SECRET, additionalHeaders: headers } });
    const hookId = reg.data!.registerWebhook.id as string;
    await sandbox.pumpDeliveries();
    expect(receiver.received).toHaveLength(0);

    clock.advance(30 * MIN);
    await sandbox.pumpDeliveries();
    const visible = [...sandbox.truth.observations(customer.id, { from: '2026-01-07T23:50:00Z' })].filter(
      (o) => Date.parse(o.visibleAt) > Date.parse('2026-01-08T00:00:00Z'),
    );
    const ticks = [...new Set(visible.map((o) => o.created))];
    expect(ticks.length).toBeGreaterThanOrEqual(5);
    expect(receiver.received).toHaveLength(ticks.length);

    const polled = await pageAll(sandbox.url, token, '2026-01-07T23:00:00Z', '2026-01-08T01:00:00Z', 5000);
    const t = Math.floor(clock.now() / 1000);
    for (const r of receiver.received) {
      expect(r.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(r.rawHeaders).toEqual(expect.arrayContaining(['X-Shared-Token', 'Abc 123 ==', 'x-lower', 'v']));
      expect(verify(r.headers['x-service-signature'] as string, r.raw, SECRET)).toBe(t);
      const body = JSON.parse(r.raw.toString('utf8'));
      expect(Object.keys(body)).toEqual(['Id', 'Type', 'CustomerId', 'Created', 'Sent', 'Data']);
      expect(body).toMatchObject({ Type: 'Occupancy', CustomerId: customer.id, Sent: new Date(clock.now()).toISOString() });
      expect(body.Id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      const sameTick = polled.nodes.filter((n) => n.created === body.Created);
      expect(sameTick).toHaveLength(12);
      expect(body.Data).toEqual(sameTick.map((n) => ({ FloorSpaceId: n.floorSpaceId, OccupancyStatus: n.occupancyStatus, Headcount: n.headcount })));
    }
    expect(receiver.received.map((r) => JSON.parse(r.raw.toString()).Created).sort()).toEqual(ticks.sort());
    expect(new Set(receiver.received.map((r) => JSON.parse(r.raw.toString()).Id)).size).toBe(ticks.length);

    await sandbox.pumpDeliveries();
    expect(receiver.received).toHaveLength(ticks.length);
    expect(sandbox.stats.deliveries).toEqual({ attempts: ticks.length, succeeded: ticks.length, failed: 0, abandoned: 0, dropped: 0 });
    expect(sandbox.webhooks(customer.id).map((w) => w.id)).toEqual([hookId]);
  });

  it('compresses with gzip when asked, the signature covering the decompressed bytes', async () => {
    const { clock, sandbox, receiver, mutate } = await setup();
    await mutate(REGISTER, { input: { url: receiver.url, eventTypes: ['Occupancy'], signatureSecret: SECRET, compress: true } });
    clock.advance(20 * MIN);
    await sandbox.pumpDeliveries();
    expect(receiver.received.length).toBeGreaterThan(0);
    for (const r of receiver.received) {
      expect(r.headers['content-encoding']).toBe('gzip');
      expect(Number(r.headers['content-length'])).toBe(r.raw.length);
      const plain = gunzipSync(r.raw);
      expect(JSON.parse(plain.toString('utf8')).Type).toBe('Occupancy');
      verify(r.headers['x-service-signature'] as string, plain, SECRET);
      expect(() => verify(r.headers['x-service-signature'] as string, r.raw, SECRET)).toThrow(/mismatch/);
    }
  });

  it('retries a failed delivery with backoff on the sandbox clock: new t each attempt, same Id', async () => {
    const { clock, sandbox, receiver, mutate } = await setup(
      { lateArrivalMaxMs: 0, webhooks: { retryBaseMs: 10_000, maxAttempts: 5 } },
      (n) => (n <= 2 ? 503 : 200),
    );
    await mutate(REGISTER, { input: { url: receiver.url, eventTypes: ['Occupancy'], signatureSecret: SECRET } });
    clock.advance(5 * MIN);
    await sandbox.pumpDeliveries();
    expect(receiver.received).toHaveLength(1);
    clock.advance(9_999);
    await sandbox.pumpDeliveries();
    expect(receiver.received).toHaveLength(1);
    clock.advance(1);
    await sandbox.pumpDeliveries();
    expect(receiver.received).toHaveLength(2);
    clock.advance(20_000);
    await sandbox.pumpDeliveries();
    expect(receiver.received).toHaveLength(3);
    await sandbox.pumpDeliveries();
    expect(receiver.received).toHaveLength(3);

    const ts = receiver.received.map((r) => verify(r.headers['x-service-signature'] as string, r.raw, SECRET));
    const bodies = receiver.received.map((r) => JSON.parse(r.raw.toString('utf8')));
    expect(new Set(ts).size).toBe(3);
    expect(ts[1]! - ts[0]!).toBe(10);
    expect(new Set(bodies.map((b) => b.Id)).size).toBe(1);
    expect(new Set(bodies.map((b) => b.Created)).size).toBe(1);
    expect(bodies.map((b) => b.Sent)).toEqual(ts.map((t) => new Date(t * 1000).toISOString()));
    expect(sandbox.stats.deliveries).toEqual({ attempts: 3, succeeded: 1, failed: 2, abandoned: 0, dropped: 0 });
  });

  it('counts a receiver that does not answer within timeoutMs as failed, and gives up after maxAttempts', async () => {
    const { clock, sandbox, receiver, mutate } = await setup(
      { lateArrivalMaxMs: 0, webhooks: { timeoutMs: 150, retryBaseMs: 1000, maxAttempts: 2 } },
      () => 0,
    );
    await mutate(REGISTER, { input: { url: receiver.url, eventTypes: ['Occupancy'] } });
    clock.advance(5 * MIN);
    await sandbox.pumpDeliveries();
    clock.advance(1000);
    await sandbox.pumpDeliveries();
    expect(receiver.received.length).toBeGreaterThanOrEqual(2);
    expect(sandbox.stats.deliveries.failed).toBe(2);
    expect(sandbox.stats.deliveries.abandoned).toBe(1);
    expect(receiver.received[0]!.headers['x-service-signature']).toBeUndefined();
  });

  it('signs with a rotated secret from the next delivery, and stops signing after clearSignatureSecret', async () => {
    const { clock, sandbox, receiver, mutate } = await setup({ lateArrivalMaxMs: 0 });
    const reg = await mutate(REGISTER, { input: { url: receiver.url, eventTypes: ['Occupancy'], signatureSecret: SECRET } });
    const id = reg.data!.registerWebhook.id;
    clock.advance(5 * MIN);
    await sandbox.pumpDeliveries();
    verify(receiver.received[0]!.headers['x-service-signature'] as string, receiver.received[0]!.raw, SECRET);

    expect((await mutate(UPDATE, { id, input: { signatureSecret: OTHER_SECRET } })).data!.updateWebhook.signed).toBe(true);
    clock.advance(5 * MIN);
    await sandbox.pumpDeliveries();
    const rotated = receiver.received[1]!;
    verify(rotated.headers['x-service-signature'] as string, rotated.raw, OTHER_SECRET);
    expect(() => verify(rotated.headers['x-service-signature'] as string, rotated.raw, SECRET)).toThrow();

    expect((await mutate(UPDATE, { id, input: { clearSignatureSecret: true } })).data!.updateWebhook.signed).toBe(false);
    clock.advance(5 * MIN);
    await sandbox.pumpDeliveries();
    expect(receiver.received).toHaveLength(3);
    expect(receiver.received[2]!.headers['x-service-signature']).toBeUndefined();
  });

  it('sendTestEvent delivers at once with the requested Type and reports whether the receiver accepted it', async () => {
    const { receiver, mutate, customer } = await setup({}, (n) => (n === 1 ? 200 : 500));
    const reg = await mutate(REGISTER, { input: { url: receiver.url, eventTypes: ['Occupancy'], signatureSecret: SECRET } });
    const id = reg.data!.registerWebhook.id;
    const send = `mutation Test($id: ID!, $type: String) { sendTestEvent(webhookId: $id, type: $type) }`;
    expect((await mutate(send, { id })).data).toEqual({ sendTestEvent: true });
    const body = JSON.parse(receiver.received[0]!.raw.toString('utf8'));
    expect(body).toMatchObject({ Type: 'Occupancy', CustomerId: customer.id });
    expect(body.Data).toHaveLength(12);
    verify(receiver.received[0]!.headers['x-service-signature'] as string, receiver.received[0]!.raw, SECRET);
    expect((await mutate(send, { id, type: 'Other' })).data).toEqual({ sendTestEvent: false });
    expect(JSON.parse(receiver.received[1]!.raw.toString('utf8'))).toMatchObject({ Type: 'Other', Data: [] });
    const unknown = await mutate(send, { id: '00000000-0000-4000-8000-000000000000' });
    expect(unknown.errors?.[0]?.message).toMatch(/no webhook/);
    expect(bodyOf(receiver.received[0]!).length).toBeGreaterThan(0);
  });
});
