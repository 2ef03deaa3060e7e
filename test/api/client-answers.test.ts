import type { Server } from 'node:http';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { GraphQLResponseError } from '../../src/errors.ts';
import { SecretRegistry, memoryLogger } from '../../src/logger.ts';
import { createApiClient, type ApiClient, type ApiClientOptions } from '../../src/api/client.ts';
import { parseDocumentSource } from '../../src/api/documents.ts';
import { BUILDINGS, DATA, TOKEN, json, raw, recordingSleep, scripted, type Reply } from './support.ts';
import { Figures } from '../reliability/figures.ts';

/**
 * Answers that are not what their label says (issue 24): a proxy's HTML page for one request, JSON labelled
 * text/plain, a BOM, an empty body, and GraphQL errors about the request's own arguments. Each is either read, or
 * retried within the request's attempts and then failed with one line naming what came back and the fix.
 */

const PAGE = parseDocumentSource(
  'query OccupancyPage($first: Int!, $after: String) { occupancy(first: $first, after: $after) { nodes { id } } }',
  'test/occupancy-page.graphql',
);
const MAINTENANCE = raw(200, '<!DOCTYPE html><html><head><title>Down for maintenance</title></head><body>back soon</body></html>', {
  'content-type': 'text/html; charset=utf-8',
});
const body = JSON.stringify(DATA);

const figures = new Figures(
  { section: 'api-answers', title: 'Answers that are not what their label says: the API client (test/api/client-answers.test.ts)' },
  ['api-answers/html-once', 'api-answers/html-persists', 'api-answers/json-mislabelled', 'api-answers/auth-text-plain'],
);
afterAll(() => void figures.publish());

describe('API client: answers whatever their label', () => {
  let server: Server | undefined;
  let client: ApiClient | undefined;
  afterEach(async () => {
    await client?.close();
    await new Promise((r) => (server ? server.close(r) : r(undefined)));
    client = server = undefined;
  });

  async function setup(query: Reply[], options: Partial<ApiClientOptions> = {}, auth: Reply[] = [json(200, TOKEN)]) {
    const s = await scripted(auth, query, { repeatLast: true });
    server = s.server;
    const waits = recordingSleep();
    const log = memoryLogger({ secrets: new SecretRegistry() });
    client = createApiClient({
      baseUrl: s.url,
      apiKey: 'key-1',
      apiSecret: 'secret-abcdefgh',
      clock: new FakeClock('2026-01-08T00:00:00Z'),
      secrets: new SecretRegistry(),
      sleep: waits.sleep,
      logger: log.logger,
      ...options,
      http: { maxAttempts: 4, ...options.http },
    });
    const queries = () => s.seen.filter((r) => r.path === '/api/external/query').length;
    return { client, waits, log, queries };
  }

  it('retries one HTML maintenance page answered with 200, within the request\'s attempts', async () => {
    const { client, queries } = await setup([MAINTENANCE, json(200, DATA)]);
    await expect(client.request(BUILDINGS)).resolves.toEqual(DATA.data);
    expect(queries()).toBe(2);
    expect(client.stats.retriesByReason).toEqual({ not_json: 1 });
    figures.record({
      key: 'api-answers/html-once',
      tried: "one HTTP 200 answer with a proxy's HTML maintenance page (a single request), then the API's answer",
      count: 1,
      held: "retried within the request's attempts (HTTP_MAX_ATTEMPTS): one retry counted (not_json), the request answered",
    });
  });

  it('fails on HTML that persists, after the configured attempts, with one line naming the page and the fix', async () => {
    const { client, queries } = await setup([MAINTENANCE]);
    const error = (await client.request(BUILDINGS).catch((e: unknown) => e)) as Error;
    expect(error).toMatchObject({ name: 'ApiTransportError', reason: 'not_json', status: 200 });
    expect(error.message).toMatch(
      /^POST \/api\/external\/query: the HTTP 200 answer is "text\/html", not JSON: a proxy or login page answered \(titled "Down for maintenance"\), or API_BASE_URL does not point at the platform's API\. Fix: /,
    );
    expect(error.message).not.toContain('\n');
    expect(queries()).toBe(4);
    figures.record({
      key: 'api-answers/html-persists',
      tried: 'the HTML maintenance page on every answer (HTTP_MAX_ATTEMPTS=4)',
      count: 4,
      held: 'fails after the 4 attempts with one line naming the page (its title) and the fix',
    });
  });

  it('refuses HTML whatever its label: unlabelled, or labelled JSON', async () => {
    const page = '<html><body>Sign in</body></html>';
    for (const headers of [{}, { 'content-type': 'application/json' }] as Array<Record<string, string>>) {
      const one = await setup([raw(200, page, headers)], { http: { maxAttempts: 1 } });
      await expect(one.client.request(BUILDINGS)).rejects.toThrow(/answer is an HTML page labelled (\(none\)|application\/json), not JSON: a proxy or login page answered \(starting "<html><body>Sign in/);
      await client!.close();
      await new Promise((r) => server!.close(r));
      client = server = undefined;
    }
  });

  it('reads a GraphQL answer whatever its label, charset or BOM, and says a mislabel once per client', async () => {
    const labels: Array<Record<string, string>> = [
      { 'content-type': 'text/plain' },
      { 'content-type': 'text/plain; charset=utf-8' },
      {},
      { 'content-type': 'application/octet-stream' },
      { 'content-type': 'text/json' },
      { 'content-type': 'APPLICATION/JSON; Charset="UTF-8"' },
      { 'content-type': 'application/graphql-response+json; charset=utf-8' },
      { 'content-type': 'application/json; charset=iso-8859-1' },
    ];
    const replies = [
      ...labels.map((headers) => raw(200, body, headers)),
      raw(200, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(body)]), { 'content-type': 'application/json' }),
      raw(200, `\ufeff${body}`, { 'content-type': 'text/plain' }),
      raw(200, `\n  ${body}\n`, {}),
    ];
    const { client, log, queries } = await setup([...replies, json(200, DATA)]);
    for (let i = 0; i < replies.length; i++) await expect(client.request(BUILDINGS), `answer ${i}`).resolves.toEqual(DATA.data);
    expect(queries()).toBe(replies.length);
    expect(client.stats.retries).toBe(0);
    const warnings = log.records().filter((r) => String(r.msg).includes('instead of application/json'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40, contentType: 'text/plain' });
    figures.record({
      key: 'api-answers/json-mislabelled',
      tried: 'GraphQL answers labelled `text/plain` (with and without a charset), unlabelled, `application/octet-stream`, `text/json`, odd case, a wrong charset, with a BOM, padded with blank lines',
      count: replies.length,
      held: 'each read as sent, none retried; one warning per client names the mislabel',
    });
  });

  it('reads an auth answer labelled text/plain', async () => {
    const { client } = await setup([json(200, DATA)], {}, [raw(200, JSON.stringify(TOKEN), { 'content-type': 'text/plain' })]);
    await expect(client.request(BUILDINGS)).resolves.toEqual(DATA.data);
    expect(client.stats.authCalls).toBe(1);
    figures.record({
      key: 'api-answers/auth-text-plain',
      tried: 'the auth endpoint answers its token as JSON labelled `text/plain`',
      count: 1,
      held: 'the token read, one auth call, the query answered',
    });
  });

  it('retries an empty 200 and text that is not JSON, then fails naming what came back', async () => {
    const cases: Array<[Reply, RegExp]> = [
      [raw(200, '', { 'content-type': 'application/json' }), /^POST \/api\/external\/query: the HTTP 200 answer is empty \(Content-Type application\/json, 0 bytes\) where a JSON document was expected.*Fix: /],
      [raw(200, '', {}), /answer is empty \(Content-Type \(none\), 0 bytes\)/],
      [raw(200, 'Service temporarily unavailable', { 'content-type': 'text/plain' }), /answer is not the JSON document the API sends \(Content-Type text\/plain, 31 bytes, starting "Service temporarily unavailable"\)\. Fix: /],
      [raw(200, '{"data": {"buil', { 'content-type': 'text/plain' }), /answer is not valid JSON \(Content-Type text\/plain, 15 bytes, starting "\{\\"data\\": \{\\"buil"\): it was cut off or garbled/],
      [raw(200, '"ok"', { 'content-type': 'text/plain' }), /answer is not the JSON document the API sends/],
    ];
    for (const [reply, message] of cases) {
      const one = await setup([reply]);
      await expect(one.client.request(BUILDINGS)).rejects.toThrow(message);
      expect(one.queries(), String(message)).toBe(4);
      await client!.close();
      await new Promise((r) => server!.close(r));
      client = server = undefined;
    }
  });

  it('an answer cut off inside a value keeps the value out of the error and its causes (V8 quotes the text it refuses)', async () => {
    const secretPart = 'eyJzZWNyZXQtdG9rZW4tcGFydC0xMjM0NTY3ODkw';
    const one = await setup([raw(200, `{"data": {"token": "${secretPart}`, { 'content-type': 'application/json' })]);
    const error = await one.client.request(BUILDINGS).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Error);
    const chain: string[] = [];
    for (let e: unknown = error; e instanceof Error; e = e.cause) chain.push(e.message, String(e.stack));
    expect(chain.join('\n')).toMatch(/answer is not valid JSON/);
    expect(chain.join('\n')).not.toContain(secretPart.slice(0, 12));
    await client!.close();
    await new Promise((r) => server!.close(r));
    client = server = undefined;
  });

  it('recovers from one empty answer and one that is cut off', async () => {
    const { client } = await setup([raw(200, '', {}), raw(200, body.slice(0, 9), { 'content-type': 'application/json' }), json(200, DATA)]);
    await expect(client.request(BUILDINGS)).resolves.toEqual(DATA.data);
    expect(client.stats.retriesByReason).toEqual({ not_json: 1, invalid_json: 1 });
  });
});

describe('API client: GraphQL errors about the request itself are permanent', () => {
  let server: Server | undefined;
  let client: ApiClient | undefined;
  afterEach(async () => {
    await client?.close();
    await new Promise((r) => (server ? server.close(r) : r(undefined)));
    client = server = undefined;
  });

  async function send(reply: Reply) {
    const s = await scripted([json(200, TOKEN)], [reply, json(200, { data: { occupancy: { nodes: [] } } })]);
    server = s.server;
    client = createApiClient({
      baseUrl: s.url,
      apiKey: 'key-1',
      apiSecret: 'secret-abcdefgh',
      secrets: new SecretRegistry(),
      sleep: recordingSleep().sleep,
      retryGraphQLErrors: true,
    });
    const outcome = await client.request(PAGE, { first: 6000, after: null }).catch((e: unknown) => e);
    const queries = s.seen.filter((r) => r.path === '/api/external/query').length;
    await client.close();
    await new Promise((r) => s.server.close(r));
    client = server = undefined;
    return { outcome, queries };
  }

  it('does not retry an argument error without a code, and keeps the API\'s own message', async () => {
    const { outcome, queries } = await send(json(200, { errors: [{ message: 'first must be between 1 and 500' }], data: null }));
    expect(outcome).toBeInstanceOf(GraphQLResponseError);
    expect((outcome as GraphQLResponseError).message).toBe(
      'GraphQL operation OccupancyPage failed: first must be between 1 and 500 (not retried: the API refused the value of the argument first, and the same request gets the same answer)',
    );
    expect((outcome as GraphQLResponseError).errors).toEqual([{ message: 'first must be between 1 and 500' }]);
    expect(queries).toBe(1);
  });

  it('does not retry a coded input error, a validation error, a 400, or a request error raised before execution', async () => {
    const replies: Reply[] = [
      json(200, { errors: [{ message: 'page size refused', extensions: { code: 'BAD_USER_INPUT' } }], data: null }),
      json(200, { errors: [{ message: 'Variable "$first" got invalid value 6000; Int cannot represent it' }] }),
      json(400, { errors: [{ message: 'something about the request' }] }),
      json(200, { errors: [{ message: 'no such thing', locations: [{ line: 1, column: 3 }] }] }),
      json(200, { errors: [{ message: 'Invalid value for "after": not a cursor' }], data: null }),
    ];
    for (const reply of replies) {
      const { outcome, queries } = await send(reply);
      expect((outcome as GraphQLResponseError).permanent, String((outcome as Error).message)).toBeTruthy();
      expect(queries).toBe(1);
    }
  });

  it('still retries an error that may be transient', async () => {
    const replies: Reply[] = [
      json(200, { errors: [{ message: 'internal error while resolving', path: ['occupancy'] }], data: null }),
      // A transient code wins over words that sound like an argument error.
      json(200, { errors: [{ message: 'first shard must be reloaded', extensions: { code: 'INTERNAL_SERVER_ERROR' } }], data: null }),
      // "to" is no argument of this document, so the constraint words do not make it permanent.
      json(200, { errors: [{ message: 'upstream did not answer: retry expected to succeed' }], data: null }),
    ];
    for (const reply of replies) {
      const { outcome, queries } = await send(reply);
      expect(outcome).toEqual({ occupancy: { nodes: [] } });
      expect(queries).toBe(2);
    }
  });
});
