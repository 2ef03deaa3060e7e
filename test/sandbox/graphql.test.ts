import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { authenticate, gql, OCCUPANCY_QUERY, pageAll } from './helpers.ts';

const clock = new FakeClock('2026-01-08T00:00:00Z');
let s: Sandbox;
let readToken: string;
let writeToken: string;
let viewerToken: string;
const REGISTER = `mutation Register($url: String!) {
  registerWebhook(input: { url: $url, eventTypes: ["Occupancy"] }) { id url signed compress }
}`;

beforeAll(async () => {
  s = await startSandbox({ clock, seed: 3 });
  const c = s.customers[0]!;
  readToken = await authenticate(s.url, c.readKey);
  writeToken = await authenticate(s.url, c.writeKey);
  viewerToken = await authenticate(s.url, c.keys.find((k) => k.scopes.includes('WritePublicApi') && !k.userCanWrite)!);
});
afterAll(() => s.close());

describe('sandbox GraphQL request rules', () => {
  it('answers the known buildings query with id, name and the assumed timeZone', async () => {
    const res = await gql(s.url, readToken, { query: '{ buildings { id name timeZone } }' });
    expect(res.status).toBe(200);
    expect(res.json.data.buildings).toEqual(s.truth.buildings(s.customers[0]!.id));
    expect(res.json.data.buildings).toHaveLength(3);
  });

  it('filters buildings with nameLike (SQL LIKE wildcards, case-insensitive, substring without wildcards)', async () => {
    const all = s.truth.buildings(s.customers[0]!.id);
    const target = all[1]!;
    const word = target.name.split(' ')[0]!;
    const bySubstring = await gql(s.url, readToken, { query: 'query B($n: String) { buildings(nameLike: $n) { name } }', operationName: 'B', variables: { n: word.toLowerCase() } });
    expect(bySubstring.json.data.buildings.map((b: { name: string }) => b.name)).toEqual(all.filter((b) => b.name.includes(word)).map((b) => b.name));
    const byPattern = await gql(s.url, readToken, { query: `{ buildings(nameLike: "%${target.name.slice(-2)}") { name } }` });
    expect(byPattern.json.data.buildings).toEqual([{ name: target.name }]);
  });

  it('answers 400 when variables is a string or an array', async () => {
    for (const variables of ['{"from":"x"}', [1]]) {
      const res = await gql(s.url, readToken, { query: OCCUPANCY_QUERY, operationName: 'Occupancy', variables });
      expect(res.status).toBe(400);
      expect(res.json.errors[0].message).toMatch(/variables must be a JSON object/);
    }
  });

  it('answers 400 when a named operation is sent without operationName, or operationName names nothing', async () => {
    const missing = await gql(s.url, readToken, { query: 'query Buildings { buildings { id } }' });
    expect(missing.status).toBe(400);
    expect(missing.json.errors[0].message).toMatch(/operationName is required/);
    const wrong = await gql(s.url, readToken, { query: 'query Buildings { buildings { id } }', operationName: 'Other' });
    expect(wrong.status).toBe(400);
    const ok = await gql(s.url, readToken, { query: 'query Buildings { buildings { id } }', operationName: 'Buildings' });
    expect(ok.status).toBe(200);
  });

  it('rejects unknown fields and arguments like a real GraphQL server (validation errors, 400)', async () => {
    const field = await gql(s.url, readToken, { query: '{ buildings { id name address } }' });
    expect(field.status).toBe(400);
    expect(field.json.errors[0].message).toMatch(/Cannot query field "address"/);
    const arg = await gql(s.url, readToken, { query: '{ buildings(city: "x") { id } }' });
    expect(arg.status).toBe(400);
    expect(arg.json.errors[0].message).toMatch(/Unknown argument "city"/);
    const syntax = await gql(s.url, readToken, { query: '{ buildings { id ' });
    expect(syntax.status).toBe(400);
    expect(syntax.json.errors[0].extensions.code).toBe('GRAPHQL_PARSE_FAILED');
  });

  it('serves a schemaSdl override, so a document using a missing field fails validation', async () => {
    const sdl = 'scalar DateTime\ntype Query { buildings(nameLike: String): [Building!]! }\ntype Building { id: ID! name: String! }';
    const other = await startSandbox({ clock, schemaSdl: sdl });
    try {
      const token = await authenticate(other.url, other.customers[0]!.readKey);
      const res = await gql(other.url, token, { query: OCCUPANCY_QUERY, operationName: 'Occupancy', variables: { from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z' } });
      expect(res.status).toBe(400);
      expect(res.json.errors.map((e: { message: string }) => e.message)).toContain('Cannot query field "occupancy" on type "Query".');
    } finally {
      await other.close();
    }
  });

  it('rejects occupancy.first above 5000, a bad DateTime and a foreign cursor with GraphQL errors', async () => {
    const vars = { from: '2026-01-07T00:00:00Z', to: '2026-01-08T00:00:00Z' };
    const big = await gql(s.url, readToken, { query: OCCUPANCY_QUERY, operationName: 'Occupancy', variables: { ...vars, first: 5001 } });
    expect(big.status).toBe(200);
    expect(big.json.errors[0].message).toMatch(/first must be between 0 and 5000/);
    expect(big.json.data).toBeNull();
    const max = await gql(s.url, readToken, { query: OCCUPANCY_QUERY, operationName: 'Occupancy', variables: { ...vars, first: 5000 } });
    expect(max.json.data.occupancy.nodes.length).toBe(3 * 4 * 288);
    const date = await gql(s.url, readToken, { query: OCCUPANCY_QUERY, operationName: 'Occupancy', variables: { ...vars, from: '2026-01-07 00:00' } });
    expect(date.status).toBe(400);
    expect(date.json.errors[0].message).toMatch(/DateTime must be an ISO 8601 string/);
    const cursor = await gql(s.url, readToken, { query: OCCUPANCY_QUERY, operationName: 'Occupancy', variables: { ...vars, after: 'bm9wZQ' } });
    expect(cursor.json.errors[0].message).toMatch(/after: not a cursor/);
  });

  it('gzip-compresses responses when Accept-Encoding has gzip, and only then', async () => {
    const body = { query: OCCUPANCY_QUERY, operationName: 'Occupancy', variables: { from: '2026-01-07T00:00:00Z', to: '2026-01-08T00:00:00Z', first: 2000 } };
    const zipped = await gql(s.url, readToken, body, { 'Accept-Encoding': 'gzip, deflate' });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(Number(zipped.headers['content-length'])).toBe(zipped.raw.length);
    const plain = await gql(s.url, readToken, body);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(gunzipSync(zipped.raw).toString('utf8')).toBe(plain.raw.toString('utf8'));
    expect(zipped.raw.length).toBeLessThan(plain.raw.length / 3);
    const refused = await gql(s.url, readToken, body, { 'Accept-Encoding': 'gzip;q=0, identity' });
    expect(refused.headers['content-encoding']).toBeUndefined();
  });
});

describe('sandbox scopes', () => {
  it('answers 403 with a JSON body to a mutation from a key without WritePublicApi', async () => {
    const res = await gql(s.url, readToken, { query: REGISTER, operationName: 'Register', variables: { url: 'https://example.com/hook' } });
    expect(res.status).toBe(403);
    expect(res.json.errors[0]).toMatchObject({ extensions: { code: 'FORBIDDEN' } });
    expect(res.json.errors[0].message).toMatch(/WritePublicApi/);
  });

  it('answers 403 to a mutation when the key has WritePublicApi but its user lacks write permission', async () => {
    const res = await gql(s.url, viewerToken, { query: REGISTER, operationName: 'Register', variables: { url: 'https://example.com/hook' } });
    expect(res.status).toBe(403);
    expect(res.json.errors[0].message).toMatch(/write permission on the user/);
  });

  it('accepts the mutation with WritePublicApi and user write permission, and queries with ReadPublicApi', async () => {
    const res = await gql(s.url, writeToken, { query: REGISTER, operationName: 'Register', variables: { url: 'https://example.com/hook' } });
    expect(res.status).toBe(200);
    expect(res.json.data.registerWebhook).toMatchObject({ url: 'https://example.com/hook', signed: false, compress: false });
    const list = await gql(s.url, readToken, { query: '{ webhooks { id url } }' });
    expect(list.json.data.webhooks).toContainEqual({ id: res.json.data.registerWebhook.id, url: 'https://example.com/hook' });
  });
});

describe('sandbox customer isolation', () => {
  it('a key never sees another customer’s buildings, observations or webhooks', async () => {
    const [a, b] = s.customers;
    const tokenB = await authenticate(s.url, b!.writeKey);
    const buildingsB = await gql(s.url, tokenB, { query: '{ buildings { id name timeZone } }' });
    const idsA = new Set(s.truth.buildings(a!.id).map((x) => x.id));
    expect(buildingsB.json.data.buildings).toEqual(s.truth.buildings(b!.id));
    expect(buildingsB.json.data.buildings.some((x: { id: string }) => idsA.has(x.id))).toBe(false);

    const range = ['2026-01-07T20:00:00.000Z', '2026-01-08T00:00:00.000Z'] as const;
    const fsA = new Set(s.truth.floorSpaces(a!.id).map((f) => f.id));
    const fsB = new Set(s.truth.floorSpaces(b!.id).map((f) => f.id));
    const pagedB = await pageAll(s.url, tokenB, range[0], range[1], 500);
    expect(pagedB.nodes.length).toBeGreaterThan(0);
    expect(pagedB.nodes.every((n) => fsB.has(n.floorSpaceId) && !fsA.has(n.floorSpaceId))).toBe(true);
    const pagedA = await pageAll(s.url, readToken, range[0], range[1], 500);
    const idsOfA = new Set(pagedA.nodes.map((n) => n.id));
    expect(pagedB.nodes.some((n) => idsOfA.has(n.id))).toBe(false);

    const hookA = await gql(s.url, writeToken, { query: REGISTER, operationName: 'Register', variables: { url: 'https://a.example.com/hook' } });
    const idA = hookA.json.data.registerWebhook.id as string;
    const listB = await gql(s.url, tokenB, { query: '{ webhooks { id } }' });
    expect(listB.json.data.webhooks.map((w: { id: string }) => w.id)).not.toContain(idA);
    const update = await gql(s.url, tokenB, {
      query: 'mutation U($id: ID!) { updateWebhook(id: $id, input: { url: "https://evil.example.com" }) { id } }',
      operationName: 'U',
      variables: { id: idA },
    });
    expect(update.json.errors[0].message).toMatch(/no webhook/);
    expect(s.webhooks(a!.id).find((w) => w.id === idA)!.url).toBe('https://a.example.com/hook');
  });
});
