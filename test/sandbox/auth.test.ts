import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { authenticate, gql, post } from './helpers.ts';

const open: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});
async function sandbox(options: Parameters<typeof startSandbox>[0] = {}) {
  const s = await startSandbox(options);
  open.push(s);
  return s;
}
const BUILDINGS = { query: '{ buildings { id name } }' };

function decodePayload(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8'));
}

describe('sandbox auth endpoint', () => {
  it('issues an HS256 JWT with iat, exp, sub = key name, the customer, scopes and the user write flag', async () => {
    const clock = new FakeClock('2026-01-08T00:00:00Z');
    const s = await sandbox({ clock, expiresIn: 600 });
    const c = s.customers[0]!;
    const res = await post(`${s.url}/api/v1/auth`, JSON.stringify({ ApiKey: c.readKey.key, ApiSecret: c.readKey.secret }), {
      Accept: 'application/json',
    });
    expect(res.status).toBe(200);
    expect(res.json.expiresIn).toBe(600);
    const [header] = (res.json.idToken as string).split('.');
    expect(JSON.parse(Buffer.from(header!, 'base64url').toString('utf8'))).toMatchObject({ alg: 'HS256', typ: 'JWT' });
    expect(decodePayload(res.json.idToken)).toMatchObject({
      sub: c.readKey.key,
      customerId: c.id,
      scopes: ['ReadPublicApi'],
      write: false,
      iat: Date.parse('2026-01-08T00:00:00Z') / 1000,
      exp: Date.parse('2026-01-08T00:00:00Z') / 1000 + 600,
    });
    expect(s.stats.authCalls).toBe(1);
  });

  it('answers 401 with a JSON error body for a wrong secret or an unknown key', async () => {
    const s = await sandbox();
    const c = s.customers[0]!;
    for (const body of [
      { ApiKey: c.readKey.key, ApiSecret: 'wrong' },
      { ApiKey: 'no-such-key', ApiSecret: c.readKey.secret },
      { ApiKey: c.readKey.key, ApiSecret: s.customers[1]!.readKey.secret },
    ]) {
      const res = await post(`${s.url}/api/v1/auth`, JSON.stringify(body));
      expect(res.status).toBe(401);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.json.errors[0].extensions.code).toBe('INVALID_CREDENTIALS');
    }
  });

  it('answers 400 for malformed JSON, a non-object body and missing fields', async () => {
    const s = await sandbox();
    for (const body of ['{"ApiKey": ', '"just a string"', '[]', '{"ApiKey":"k"}', '{"ApiSecret":"s"}', '{"ApiKey":1,"ApiSecret":"s"}']) {
      const res = await post(`${s.url}/api/v1/auth`, body);
      expect(res.status, body).toBe(400);
      expect(res.json.errors[0].message).toBeTruthy();
    }
  });

  it('accepts the token until its age reaches expiresIn on the sandbox clock, then answers 401', async () => {
    const clock = new FakeClock('2026-01-08T00:00:00Z');
    const s = await sandbox({ clock, expiresIn: 900 });
    const token = await authenticate(s.url, s.customers[0]!.readKey);
    clock.advance(899_999);
    expect((await gql(s.url, token, BUILDINGS)).status).toBe(200);
    clock.advance(1);
    const expired = await gql(s.url, token, BUILDINGS);
    expect(expired.status).toBe(401);
    expect(expired.json.errors[0].message).toMatch(/expired/);
    const fresh = await authenticate(s.url, s.customers[0]!.readKey);
    expect((await gql(s.url, fresh, BUILDINGS)).status).toBe(200);
  });

  it('answers 401 for a missing, malformed or forged bearer token', async () => {
    const s = await sandbox();
    const token = await authenticate(s.url, s.customers[0]!.readKey);
    const [h, p] = token.split('.');
    const forgedPayload = Buffer.from(JSON.stringify({ ...decodePayload(token), customerId: s.customers[1]!.id })).toString('base64url');
    for (const authorization of [undefined, 'Basic abc', 'Bearer not-a-jwt', `Bearer ${h}.${forgedPayload}.${token.split('.')[2]}`, `Bearer ${h}.${p}.AAAA`]) {
      const headers: Record<string, string> = authorization ? { Authorization: authorization } : {};
      const res = await post(`${s.url}/api/external/query`, JSON.stringify(BUILDINGS), headers);
      expect(res.status, String(authorization)).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
    }
  });

  it('revokeTokens makes outstanding tokens fail with 401 before expiry, for one customer only', async () => {
    const s = await sandbox();
    const [a, b] = s.customers;
    const tokenA = await authenticate(s.url, a!.readKey);
    const tokenB = await authenticate(s.url, b!.readKey);
    s.revokeTokens(a!.id);
    expect((await gql(s.url, tokenA, BUILDINGS)).status).toBe(401);
    expect((await gql(s.url, tokenB, BUILDINGS)).status).toBe(200);
    const newA = await authenticate(s.url, a!.readKey);
    expect((await gql(s.url, newA, BUILDINGS)).status).toBe(200);
  });

  it('answers 405 for GET and 404 for unknown paths, and 415 for a non-JSON content type', async () => {
    const s = await sandbox();
    const get = await fetch(`${s.url}/api/v1/auth`);
    expect(get.status).toBe(405);
    expect((await post(`${s.url}/api/v2/auth`, '{}')).status).toBe(404);
    const c = s.customers[0]!;
    const res = await post(`${s.url}/api/v1/auth`, JSON.stringify({ ApiKey: c.readKey.key, ApiSecret: c.readKey.secret }), {
      'Content-Type': 'text/plain',
    });
    expect(res.status).toBe(415);
  });
});
