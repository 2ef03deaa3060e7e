import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { AuthError, ConfigError, ExitCode, exitCodeFor } from '../../src/errors.ts';
import { ApiTransportError, BaseUrlError } from '../../src/api/failure.ts';
import { SecretRegistry } from '../../src/logger.ts';
import { createApiClient, parseDateHeader, type ApiClient } from '../../src/api/client.ts';
import { parseDocumentSource } from '../../src/api/documents.ts';
import { BUILDINGS, DATA, SEND_TEST_EVENT, TOKEN, json, recordingSleep, scripted, type Reply } from './support.ts';

describe('API client on the wire', () => {
  let server: Server | undefined;
  let client: ApiClient | undefined;
  afterEach(async () => {
    await client?.close();
    await new Promise((r) => (server ? server.close(r) : r(undefined)));
    client = server = undefined;
  });

  async function setup(auth: Reply[], query: Reply[]) {
    const s = await scripted(auth, query);
    server = s.server;
    const waits = recordingSleep();
    const clock = new FakeClock('2026-01-08T00:00:00Z');
    client = createApiClient({ baseUrl: s.url, apiKey: 'key-1', apiSecret: 'secret-abcdefgh', clock, secrets: new SecretRegistry(), sleep: waits.sleep });
    return { ...s, client, waits, clock };
  }

  it('sends the documented headers, the derived operationName and variables as an object', async () => {
    const { client, seen } = await setup([json(200, TOKEN)], [json(200, DATA), json(200, DATA)]);
    await client.request(BUILDINGS);
    await client.request(parseDocumentSource('{ buildings { id } }', 'anon.graphql'), { a: 1 });
    const [auth, named, anonymous] = seen;
    expect(auth).toMatchObject({ path: '/api/v1/auth', body: { ApiKey: 'key-1', ApiSecret: 'secret-abcdefgh' } });
    expect(auth!.headers).toMatchObject({ accept: 'application/json', 'content-type': 'application/json' });
    expect(named!.headers).toMatchObject({
      authorization: `Bearer ${TOKEN.idToken}`,
      accept: 'application/json',
      'content-type': 'application/json',
      'accept-encoding': 'gzip',
    });
    expect(named!.body).toEqual({ query: BUILDINGS.source, variables: {}, operationName: 'Buildings' });
    expect(anonymous!.body).toEqual({ query: '{ buildings { id } }', variables: { a: 1 } });
    await expect(client.request(BUILDINGS, 'x' as never)).rejects.toThrow(/variables for Buildings must be an object, got string/);
  });

  it("records the platform's time from the Date header of the latest successful answer, not from errors", async () => {
    const date = (iso: string) => ({ date: new Date(iso).toUTCString() });
    const { client } = await setup(
      [json(200, TOKEN)],
      [
        json(200, DATA, date('2026-01-08T00:10:00Z')),
        json(400, { errors: [{ message: 'bad argument' }] }, date('2026-01-09T00:00:00Z')),
        json(200, DATA, date('2026-01-08T00:05:00Z')),
      ],
    );
    expect(client.serverTime()).toBeUndefined();
    await client.request(BUILDINGS);
    expect(client.serverTime()).toBe(Date.parse('2026-01-08T00:10:00Z'));
    await expect(client.request(BUILDINGS)).rejects.toThrow(/bad argument/);
    expect(client.serverTime()).toBe(Date.parse('2026-01-08T00:10:00Z'));
    // The latest answer wins, even when earlier: a platform clock stepped back is followed, never outrun.
    await client.request(BUILDINGS);
    expect(client.serverTime()).toBe(Date.parse('2026-01-08T00:05:00Z'));
  });

  it('does not retry answers that would be the same next time: 501, 505, a redirect, an oversized body', async () => {
    const redirect = (res: ServerResponse) => {
      res.writeHead(302, { location: 'https://elsewhere.example.com/api/external/query' });
      res.end();
    };
    const huge = (res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(gzipSync(Buffer.alloc(65 * 1024 * 1024, 0x20)));
    };
    const cases: Array<[Reply, RegExp]> = [
      [json(501, { error: 'not implemented' }), /HTTP 501.*not retried\. Fix: check API_BASE_URL/],
      [json(505, { error: 'version' }), /HTTP 505/],
      [redirect, /HTTP 302 redirect to https:\/\/elsewhere\.example\.com\/api\/external\/query, which is not followed/],
      [huge, /larger than 67108864 bytes once decompressed; refusing it/],
    ];
    const { client, seen } = await setup([json(200, TOKEN)], cases.map(([reply]) => reply));
    for (const [, message] of cases) await expect(client.request(BUILDINGS)).rejects.toThrow(message);
    expect(seen.filter((r) => r.path !== '/api/v1/auth')).toHaveLength(cases.length);
    expect(client.stats.retries).toBe(0);
  });

  it('parses HTTP dates floored to the second and ignores missing or garbled ones', () => {
    expect(parseDateHeader('Thu, 08 Jan 2026 00:10:07 GMT')).toBe(Date.parse('2026-01-08T00:10:07Z'));
    expect(parseDateHeader(['Thu, 08 Jan 2026 00:10:07 GMT'])).toBe(Date.parse('2026-01-08T00:10:07Z'));
    expect(parseDateHeader('2026-01-08T00:10:07.999Z')).toBe(Date.parse('2026-01-08T00:10:07Z'));
    expect(parseDateHeader(undefined)).toBeUndefined();
    expect(parseDateHeader('')).toBeUndefined();
    expect(parseDateHeader('yesterday')).toBeUndefined();
  });

  it('retries GraphQL errors of queries when opted in, never of a mutation, even one marked idempotent', async () => {
    const errors = json(200, { errors: [{ message: 'transient' }] });
    const s = await scripted([json(200, TOKEN)], [errors, json(200, DATA), errors]);
    server = s.server;
    const waits = recordingSleep();
    client = createApiClient({ baseUrl: s.url, apiKey: 'key-1', apiSecret: 'secret-abcdefgh', secrets: new SecretRegistry(), sleep: waits.sleep, retryGraphQLErrors: true });
    await expect(client.request(BUILDINGS)).resolves.toEqual(DATA.data);
    expect(client.stats.retriesByReason).toEqual({ graphql_error: 1 });
    await expect(client.request(SEND_TEST_EVENT, { id: 'w1' }, { idempotent: true })).rejects.toThrow(/transient/);
    expect(s.seen.filter((r) => r.path !== '/api/v1/auth')).toHaveLength(3);
    expect(client.stats.retries).toBe(1);
  });

  it('rejects plain http to a non-loopback host as a config error', () => {
    expect(() => createApiClient({ baseUrl: 'http://api.example.com', apiKey: 'k', apiSecret: 's' })).toThrow(ConfigError);
    expect(() => createApiClient({ baseUrl: 'http://api.example.com', apiKey: 'k', apiSecret: 's' })).toThrow(/baseUrl="http:\/\/api.example.com": the API must be reached over HTTPS/);
  });

  it('decompresses gzip answers and retries a 200 whose body is not JSON', async () => {
    const gzipped: Reply = (res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(gzipSync(JSON.stringify({ data: { buildings: [{ id: 'b1', name: 'HQ' }] } })));
    };
    const garbled: Reply = (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"data": {"buil');
    };
    const { client } = await setup([json(200, TOKEN)], [garbled, gzipped]);
    await expect(client.request(BUILDINGS)).resolves.toEqual({ buildings: [{ id: 'b1', name: 'HQ' }] });
    expect(client.stats.retriesByReason).toEqual({ invalid_json: 1 });
  });

  it('honours a Retry-After HTTP date measured on the injected clock', async () => {
    const s = await setup([json(200, TOKEN)], []);
    const date = new Date(s.clock.now() + 42_000).toUTCString();
    s.server.removeAllListeners('request');
    let n = 0;
    s.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      req.resume();
      req.on('end', () => {
        if (req.url === '/api/v1/auth') return json(200, TOKEN)(res);
        return n++ === 0 ? json(503, { error: 'busy' }, { 'retry-after': date })(res) : json(200, DATA)(res);
      });
    });
    await s.client.request(BUILDINGS);
    expect(s.waits.delays).toEqual([42_000]);
  });

  it('turns a second 401 in a row into an AuthError that says what to check', async () => {
    const { client, seen } = await setup([json(200, TOKEN), json(200, { ...TOKEN, idToken: 'opaque-token-second' })], [json(401, {}), json(401, {})]);
    const error = await client.request(BUILDINGS).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthError);
    expect((error as Error).message).toMatch(/refused a freshly obtained token for API key "key-1" \(HTTP 401 twice on Buildings\)\. Check that the key is still active/);
    expect(seen.map((s) => s.path)).toEqual(['/api/v1/auth', '/api/external/query', '/api/v1/auth', '/api/external/query']);
    expect(seen[3]!.headers.authorization).toBe('Bearer opaque-token-second');
  });

  it('retries a 503 from the auth endpoint like any transient failure', async () => {
    const { client, seen, waits } = await setup([json(503, { error: 'busy' }), json(200, TOKEN)], [json(200, DATA)]);
    await expect(client.request(BUILDINGS)).resolves.toEqual(DATA.data);
    expect(seen.map((s) => s.path)).toEqual(['/api/v1/auth', '/api/v1/auth', '/api/external/query']);
    expect(client.stats).toMatchObject({ authCalls: 2, retries: 1, retriesByReason: { server_error: 1 } });
    expect(waits.delays).toHaveLength(1);
  });

  it('does not retry a 403 at the auth endpoint and names the key, not the secret', async () => {
    const { client, seen } = await setup([json(403, { error: 'forbidden' })], []);
    const error = await client.token().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthError);
    expect((error as Error).message).toContain('API key "key-1"');
    expect((error as Error).message).not.toContain('secret-abcdefgh');
    expect(seen).toHaveLength(1);
  });

  it("a 404 before an endpoint ever answered is API_BASE_URL's (exit 78); after it answered, the platform's (exit 1)", async () => {
    const gone = json(404, { error: 'no such endpoint' });
    // Before any answer: the auth endpoint, then (auth fine) the query endpoint.
    const first = await setup([gone], []);
    const auth = await first.client.request(BUILDINGS).catch((e: unknown) => e);
    expect(auth).toBeInstanceOf(BaseUrlError);
    expect(auth).toMatchObject({ status: 404, message: expect.stringMatching(/\/api\/v1\/auth answered HTTP 404: API_BASE_URL does not point at the platform's API\. Fix: /) });
    expect(exitCodeFor(auth)).toBe(ExitCode.CONFIG);
    expect(first.seen).toHaveLength(1);
    await client!.close();
    await new Promise((r) => server!.close(r));

    const second = await setup([json(200, TOKEN)], [json(405, { error: 'method' })]);
    const query = await second.client.request(BUILDINGS).catch((e: unknown) => e);
    expect(query).toBeInstanceOf(BaseUrlError);
    expect(exitCodeFor(query)).toBe(ExitCode.CONFIG);
    await client!.close();
    await new Promise((r) => server!.close(r));

    // Mid-run, once each endpoint has answered: a failed request as any other 4xx, not retried, exit 1.
    const third = await setup([json(200, TOKEN), gone], [json(200, DATA), gone]);
    await third.client.request(BUILDINGS);
    const later = await third.client.request(BUILDINGS).catch((e: unknown) => e);
    expect(later).toBeInstanceOf(ApiTransportError);
    expect(later).toMatchObject({ reason: 'client_error', status: 404, retryable: false });
    expect(exitCodeFor(later)).toBe(ExitCode.FAILURE);
    third.clock.advance(TOKEN.expiresIn * 1000);
    const reauth = await third.client.request(BUILDINGS).catch((e: unknown) => e);
    expect(reauth).toBeInstanceOf(ApiTransportError);
    expect(reauth).toMatchObject({ status: 404, message: expect.stringContaining('/api/v1/auth answered HTTP 404') });
    expect(exitCodeFor(reauth)).toBe(ExitCode.FAILURE);
    expect(third.seen.map((s) => s.path)).toEqual(['/api/v1/auth', '/api/external/query', '/api/external/query', '/api/v1/auth']);
  });

  it('does not retry other 4xx answers and does not repeat a mutation after an ambiguous 500', async () => {
    const { client, seen } = await setup([json(200, TOKEN)], [json(404, { error: 'no such endpoint' }), json(500, { error: 'boom' })]);
    await expect(client.request(BUILDINGS)).rejects.toThrow(/\/api\/external\/query answered HTTP 404: API_BASE_URL does not point at the platform's API\. Fix: set API_BASE_URL/);
    const mutation = parseDocumentSource('mutation M { sendTestEvent(webhookId: "w") }', 'm.graphql');
    await expect(client.request(mutation)).rejects.toMatchObject({ reason: 'server_error', status: 500 });
    expect(seen.filter((s) => s.path === '/api/external/query')).toHaveLength(2);
  });
});
