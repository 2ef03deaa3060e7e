import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { request } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { decodeJwtClaims } from '../../src/api/jwt.ts';
import { memoryLogger } from '../../src/logger.ts';
import type { RecordedExchange, RecordedResponse } from '../../src/sandbox/replay-format.ts';
import { readRecording } from '../../src/sandbox/replay-load.ts';
import { startReplay, type Replay } from '../../src/sandbox/replay.ts';
import { tempDir } from '../support/tmp.ts';
import { writeRecording } from './helpers.ts';

/** `sandbox --replay` against recordings written by hand, so each rule is pinned to exact exchanges. */

const CUSTOMER = '11111111-2222-4333-8444-555555555555';
const DATE_1 = 'Thu, 08 Jan 2026 00:00:01 GMT';
const DATE_2 = 'Thu, 08 Jan 2026 00:00:02 GMT';
const VARS = { from: '2026-01-07T00:00:00.000Z', to: '2026-01-07T06:00:00.000Z', first: 100, after: null };

const auth = (seq: number, claims: Record<string, unknown> = { customerId: CUSTOMER, scopes: ['ReadPublicApi'], iat: 1767830400, exp: 1767831300 }): RecordedExchange => ({
  seq,
  endpoint: 'auth',
  key: 'recorded-key-1',
  startedAt: '2026-01-08T00:00:00.000Z',
  durationMs: 12,
  request: { method: 'POST', path: '/api/v1/auth', headers: {}, body: { ApiKey: 'recorded-key-1', ApiSecret: '[removed: API secret]' } },
  response: { status: 200, headers: { date: DATE_1, 'content-type': 'application/json' }, body: { idToken: '[removed: token 1 of recorded-key-1]', expiresIn: 900 }, wireBytes: 400, contentEncoding: 'identity' },
  token: { claims, removedClaims: ['sub', 'jti'] },
});

const query = (seq: number, answer: Pick<RecordedExchange, 'response' | 'failure'>, variables: unknown = VARS): RecordedExchange => ({
  seq,
  endpoint: 'query',
  key: 'recorded-key-1',
  startedAt: '2026-01-08T00:00:01.000Z',
  durationMs: 30,
  request: { method: 'POST', path: '/api/external/query', headers: {}, body: { query: 'query Occupancy { x }', operationName: 'Occupancy', variables } },
  ...answer,
});

const ok = (date: string, nodes: unknown[]): RecordedResponse => ({
  status: 200,
  headers: { date, 'content-type': 'application/json; charset=utf-8' },
  body: { data: { occupancy: { nodes, pageInfo: { hasNextPage: false, endCursor: null } } } },
  wireBytes: 120,
  contentEncoding: 'gzip',
});

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/json', 'accept-encoding': 'gzip', ...headers }, body: JSON.stringify(body) });
  const raw = Buffer.from(await res.body.arrayBuffer());
  const text = (res.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8');
  return { status: res.statusCode, headers: res.headers, json: JSON.parse(text) };
}

describe('sandbox --replay', () => {
  let work: ReturnType<typeof tempDir>;
  let replay: Replay | undefined;
  beforeEach(() => {
    work = tempDir('occupancy-sync-replay-');
  });
  afterEach(async () => {
    await replay?.close();
    replay = undefined;
    work.remove();
  });

  async function start(exchanges: RecordedExchange[]) {
    writeRecording(work.dir, exchanges);
    const logs = memoryLogger({ level: 'debug' });
    replay = await startReplay({ recording: readRecording(work.dir), logger: logs.logger });
    const token = (await post(`${replay.url}/api/v1/auth`, { ApiKey: 'recorded-key-1', ApiSecret: 'anything' })).json.idToken as string;
    return { replay, logs, token };
  }

  it('issues a token with the recorded claims and answers repeats in recorded order, with the recorded status and Date', async () => {
    const { replay, token } = await start([
      auth(1),
      query(2, { response: { status: 503, headers: { 'retry-after': '1', 'content-type': 'application/json' }, body: { errors: [{ message: 'busy' }] }, wireBytes: 40, contentEncoding: 'identity' } }),
      query(3, { response: ok(DATE_1, [{ id: 'a' }]) }),
      query(4, { response: ok(DATE_2, [{ id: 'b' }]) }, { ...VARS, after: 'cursor-1' }),
    ]);
    const claims = decodeJwtClaims(token)!;
    expect(claims).toMatchObject({ customerId: CUSTOMER, scopes: ['ReadPublicApi'], iat: 1767830400, exp: 1767831300, sub: 'recorded-key-1' });
    const bearer = { authorization: `Bearer ${token}` };
    const body = { query: 'query Occupancy { other text }', operationName: 'Occupancy', variables: { first: 100, to: VARS.to, after: null, from: VARS.from } };
    const first = await post(`${replay.url}/api/external/query`, body, bearer);
    expect(first).toMatchObject({ status: 503, headers: { 'retry-after': '1' } });
    const second = await post(`${replay.url}/api/external/query`, body, bearer);
    expect(second.status).toBe(200);
    expect(second.headers).toMatchObject({ date: DATE_1, 'content-encoding': 'gzip' });
    expect(second.json.data.occupancy.nodes).toEqual([{ id: 'a' }]);
    const page2 = await post(`${replay.url}/api/external/query`, { ...body, variables: { ...VARS, after: 'cursor-1' } }, bearer);
    expect(page2.headers.date).toBe(DATE_2);
    expect(page2.json.data.occupancy.nodes).toEqual([{ id: 'b' }]);
    // Used up: the sequence starts over, as a second run of the command would need.
    expect((await post(`${replay.url}/api/external/query`, body, bearer)).status).toBe(503);
    expect(replay.stats).toMatchObject({ served: 5, notInRecording: 0 });
    expect(replay.unserved()).toEqual([]);
  });

  it('answers a request the recording does not hold with HTTP 400 (not retried) and the cause and fix: the clock, the start state, other variables', async () => {
    const { replay, logs, token } = await start([auth(1), query(2, { response: ok(DATE_1, []) })]);
    const ask = async (variables: unknown) =>
      post(`${replay.url}/api/external/query`, { query: 'query Occupancy { x }', operationName: 'Occupancy', variables }, { authorization: `Bearer ${token}` });
    // Later times, by less than the time since the recording: the command ran on its own clock.
    const later = { ...VARS, from: '2026-01-07T00:00:00.001Z', to: '2026-01-07T06:00:00.001Z' };
    const res = await ask(later);
    expect(res.status).toBe(400);
    expect(res.json.data).toBeUndefined();
    expect(res.json.errors[0].message).toBe(
      "not in the recording: this Occupancy asks for other times than the recorded run: the replayed command runs on its own clock, not the recording's (2026-01-08T00:00:00.000Z). " +
        "Fix: run it with NODE_OPTIONS='--import=data:text/javascript,Date.now=()=>1767830400000' and a new database",
    );
    expect(res.json.errors[0].extensions).toEqual({ code: 'NOT_IN_RECORDING', operationName: 'Occupancy', variables: later, key: 'recorded-key-1' });
    expect(logs.records().some((r) => r.level === 40 && String(r.msg).startsWith('replay: not in the recording: Occupancy with variables {"after":null,"first":100,"from":"2026-01-07T00:00:00.001Z"'))).toBe(true);
    // Earlier times: not the clock (it only runs on), but where the command started from.
    const earlier = await ask({ ...VARS, from: '2026-01-06T00:00:00.000Z' });
    expect(earlier.status).toBe(400);
    expect(earlier.json.errors[0].message).toMatch(/^not in the recording: this Occupancy asks for other times than the recorded run, with the recorded clock or not: it started from other sync state or other settings\. Fix: replay on a new database with the recorded clock, settings and start state .*`occupancy-sync record --load-state DIR` loads the state\)\. Asked: \{/);
    // Another page size: the settings.
    const other = await ask({ ...VARS, first: 500 });
    expect(other.json.errors[0].message).toMatch(/^not in the recording: the recorded run never sent this Occupancy with recorded-key-1: other settings .*Fix: replay with the recorded settings and definitions on a new database .*Asked: \{"after":null,"first":500,/);
    expect(replay.stats.notInRecording).toBe(3);
    expect(replay.unserved().map((x) => x.seq)).toEqual([2]);
  });

  it('refuses keys and tokens it did not issue, naming the keys it knows', async () => {
    const { replay } = await start([auth(1)]);
    const wrongKey = await post(`${replay.url}/api/v1/auth`, { ApiKey: 'sandbox-1-read', ApiSecret: 'x' });
    expect(wrongKey.status).toBe(401);
    expect(wrongKey.json.errors[0].message).toMatch(/this replay knows the API keys recorded-key-1; authenticate with one of them/);
    const forged = await post(`${replay.url}/api/external/query`, { query: '{ x }' }, { authorization: 'Bearer eyJhbGciOiJIUzI1NiJ9.e30.c2ln' });
    expect(forged.status).toBe(401);
    expect(forged.json.errors[0].message).toMatch(/not a token this replay issued/);
    expect(replay.stats.notInRecording).toBe(2);
  });

  it('passes recorded failures on in kind: a dropped connection, a body cut off', async () => {
    const { replay, token } = await start([
      auth(1),
      query(2, { failure: { stage: 'no-answer', message: 'ECONNRESET' } }),
      query(3, { response: { ...ok(DATE_1, []), wireBytes: 500 }, failure: { stage: 'body', message: 'cut off' } }),
    ]);
    const ask = () =>
      request(`${replay.url}/api/external/query`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'accept-encoding': 'gzip', authorization: `Bearer ${token}` },
        body: JSON.stringify({ query: '{ x }', operationName: 'Occupancy', variables: VARS }),
      });
    await expect(ask()).rejects.toMatchObject({ code: expect.stringMatching(/UND_ERR_SOCKET|ECONNRESET/) });
    const cut = await ask();
    expect(cut.statusCode).toBe(200);
    expect(cut.headers['content-length']).toBe('500');
    await expect(cut.body.arrayBuffer()).rejects.toThrow();
    expect(replay.stats.served).toBe(3);
  });

  it('reads only recordings it understands, each problem naming the file and the fix', () => {
    expect(() => readRecording(join(work.dir, 'nowhere'))).toThrow(/no such directory\. Fix: give the directory `occupancy-sync record --out` wrote/);
    writeRecording(work.dir, [auth(1)], { version: 2 as never });
    expect(() => readRecording(work.dir)).toThrow(/meta\.json: recording format version 2, this occupancy-sync reads version 1/);
    writeRecording(work.dir, [auth(1)]);
    writeFileSync(join(work.dir, 'exchanges', '000002-query.json'), JSON.stringify({ ...query(2, {}), seq: 2 }));
    expect(() => readRecording(work.dir)).toThrow(/000002-query\.json: has neither "response" nor "failure"\. Fix:/);
    writeFileSync(join(work.dir, 'exchanges', '000002-query.json'), JSON.stringify(query(1, { response: ok(DATE_1, []) })));
    expect(() => readRecording(work.dir)).toThrow(/000002-query\.json: "seq" 1 is also the number of 000001-auth\.json/);
    writeFileSync(join(work.dir, 'exchanges', '000002-query.json'), '{');
    expect(() => readRecording(work.dir)).toThrow(/000002-query\.json: an exchange is not valid JSON at 1:2 \(line:column; the text is not shown/);
    const damaged = '{"seq":2,\n"request":{"headers":{"authorization":Bearer tok3nSECRET}}}';
    writeFileSync(join(work.dir, 'exchanges', '000002-query.json'), damaged);
    expect(() => readRecording(work.dir)).toThrow(`000002-query.json: an exchange is not valid JSON at 2:${damaged.split('\n')[1]!.indexOf('Bearer') + 1} (line:column`);
    expect(() => readRecording(work.dir)).not.toThrow(/tok3n|SECRET/);
  });
});
