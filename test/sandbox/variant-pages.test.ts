import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { authenticate, gql } from './helpers.ts';
import { canonical, PAGES_QUERY, readPages } from './variant-readers.ts';

const clock = new FakeClock('2026-01-08T00:00:00Z');
let s: Sandbox;
let token: string;
beforeAll(async () => {
  s = await startSandbox({ clock, seed: 8, apiVariant: 'pages', lateArrivalMaxMs: 0, expiresIn: 86_400 });
  token = await authenticate(s.url, s.customers[0]!.readKey);
});
afterAll(() => s.close());

const page = (variables: Record<string, unknown>) => gql(s.url, token, { query: PAGES_QUERY, operationName: 'Page', variables });
const TICK = Date.parse('2026-01-07T10:00:00.000Z');
const HOUR = 3_600_000;

describe('sandbox API variant pages (page numbers, epoch-millisecond strings)', () => {
  it('numbers pages from 1 with totalCount and totalPages; a page past the last is empty; the pages together are the truth', async () => {
    const c = s.customers[0]!;
    const read = await readPages(s.url, token, TICK, TICK + 2 * HOUR, 50);
    const truth = [...s.truth.observations(c.id, { from: TICK, to: TICK + 2 * HOUR })].map(canonical);
    expect(read.totalCount).toBe(24 * 12);
    expect(read.pages).toBe(Math.ceil((24 * 12) / 50));
    expect(read.records).toEqual(truth);
    const past = (await page({ from: String(TICK), to: String(TICK + 2 * HOUR), page: 9, pageSize: 50 })).json.data.occupancyPage;
    expect(past).toEqual({ totalCount: 288, totalPages: 6, page: 9, pageSize: 50, readings: [] });
  });

  it('treats [from, to) as half-open epoch milliseconds and serves recordedAt as a digit string, statuses Occupied / Unoccupied', async () => {
    const at = await page({ from: String(TICK), to: String(TICK + 1), page: 1, pageSize: 200 });
    expect(at.text).toContain(`"recordedAt":"${TICK}"`);
    const readings = at.json.data.occupancyPage.readings;
    expect(readings).toHaveLength(12);
    expect(readings.every((r: { status: string }) => r.status === 'Occupied' || r.status === 'Unoccupied')).toBe(true);
    expect((await page({ from: String(TICK - 299_999), to: String(TICK), page: 1, pageSize: 200 })).json.data.occupancyPage.totalCount).toBe(0);
    const day = await readPages(s.url, token, Date.parse('2026-01-07T00:00:00Z'), Date.parse('2026-01-08T00:00:00Z'), 200);
    expect(new Set(day.records.map((r) => r.occupancyStatus))).toEqual(new Set(['CurrentlyOccupied', 'Unoccupied']));
  });

  it('refuses pageSize outside 1..200, page 0 and bounds that are not digit strings, with deterministic BAD_USER_INPUT errors', async () => {
    const window = { from: String(TICK), to: String(TICK + HOUR) };
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ ...window, page: 1, pageSize: 201 }, 'pageSize', 'pageSize must be between 1 and 200, got 201'],
      [{ ...window, page: 1, pageSize: 0 }, 'pageSize', 'pageSize must be between 1 and 200, got 0'],
      [{ ...window, page: 0, pageSize: 10 }, 'page', 'page must be 1 or more (pages are numbered from 1), got 0'],
      [{ ...window, from: '2026-01-07T10:00:00Z', page: 1, pageSize: 10 }, 'from', 'from must be epoch milliseconds as a string of digits, e.g. "1732440000000"; got "2026-01-07T10:00:00Z"'],
      [{ ...window, to: '1.7e12', page: 1, pageSize: 10 }, 'to', 'to must be epoch milliseconds as a string of digits, e.g. "1732440000000"; got "1.7e12"'],
    ];
    for (const [variables, field, message] of cases) {
      const res = await page(variables);
      expect([res.status, res.json.data]).toEqual([200, null]);
      expect(res.json.errors[0]).toMatchObject({ message, extensions: { code: 'BAD_USER_INPUT', field } });
    }
    expect((await page({ ...window, page: 1, pageSize: 200 })).json.data.occupancyPage.readings).toHaveLength(12 * 12);
  });

  it('counts and skips by tick without losing a reading when a building was removed inside the window', async () => {
    const c = s.customers[0]!;
    const removed = s.truth.buildings(c.id)[1]!;
    s.removeBuilding(c.id, removed.id);
    clock.advance(HOUR);
    try {
      const from = clock.now() - 2 * HOUR;
      const read = await readPages(s.url, token, from, clock.now() + 1, 7);
      const truth = [...s.truth.observations(c.id, { from, to: clock.now() + 1 })].map(canonical);
      // 12 readings per tick before the removal, 8 after it.
      expect(truth).toHaveLength(12 * 12 + 13 * 8);
      expect(read.totalCount).toBe(truth.length);
      expect(read.records).toEqual(truth);
    } finally {
      s.restoreBuilding(c.id, removed.id);
    }
  });
});
