import { gzipSync, gunzipSync } from 'node:zlib';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { Gate, parseLimits } from '../../bench/replay-limits.ts';
import { AUTH_PATH, fetchStats, OPERATION, QUERY_PATH, replayKey, serveReplay, setLimits, type Recording, type ReplayServer } from '../../bench/replay-server.ts';
import { waitFor } from '../support/wait.ts';

// The instrument of issue 25's benchmark: if it refused too little or too much, every figure measured with it would
// be wrong. Time is an argument (the gate) or a held promise (the server), never a sleep.

describe('Gate (the replay server limits)', () => {
  it('refuses a query beyond the in-flight allowance and accepts again once an answer has left', () => {
    const gate = new Gate({ latencyMs: 100, maxInFlight: 2 });
    expect([gate.admit(0), gate.admit(0), gate.admit(0)]).toEqual(['accepted', 'accepted', 'in-flight']);
    gate.done('in-flight');
    expect(gate.admit(1)).toBe('in-flight');
    gate.done('accepted');
    expect(gate.admit(2)).toBe('accepted');
    expect(gate.stats()).toMatchObject({ queries: 5, requests: 5, refusedInFlight: 2, refusedRate: 0, maxOpen: 3, maxAccepted: 2 });
  });

  it('refuses a query beyond the per-second allowance, counting only accepted queries of the last second', () => {
    const gate = new Gate({ latencyMs: 0, perSecond: 2 });
    expect([gate.admit(0), gate.admit(10), gate.admit(20), gate.admit(999)]).toEqual(['accepted', 'accepted', 'rate', 'rate']);
    // The first accepted query (t = 0) leaves the window at t = 1000; the refused ones never counted.
    expect(gate.admit(1000)).toBe('accepted');
    expect(gate.admit(1001)).toBe('rate');
    expect(gate.admit(1010)).toBe('accepted');
    expect(gate.stats()).toMatchObject({ queries: 7, refusedRate: 3, refusedInFlight: 0 });
  });

  it('counts token requests without ever refusing them', () => {
    const gate = new Gate({ latencyMs: 0, maxInFlight: 1 });
    gate.admit(0);
    gate.token();
    gate.token();
    expect(gate.stats()).toMatchObject({ requests: 3, queries: 1, refusedInFlight: 0 });
  });

  it('rejects limits that are not whole numbers in range, naming the field', () => {
    expect(() => parseLimits({ latencyMs: -1 })).toThrow(/limits\.latencyMs/);
    expect(() => parseLimits({ latencyMs: 100, maxInFlight: 0 })).toThrow(/limits\.maxInFlight/);
    expect(() => parseLimits({ latencyMs: 100, perSecond: 1.5 })).toThrow(/limits\.perSecond/);
    expect(() => parseLimits('fast')).toThrow(/JSON object/);
    expect(parseLimits({ latencyMs: 100, maxInFlight: 8 })).toEqual({ latencyMs: 100, maxInFlight: 8 });
  });
});

describe('replay server with limits', () => {
  const servers: ReplayServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  const variables = { from: '2026-01-05T00:00:00.000Z', to: '2026-01-05T01:00:00.000Z', first: 1000, after: null };
  const page = { data: { occupancy: { nodes: [], pageInfo: { hasNextPage: false, endCursor: null } } } };

  async function start(): Promise<{ server: ReplayServer; release: () => void; held: () => number }> {
    const answers: Recording['answers'] = new Map([
      [replayKey(AUTH_PATH, { ApiKey: 'k' }), { gz: gzipSync(JSON.stringify({ idToken: 't' })), rows: 0 }],
      [replayKey(QUERY_PATH, { operationName: OPERATION, variables }), { gz: gzipSync(JSON.stringify(page)), rows: 0 }],
    ]);
    const waiting: Array<() => void> = [];
    const server = await serveReplay({ answers, rows: 0, jsonBytes: 0, gzBytes: 0 }, { wait: () => new Promise<void>((resolve) => waiting.push(resolve)) });
    servers.push(server);
    return { server, release: () => waiting.splice(0).forEach((r) => r()), held: () => waiting.length };
  }

  const query = (url: string) =>
    request(`${url}${QUERY_PATH}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{}', operationName: OPERATION, variables }) });

  it('answers a query beyond the allowance 429 with Retry-After 1, after the latency, and counts what it saw', async () => {
    const { server, release, held } = await start();
    await setLimits(server.url, { latencyMs: 100, maxInFlight: 2 });
    const answers = [query(server.url), query(server.url), query(server.url)];
    // Every answer, the 429 included, waits out the latency: all three are held until released.
    await waitFor(() => held() === 3, 'three queries held at the server');
    expect((await fetchStats(server.url)).limited).toMatchObject({ queries: 3, refusedInFlight: 1, maxOpen: 3, maxAccepted: 2, pages: 0 });
    release();
    const responses = await Promise.all(answers);
    const statuses = responses.map((r) => r.statusCode).sort();
    expect(statuses).toEqual([200, 200, 429]);
    const refused = responses.find((r) => r.statusCode === 429)!;
    expect(refused.headers['retry-after']).toBe('1');
    expect(JSON.parse(await refused.body.text())).toMatchObject({ errors: [{ extensions: { code: 'RATE_LIMITED' } }] });
    for (const r of responses.filter((x) => x.statusCode === 200)) expect(JSON.parse(gunzipSync(Buffer.from(await r.body.arrayBuffer())).toString())).toEqual(page);
    const stats = await fetchStats(server.url);
    expect(stats.limited).toMatchObject({ requests: 3, queries: 3, refusedInFlight: 1, pages: 2 });
    expect(stats.misses).toBe(0);
  });

  it('resets its counters when limits are set, and refuses limits it cannot apply', async () => {
    const { server, release, held } = await start();
    await setLimits(server.url, { latencyMs: 10, maxInFlight: 1 });
    const first = [query(server.url), query(server.url)];
    await waitFor(() => held() === 2, 'two queries held at the server');
    release();
    await Promise.all(first.map(async (r) => (await r).body.dump()));
    expect((await fetchStats(server.url)).limited.refusedInFlight).toBe(1);

    await setLimits(server.url, { latencyMs: 0 });
    const stats = await fetchStats(server.url);
    expect(stats.limits).toEqual({ latencyMs: 0 });
    expect(stats.limited).toEqual({ requests: 0, queries: 0, refusedInFlight: 0, refusedRate: 0, maxOpen: 0, maxAccepted: 0, pages: 0 });
    await expect(setLimits(server.url, { latencyMs: 0, maxInFlight: 0 })).rejects.toThrow(/HTTP 400.*limits\.maxInFlight/);
  });
});
