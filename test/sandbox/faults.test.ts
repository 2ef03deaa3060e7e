import http from 'node:http';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { startSandbox, type FaultOptions, type Sandbox } from '../../src/sandbox/index.ts';
import { authenticate, gql, post } from './helpers.ts';

const open: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});
async function withFaults(faults: FaultOptions) {
  const s = await startSandbox({ clock: new FakeClock('2026-01-08T00:00:00Z') });
  open.push(s);
  // Authenticate before switching faults on: they apply to the query endpoint.
  const token = await authenticate(s.url, s.customers[0]!.readKey);
  s.setFaults(faults);
  return { s, token };
}
const BUILDINGS = { query: '{ buildings { id name } }' };

/** Reads whatever arrives until the connection closes, without failing on a cut body. */
function rawExchange(url: string, token: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; bytes: Buffer; complete: boolean }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST',
      agent: false,
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}`, 'Accept-Encoding': 'gzip' },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let complete = false;
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => (complete = true));
      res.on('error', () => undefined);
      res.on('close', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes: Buffer.concat(chunks), complete }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(BUILDINGS));
  });
}

describe('sandbox fault injection', () => {
  it('answers 5xx with a JSON body', async () => {
    const { s, token } = await withFaults({ serverError: 1 });
    const statuses = [];
    for (let i = 0; i < 3; i++) {
      const res = await gql(s.url, token, BUILDINGS);
      expect(res.json.errors[0].message).toMatch(/injected fault/);
      statuses.push(res.status);
    }
    expect(statuses).toEqual([500, 502, 503]);
    expect(s.stats.faults).toEqual({ serverError: 3 });
  });

  it('answers 429 with Retry-After in seconds', async () => {
    const { s, token } = await withFaults({ rateLimit: 1, retryAfterSeconds: 7 });
    const res = await gql(s.url, token, BUILDINGS);
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBe('7');
    expect(s.stats.faults.rateLimit).toBe(1);
  });

  it('resets the connection without an answer', async () => {
    const { s, token } = await withFaults({ connectionReset: 1 });
    await expect(gql(s.url, token, BUILDINGS)).rejects.toThrow(/socket hang up|ECONNRESET/);
    expect(s.stats.faults.connectionReset).toBe(1);
  });

  it('answers slowly: a client with a shorter timeout gives up, a patient one gets the answer', async () => {
    const { s, token } = await withFaults({ slow: 1, slowMs: 400 });
    const impatient = post(`${s.url}/api/external/query`, JSON.stringify(BUILDINGS), { Authorization: `Bearer ${token}` }, 50);
    await expect(impatient).rejects.toThrow(/client timeout/);
    const patient = await post(`${s.url}/api/external/query`, JSON.stringify(BUILDINGS), { Authorization: `Bearer ${token}` }, 10_000);
    expect(patient.status).toBe(200);
    expect(patient.json.data.buildings).toHaveLength(3);
    expect(s.stats.faults.slow).toBe(2);
  });

  it('holds back exactly the requests slowRequests names, each its own time, whatever the rates draw', async () => {
    const { s, token } = await withFaults({ slowRequests: { 1: 60_000 } });
    const send = (timeoutMs: number) => post(`${s.url}/api/external/query`, JSON.stringify(BUILDINGS), { Authorization: `Bearer ${token}` }, timeoutMs);
    expect((await send(10_000)).status).toBe(200);
    await expect(send(200)).rejects.toThrow(/client timeout/);
    expect((await send(10_000)).status).toBe(200);
    expect(s.stats.faults).toEqual({ slow: 1 });
  });

  it('sends a truncated gzip body under a full Content-Length, then drops the connection', async () => {
    const { s, token } = await withFaults({ truncatedGzip: 1 });
    const res = await rawExchange(`${s.url}/api/external/query`, token);
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(res.complete).toBe(false);
    expect(res.bytes.length).toBeLessThan(Number(res.headers['content-length']));
    expect(() => gunzipSync(res.bytes)).toThrow();
    expect(s.stats.faults.truncatedGzip).toBe(1);
  });

  it('revokes the token before its expiry: 401 now and for later requests, until a new token is fetched', async () => {
    const { s, token } = await withFaults({ revokeToken: 1 });
    const res = await gql(s.url, token, BUILDINGS);
    expect(res.status).toBe(401);
    expect(res.json.errors[0].message).toMatch(/revoked/);
    s.setFaults(undefined);
    expect((await gql(s.url, token, BUILDINGS)).status).toBe(401);
    const fresh = await authenticate(s.url, s.customers[0]!.readKey);
    expect((await gql(s.url, fresh, BUILDINGS)).status).toBe(200);
    expect(s.stats.faults.revokeToken).toBe(1);
  });

  it('answers 200 with errors[] for a GraphQL error', async () => {
    const { s, token } = await withFaults({ graphqlError: 1 });
    const res = await gql(s.url, token, BUILDINGS);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ data: null, errors: [{ extensions: { code: 'INTERNAL_SERVER_ERROR' } }] });
  });

  it('draws faults deterministically from the seed at the configured rates', async () => {
    const mix: FaultOptions = { seed: 42, serverError: 0.2, rateLimit: 0.1, graphqlError: 0.1 };
    const outcomes = async (faults: FaultOptions) => {
      const { s, token } = await withFaults(faults);
      const seen: string[] = [];
      for (let i = 0; i < 200; i++) {
        const res = await gql(s.url, token, BUILDINGS);
        seen.push(res.status === 200 && res.json.errors ? 'gql' : String(res.status));
      }
      return { seen, stats: s.stats };
    };
    const a = await outcomes(mix);
    const b = await outcomes(mix);
    const c = await outcomes({ ...mix, seed: 43 });
    expect(a.seen).toEqual(b.seen);
    expect(a.seen).not.toEqual(c.seen);
    const count = (v: (x: string) => boolean) => a.seen.filter(v).length;
    expect(count((x) => x.startsWith('5'))).toBe(a.stats.faults.serverError);
    expect(count((x) => x === '429')).toBe(a.stats.faults.rateLimit);
    expect(count((x) => x === 'gql')).toBe(a.stats.faults.graphqlError);
    // Rates are probabilities per request: over 200 draws, well inside these bounds.
    expect(a.stats.faults.serverError).toBeGreaterThan(20);
    expect(a.stats.faults.serverError).toBeLessThan(60);
    expect(count((x) => x === '200')).toBeGreaterThan(100);
    expect(a.stats.queries).toBe(200);
  });

  it('leaves the auth endpoint alone unless applyToAuth is set', async () => {
    const { s } = await withFaults({ serverError: 1 });
    const key = s.customers[0]!.readKey;
    const body = JSON.stringify({ ApiKey: key.key, ApiSecret: key.secret });
    expect((await post(`${s.url}/api/v1/auth`, body)).status).toBe(200);
    s.setFaults({ serverError: 1, applyToAuth: true });
    expect((await post(`${s.url}/api/v1/auth`, body)).status).toBe(500);
    s.setFaults({ slow: 1, slowMs: 20, applyToAuth: true });
    const slow = await post(`${s.url}/api/v1/auth`, body);
    expect(slow.status).toBe(200);
    expect(slow.json.idToken).toBeTruthy();
  });

  it('rejects rates outside 0..1 or adding up to more than 1', async () => {
    await expect(startSandbox({ faults: { slow: 1.5 } })).rejects.toThrow(/faults.slow must be a rate between 0 and 1/);
    await expect(startSandbox({ faults: { slow: 0.6, serverError: 0.6 } })).rejects.toThrow(/add up to 1.2/);
    await expect(startSandbox({ faults: { slowRequests: { [-1]: 10 } } })).rejects.toThrow(/slowRequests maps a request number/);
    await expect(startSandbox({ faults: { slowRequests: { 0: -5 } } })).rejects.toThrow(/slowRequests maps a request number/);
  });
});
