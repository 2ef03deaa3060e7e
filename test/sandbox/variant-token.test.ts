import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { authenticate, gql, startReceiver } from './helpers.ts';
import { canonical, readToken, TOKEN_QUERY } from './variant-readers.ts';

const clock = new FakeClock('2026-01-08T00:00:00Z');
let s: Sandbox;
let readToken_: string;
beforeAll(async () => {
  s = await startSandbox({ clock, seed: 6, apiVariant: 'token', lateArrivalMaxMs: 0, expiresIn: 86_400 });
  readToken_ = await authenticate(s.url, s.customers[0]!.readKey);
});
afterAll(() => s.close());

const list = (variables: Record<string, unknown>) => gql(s.url, readToken_, { query: TOKEN_QUERY, operationName: 'Readings', variables });
const seconds = (isoText: string) => Date.parse(isoText) / 1000;
const TICK = '2026-01-07T10:00:00.000Z';

describe('sandbox API variant token (items + nextToken, AppSync-like)', () => {
  it('includes both ends: startTime <= timestamp <= endTime, in epoch seconds against millisecond data', async () => {
    const c = s.customers[0]!;
    // One instant as both bounds: exactly the tick at it.
    const at = await readToken(s.url, readToken_, seconds(TICK), seconds(TICK));
    expect(at.records).toHaveLength(12);
    expect(at.records.every((r) => r.created === TICK)).toBe(true);
    // An hour ending exactly on a tick holds that tick: 13 ticks, not 12 as [from, to) would.
    const hour = await readToken(s.url, readToken_, seconds(TICK), seconds('2026-01-07T11:00:00Z'), 50);
    expect(hour.records).toHaveLength(13 * 12);
    expect(hour.records).toEqual([...s.truth.observations(c.id, { from: TICK, to: Date.parse('2026-01-07T11:00:00Z') + 1 })].map(canonical));
    // One second short of a tick leaves it out; one second after a tick leaves that tick out.
    expect((await readToken(s.url, readToken_, seconds(TICK) - 300, seconds(TICK) - 1)).records.every((r) => r.created === '2026-01-07T09:55:00.000Z')).toBe(true);
    expect((await readToken(s.url, readToken_, seconds(TICK) + 1, seconds(TICK) + 299)).records).toHaveLength(0);
  });

  it('hands out a nextToken with every full page, so a listing that fills its last page ends with an empty one', async () => {
    // 24 readings, 12 per page: two full pages, each with a token, then an empty page without one.
    const first = (await list({ startTime: seconds(TICK), endTime: seconds(TICK) + 300, limit: 12 })).json.data.listOccupancyReadings;
    expect(first.items).toHaveLength(12);
    expect(typeof first.nextToken).toBe('string');
    const second = (await list({ startTime: seconds(TICK), endTime: seconds(TICK) + 300, limit: 12, nextToken: first.nextToken })).json.data.listOccupancyReadings;
    expect(second.items).toHaveLength(12);
    const third = (await list({ startTime: seconds(TICK), endTime: seconds(TICK) + 300, limit: 12, nextToken: second.nextToken })).json.data.listOccupancyReadings;
    expect(third).toEqual({ items: [], nextToken: null });
    // A short page carries none.
    expect((await list({ startTime: seconds(TICK), endTime: seconds(TICK) + 300, limit: 25 })).json.data.listOccupancyReadings.nextToken).toBeNull();
  });

  it('serves timestamps as epoch milliseconds (JSON numbers) and statuses as occupied / vacant; limit defaults to 100', async () => {
    const res = await list({ startTime: seconds('2026-01-07T08:00:00Z'), endTime: seconds('2026-01-07T18:00:00Z') });
    const page = res.json.data.listOccupancyReadings;
    expect(page.items).toHaveLength(100);
    expect(res.text).toContain(`"timestamp":${Date.parse('2026-01-07T08:00:00Z')}`);
    expect(new Set(page.items.map((i: { status: string }) => i.status))).toEqual(new Set(['occupied', 'vacant']));
    expect(page.items.every((i: { status: string; headcount: number }) => (i.status === 'vacant') === (i.headcount === 0))).toBe(true);
  });

  it('refuses limit outside 1..500 and a token it did not hand out, with deterministic BAD_USER_INPUT errors', async () => {
    const window = { startTime: seconds(TICK), endTime: seconds(TICK) + 3600 };
    for (const limit of [0, 501]) {
      const res = await list({ ...window, limit });
      expect([res.status, res.json.data]).toEqual([200, null]);
      expect(res.json.errors[0]).toMatchObject({ message: `limit must be between 1 and 500, got ${limit}`, extensions: { code: 'BAD_USER_INPUT', field: 'limit' } });
    }
    expect((await list({ ...window, limit: 500 })).json.data.listOccupancyReadings.items).toHaveLength(13 * 12);
    const v1Cursor = Buffer.from(`occ1:${Date.parse(TICK)}:00000000-0000-0000-0000-000000000000`).toString('base64url');
    const bad = await list({ ...window, nextToken: v1Cursor });
    expect(bad.json.errors[0]).toMatchObject({ message: expect.stringMatching(/^nextToken: not a token returned by this API/), extensions: { code: 'BAD_USER_INPUT' } });
  });

  it('keeps the webhook operations of v1, sendTestEvent included', async () => {
    const receiver = await startReceiver();
    try {
      const writeToken = await authenticate(s.url, s.customers[0]!.writeKey);
      const reg = await gql(s.url, writeToken, { query: `mutation { registerWebhook(input: { url: "${receiver.url}", eventTypes: ["Occupancy"] }) { id } }` });
      const id = reg.json.data.registerWebhook.id;
      const test = await gql(s.url, writeToken, { query: `mutation { sendTestEvent(webhookId: "${id}") }` });
      expect(test.json.data.sendTestEvent).toBe(true);
      expect(receiver.received).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });
});
