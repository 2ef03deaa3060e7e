import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { GraphQLResponseError, RateLimitError } from '../../src/errors.ts';
import { SecretRegistry, memoryLogger } from '../../src/logger.ts';
import { createApiClient, type ApiClient, type ApiClientOptions } from '../../src/api/client.ts';
import { startSandbox, type FaultOptions, type Sandbox } from '../../src/sandbox/index.ts';
import { BUILDINGS, recordingSleep } from './support.ts';
import { runPool } from '../support/pool.ts';
import { waitFor } from '../support/wait.ts';

describe('API client against the sandbox: transient failures', () => {
  let sandbox: Sandbox | undefined;
  let client: ApiClient | undefined;
  afterEach(async () => {
    await client?.close();
    await sandbox?.close();
    client = sandbox = undefined;
  });

  async function setup(faults: FaultOptions, options: Partial<ApiClientOptions> = {}) {
    const clock = new FakeClock('2026-01-08T00:00:00Z');
    sandbox = await startSandbox({ clock, seed: 4, faults });
    const key = sandbox.customers[0]!.readKey;
    const log = memoryLogger({ secrets: new SecretRegistry() });
    const waits = recordingSleep();
    client = createApiClient({
      baseUrl: sandbox.url,
      apiKey: key.key,
      apiSecret: key.secret,
      clock,
      logger: log.logger,
      secrets: new SecretRegistry(),
      sleep: waits.sleep,
      random: () => 0.5,
      ...options,
      http: { timeoutMs: 1000, maxAttempts: 10, backoffMinMs: 100, backoffMaxMs: 2000, ...options.http },
    });
    return { sandbox, client, log, waits };
  }

  it('gets every request through 5xx, 429 with Retry-After, resets, slow answers and truncated gzip', async () => {
    const { sandbox, client, log, waits } = await setup({
      seed: 11,
      serverError: 0.08,
      rateLimit: 0.08,
      retryAfterSeconds: 3,
      connectionReset: 0.08,
      slow: 0.03,
      slowMs: 5000,
      truncatedGzip: 0.08,
    });
    const expected = sandbox.truth.buildings(sandbox.customers[0]!.id).length;
    const results = await runPool(150, 10, () => client.request<{ buildings: unknown[] }>(BUILDINGS));
    expect(results.every((r) => r.buildings.length === expected)).toBe(true);

    for (const kind of ['serverError', 'rateLimit', 'connectionReset', 'slow', 'truncatedGzip']) {
      expect(sandbox.stats.faults[kind], `sandbox injected ${kind}`).toBeGreaterThan(0);
    }
    const byReason = client.stats.retriesByReason;
    expect(Object.keys(byReason).sort()).toEqual(['corrupt_body', 'network', 'rate_limited', 'server_error', 'timeout']);
    expect(byReason.rate_limited).toBe(sandbox.stats.faults.rateLimit);
    expect(byReason.server_error).toBe(sandbox.stats.faults.serverError);
    expect(byReason.corrupt_body).toBe(sandbox.stats.faults.truncatedGzip);
    expect(client.stats.rateLimited).toBe(sandbox.stats.faults.rateLimit);

    // Every retry is logged at warn with its reason, and each 429 wait is exactly the Retry-After asked for: waited by
    // the retry itself, or, when the 429 paused the whole key, once by the key's queue for every query of the key.
    const retries = log.records().filter((r) => String(r.msg).startsWith('retrying'));
    expect(retries).toHaveLength(client.stats.retries);
    expect(retries.every((r) => r.level === 40 && typeof r.reason === 'string')).toBe(true);
    const own = retries.filter((r) => !r.keyWide);
    expect(own.length + (client.stats.keyPauses > 0 ? 1 : 0)).toBeLessThanOrEqual(waits.delays.length);
    const rateLimited = retries.filter((r) => r.reason === 'rate_limited');
    expect(rateLimited.map((r) => r.delayMs)).toEqual(rateLimited.map(() => 3000));
    const ownRateLimited = rateLimited.filter((r) => !r.keyWide).length + (client.stats.keyPauses > 0 ? 1 : 0);
    expect(waits.delays.filter((d) => d === 3000).length).toBeGreaterThanOrEqual(ownRateLimited);
    expect(waits.delays.every((d) => d === 3000 || d <= 2000)).toBe(true);
    for (const r of retries.filter((r) => r.reason !== 'rate_limited')) expect(r.delayMs).toBeLessThanOrEqual(2000);
  });

  it('surfaces a GraphQL error by default and retries it when the caller opts in', async () => {
    const first = await setup({ seed: 2, graphqlError: 1 });
    const error = await first.client.request(BUILDINGS).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GraphQLResponseError);
    expect(error).toMatchObject({ operationName: 'Buildings', errors: [{ message: expect.stringContaining('injected') }] });
    expect(first.sandbox.stats.queries).toBe(1);
    await client!.close();
    await sandbox!.close();

    const second = await setup({ seed: 2, graphqlError: 0.5 }, { retryGraphQLErrors: true });
    await runPool(20, 4, () => second.client.request(BUILDINGS));
    expect(second.client.stats.retriesByReason.graphql_error).toBe(second.sandbox.stats.faults.graphqlError);
  });

  it('gives up after the configured attempts, with the last error', async () => {
    const { sandbox, client } = await setup({ serverError: 1 }, { http: { maxAttempts: 3 } });
    await expect(client.request(BUILDINGS)).rejects.toMatchObject({ name: 'ApiTransportError', reason: 'server_error' });
    expect(sandbox.stats.queries).toBe(3);
    expect(client.stats.retries).toBe(2);
  });

  it('does not block on a Retry-After longer than the ceiling: the RateLimitError surfaces at once', async () => {
    const { sandbox, client, waits } = await setup({ rateLimit: 1, retryAfterSeconds: 3600 });
    const error = await client.request(BUILDINGS).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).retryAfterMs).toBe(3_600_000);
    expect(sandbox.stats.queries).toBe(1);
    expect(waits.delays).toEqual([]);
  });

  it('stops promptly when the signal aborts during a request or during a Retry-After wait', async () => {
    const slow = await setup({ slow: 1, slowMs: 60_000 }, { http: { timeoutMs: 120_000 } });
    const controller = new AbortController();
    const pending = slow.client.request(BUILDINGS, {}, { signal: controller.signal });
    await waitFor(() => slow.sandbox.stats.queries > 0, 'the sandbox to receive the query', 5_000, { everyMs: 0 });
    controller.abort(new Error('received SIGTERM'));
    await expect(pending).rejects.toThrow('received SIGTERM');
    await client!.close();
    await sandbox!.close();

    // Real sleep this time: the abort must cut a 60 s Retry-After wait short.
    const limited = await setup({ rateLimit: 1, retryAfterSeconds: 60 }, { sleep: undefined });
    const second = new AbortController();
    const waiting = limited.client.request(BUILDINGS, {}, { signal: second.signal });
    await waitFor(() => limited.client.stats.retries > 0, 'the client to start its Retry-After wait', 5_000, { everyMs: 0 });
    second.abort(new Error('received SIGINT'));
    await expect(waiting).rejects.toThrow('received SIGINT');
    expect(limited.sandbox.stats.queries).toBe(1);
  }, 10_000);
});
