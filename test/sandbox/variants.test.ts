import { buildSchema } from 'graphql';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { API_VARIANT_INFO, API_VARIANTS, spellStatus, startSandbox, type ApiVariant, type Sandbox, type SandboxOptions } from '../../src/sandbox/index.ts';
import { ROOT } from '../support/process.ts';
import { authenticate, gql, pageAll } from './helpers.ts';
import { canonical, readCapped, readEdges, readPages, readPerSpace, readToken, readV2, type Read } from './variant-readers.ts';

const open: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});
async function sandbox(options: SandboxOptions) {
  const s = await startSandbox(options);
  open.push(s);
  return s;
}
const iso = (ms: number) => new Date(ms).toISOString();
const MIN = 60_000;

/** 37 divides no tick's 12 readings, so pages end inside ties on the time. */
const SIZE = 37;

/**
 * Each paged variant of interval sensors reading [fromMs, toMs) its own way (bounds on whole minutes; token's end is
 * inclusive seconds). presence and change: test/sandbox/variant-sensors.test.ts.
 */
const READ_WINDOW: Record<Exclude<ApiVariant, 'capped' | 'presence' | 'change'>, (url: string, token: string, fromMs: number, toMs: number) => Promise<Read>> = {
  v1: async (url, token, fromMs, toMs) => {
    const { nodes, pages } = await pageAll(url, token, iso(fromMs), iso(toMs), SIZE);
    return { records: nodes, pages };
  },
  v2: (url, token, fromMs, toMs) => readV2(url, token, iso(fromMs), iso(toMs), SIZE),
  edges: (url, token, fromMs, toMs) => readEdges(url, token, iso(fromMs), iso(toMs), SIZE),
  // Nothing lies in the last second of a window of 5-minute ticks, so [from, to) is [from, to - 1 s] here.
  token: (url, token, fromMs, toMs) => readToken(url, token, fromMs / 1000, toMs / 1000 - 1, SIZE),
  pages: (url, token, fromMs, toMs) => readPages(url, token, fromMs, toMs, SIZE),
  'per-space': (url, token, fromMs, toMs) => readPerSpace(url, token, iso(fromMs), iso(toMs), SIZE),
};

describe('sandbox API variants: one data model, several API shapes', () => {
  it.each(Object.keys(READ_WINDOW) as Array<keyof typeof READ_WINDOW>)(
    '%s: paging through a whole window yields exactly the truth of that window, before and after a late tick arrives',
    async (variant) => {
      const clock = new FakeClock('2026-01-08T00:00:00Z');
      const s = await sandbox({ clock, seed: 5, apiVariant: variant, lateArrivalMaxMs: 15 * MIN, expiresIn: 86_400 });
      const c = s.customers[0]!;
      const token = await authenticate(s.url, c.readKey);
      // A tick that becomes visible after its successor: late data, which every variant must hide until it arrives.
      const all = [...s.truth.observations(c.id, { from: '2026-01-07T08:00:00Z', visibleAt: '2026-01-09T00:00:00Z' })];
      const ticks = [...new Map(all.map((o) => [Date.parse(o.created), Date.parse(o.visibleAt)])).entries()];
      const i = ticks.findIndex(([, visibleAt], j) => j + 1 < ticks.length && visibleAt > ticks[j + 1]![1]);
      expect(i).toBeGreaterThanOrEqual(0);
      const [late, next] = [ticks[i]!, ticks[i + 1]!];
      const fromMs = late[0] - 2 * 60 * MIN;
      const toMs = next[0] + 5 * MIN;
      const truth = () => [...s.truth.observations(c.id, { from: fromMs, to: toMs })].map(canonical);

      clock.set(next[1]);
      const before = await READ_WINDOW[variant](s.url, token, fromMs, toMs);
      expect(before.records.some((r) => r.created === iso(late[0]))).toBe(false);
      expect(before.records.filter((r) => r.created === iso(next[0]))).toHaveLength(12);
      expect(before.records).toEqual(truth());
      expect(before.pages).toBeGreaterThan(1);

      clock.set(late[1]);
      const after = await READ_WINDOW[variant](s.url, token, fromMs, toMs);
      expect(after.records.filter((r) => r.created === iso(late[0]))).toHaveLength(12);
      expect(after.records).toEqual(truth());
      expect(new Set(after.records.map((r) => r.occupancyStatus))).toEqual(new Set(['CurrentlyOccupied', 'Unoccupied']));
    },
  );

  it('capped: a window under the cap yields exactly its truth in one answer', async () => {
    const clock = new FakeClock('2026-01-08T00:00:00Z');
    const s = await sandbox({ clock, apiVariant: 'capped' });
    const c = s.customers[0]!;
    const token = await authenticate(s.url, c.readKey);
    const [from, to] = ['2026-01-07T10:00:00.000Z', '2026-01-07T13:00:00.000Z'];
    const { records } = await readCapped(s.url, token, from, to);
    expect(records).toHaveLength(36 * 12);
    expect(records).toEqual([...s.truth.observations(c.id, { from, to })].map(canonical));
  });

  it.each(API_VARIANTS)('%s: serves the documented buildings(nameLike) query, gzip-compressed on request', async (variant) => {
    const s = await sandbox({ clock: new FakeClock('2026-01-08T00:00:00Z'), apiVariant: variant });
    const c = s.customers[0]!;
    const token = await authenticate(s.url, c.readKey);
    const target = s.truth.buildings(c.id)[2]!;
    const res = await gql(s.url, token, { query: 'query B($n: String) { buildings(nameLike: $n) { id name } }', operationName: 'B', variables: { n: `%${target.name.slice(-2)}` } }, { 'Accept-Encoding': 'gzip' });
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(res.json.data.buildings).toEqual([{ id: target.id, name: target.name }]);
  });

  it.each(API_VARIANTS)('%s: the injected faults apply as they do to v1', async (variant) => {
    const s = await sandbox({ clock: new FakeClock('2026-01-08T00:00:00Z'), apiVariant: variant });
    const token = await authenticate(s.url, s.customers[0]!.readKey);
    s.setFaults({ rateLimit: 1, retryAfterSeconds: 7 });
    const limited = await gql(s.url, token, { query: '{ buildings { id } }' });
    expect([limited.status, limited.headers['retry-after']]).toEqual([429, '7']);
    s.setFaults({ graphqlError: 1 });
    const failed = await gql(s.url, token, { query: '{ buildings { id } }' });
    expect(failed.json).toMatchObject({ data: null, errors: [{ extensions: { code: 'INTERNAL_SERVER_ERROR' } }] });
    expect(s.stats.faults).toMatchObject({ rateLimit: 1, graphqlError: 1 });
  });

  it.each(API_VARIANTS)("%s: its schema file declares the occupancy query API_VARIANT_INFO names, and buildings as documented", (variant) => {
    const info = API_VARIANT_INFO[variant];
    const sdl = readFileSync(`${ROOT}/${info.schemaFile}`, 'utf8');
    const query = buildSchema(sdl).getQueryType()!.getFields();
    const name = info.query.slice(0, info.query.indexOf('('));
    expect(Object.keys(query)).toContain(name);
    expect(query[name]!.args.map((a) => a.name).join(', ')).toBe(info.query.slice(name.length + 1, -1).replace(/: \{[^}]*\}/g, ''));
    expect(String(query.buildings!.type)).toBe('[Building!]!');
    expect(query.buildings!.args.map((a) => `${a.name}: ${String(a.type)}`)).toEqual(['nameLike: String']);
  });

  it('exports how each variant spells the canonical statuses, and refuses a status that is not canonical', () => {
    expect(API_VARIANTS.map((v) => [spellStatus(v, 'CurrentlyOccupied'), spellStatus(v, 'Unoccupied')])).toEqual([
      ['CurrentlyOccupied', 'Unoccupied'],
      ['CurrentlyOccupied', 'Unoccupied'],
      ['CURRENTLY_OCCUPIED', 'NOT_OCCUPIED'],
      ['occupied', 'vacant'],
      ['Occupied', 'Unoccupied'],
      ['CurrentlyOccupied', 'Unoccupied'],
      ['true', 'false'],
      ['Occupied', 'Available'],
      ['CurrentlyOccupied', 'Unoccupied'],
    ]);
    expect(() => spellStatus('edges', 'Occupied')).toThrow(/not a canonical status/);
  });

  it('refuses an unknown variant, and a misbehaviour of the v1 occupancy query under another variant', async () => {
    await expect(startSandbox({ apiVariant: 'relay' as ApiVariant })).rejects.toThrow(/apiVariant: "relay" is not a variant; use one of v1, v2, edges, token, pages, capped, presence, change, per-space/);
    await expect(startSandbox({ apiVariant: 'edges', misbehave: 'nullHeadcount' })).rejects.toThrow(/nullHeadcount rewrites v1's occupancy query, which the edges variant does not serve/);
    const s = await sandbox({ clock: new FakeClock('2026-01-08T00:00:00Z'), apiVariant: 'token' });
    expect(() => s.setMisbehaviour('ignoreAfter')).toThrow(RangeError);
    // A transport misbehaviour applies whatever the variant.
    s.setMisbehaviour('htmlLoginPage');
    const token = await authenticate(s.url, s.customers[0]!.readKey);
    const res = await gql(s.url, token, { query: '{ buildings { id } }' });
    expect(res.headers['content-type']).toMatch(/^text\/html/);
  });
});
