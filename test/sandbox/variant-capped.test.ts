import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { authenticate, gql } from './helpers.ts';
import { canonical, cappedTime, readCapped } from './variant-readers.ts';

const clock = new FakeClock('2026-01-08T00:00:00Z');
let s: Sandbox;
let token: string;
beforeAll(async () => {
  s = await startSandbox({ clock, seed: 9, apiVariant: 'capped', lateArrivalMaxMs: 0 });
  token = await authenticate(s.url, s.customers[0]!.readKey);
});
afterAll(() => s.close());

describe('sandbox API variant capped (one unpaged list, silently cut at 500)', () => {
  it('answers the first 500 readings in (created, id) order of a window holding more, and nothing says so', async () => {
    const c = s.customers[0]!;
    const [from, to] = ['2026-01-07T00:00:00.000Z', '2026-01-08T00:00:00.000Z'];
    const truth = [...s.truth.observations(c.id, { from, to })].map(canonical);
    expect(truth).toHaveLength(288 * 12);
    const res = await gql(s.url, token, { query: `{ occupancyReadings(from: "${from}", to: "${to}") { id floorSpaceId occupancyStatus headcount created } }` });
    expect(res.status).toBe(200);
    expect(Object.keys(res.json)).toEqual(['data']);
    expect(res.json.data.occupancyReadings).toHaveLength(500);
    // Times in epoch seconds: 2026-01-07T00:00:00Z is 1767744000.
    expect(res.json.data.occupancyReadings[0].created).toBe(1767744000);
    expect(res.json.data.occupancyReadings.map((r: Record<string, unknown>) => ({ ...r, created: cappedTime(r.created) }))).toEqual(truth.slice(0, 500));
  });

  it('answers a window of exactly 500 readings whole and a window of 510 cut to 500: the two answers look alike', async () => {
    // 10 floor spaces, so 50 ticks hold exactly the cap.
    const ten = await startSandbox({ clock, seed: 9, apiVariant: 'capped', customers: 1, buildingsPerCustomer: 5, floorSpacesPerBuilding: 2, lateArrivalMaxMs: 0 });
    try {
      const c = ten.customers[0]!;
      const t = await authenticate(ten.url, c.readKey);
      const from = Date.parse('2026-01-07T10:00:00Z');
      const truth = (ticks: number) => [...ten.truth.observations(c.id, { from, to: from + ticks * 300_000 })].map(canonical);
      const exact = await readCapped(ten.url, t, new Date(from).toISOString(), new Date(from + 50 * 300_000).toISOString());
      expect(exact.records).toEqual(truth(50));
      expect(exact.records).toHaveLength(500);
      const cut = await readCapped(ten.url, t, new Date(from).toISOString(), new Date(from + 51 * 300_000).toISOString());
      expect(truth(51)).toHaveLength(510);
      expect(cut.records).toEqual(truth(51).slice(0, 500));
    } finally {
      await ten.close();
    }
  });

  it('takes no paging arguments at all', async () => {
    const res = await gql(s.url, token, { query: '{ occupancyReadings(from: "2026-01-07T00:00:00Z", to: "2026-01-08T00:00:00Z", first: 10) { id } }' });
    expect(res.status).toBe(400);
    expect(res.json.errors[0].message).toMatch(/Unknown argument "first"/);
  });
});
