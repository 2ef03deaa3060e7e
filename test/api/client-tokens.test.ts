import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { AuthError } from '../../src/errors.ts';
import { SecretRegistry, memoryLogger } from '../../src/logger.ts';
import { createApiClient, type ApiClient } from '../../src/api/client.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { BUILDINGS, SEND_TEST_EVENT, recordingSleep } from './support.ts';
import { tempDir } from '../support/tmp.ts';
import { runPool } from '../support/pool.ts';

const MIN = 60_000;

describe('API client against the sandbox: tokens', () => {
  let sandbox: Sandbox | undefined;
  let client: ApiClient | undefined;
  afterEach(async () => {
    await client?.close();
    await sandbox?.close();
    client = sandbox = undefined;
  });

  async function setup(options: { expiresIn?: number; secret?: string; key?: 'readKey' | 'writeKey'; tokenCacheFile?: string } = {}) {
    const clock = new FakeClock('2026-01-08T00:00:00Z');
    sandbox = await startSandbox({ clock, expiresIn: options.expiresIn ?? 900, seed: 3 });
    const customer = sandbox.customers[0]!;
    const key = customer[options.key ?? 'readKey'];
    const log = memoryLogger({ secrets: new SecretRegistry() });
    client = createApiClient({
      baseUrl: sandbox.url,
      apiKey: key.key,
      apiSecret: options.secret ?? key.secret,
      clock,
      logger: log.logger,
      secrets: new SecretRegistry(),
      sleep: recordingSleep().sleep,
      ...(options.tokenCacheFile && { tokenCacheFile: options.tokenCacheFile }),
    });
    return { clock, sandbox, client, customer, key, log };
  }

  it('makes 1,000 requests at concurrency 20 over a simulated hour with at most 6 auth calls and no 401', async () => {
    const { clock, sandbox, client, customer } = await setup({ expiresIn: 900 });
    const expected = sandbox.truth.buildings(customer.id).length;
    const results = await runPool(1000, 20, async () => {
      clock.advance(3600);
      return client.request<{ buildings: unknown[] }>(BUILDINGS);
    });
    expect(results.every((r) => r.buildings.length === expected)).toBe(true);
    expect(sandbox.stats.queries).toBe(1000);
    expect(sandbox.stats.authCalls).toBeLessThanOrEqual(6);
    expect(client.stats).toMatchObject({ requests: 1000, reauthsOn401: 0, retries: 0 });
    expect(client.stats.authCalls).toBe(sandbox.stats.authCalls);
  });

  it('makes exactly one auth call for 100 concurrent requests at the moment of refresh', async () => {
    const { clock, sandbox, client } = await setup({ expiresIn: 900 });
    await client.request(BUILDINGS);
    expect(sandbox.stats.authCalls).toBe(1);
    clock.advance(10 * MIN); // 900 s lifetime - 5 min margin: the refresh moment
    await Promise.all(Array.from({ length: 100 }, () => client.request(BUILDINGS)));
    expect(sandbox.stats.authCalls).toBe(2);
    expect(client.stats.tokenRefreshes).toBe(1);
  });

  it('re-authenticates once when the sandbox revokes the token mid-run, and nothing fails', async () => {
    const { sandbox, client } = await setup();
    let revoked = false;
    const results = await runPool(60, 10, async (i) => {
      if (i === 25 && !revoked) {
        revoked = true;
        sandbox.revokeTokens();
      }
      return client.request<{ buildings: unknown[] }>(BUILDINGS);
    });
    expect(results).toHaveLength(60);
    expect(sandbox.stats.authCalls).toBe(2);
    expect(client.stats.reauthsOn401).toBe(1);
    expect(client.stats.retries).toBe(0);
  });

  it('fails a wrong secret with a clear AuthError after exactly one auth call, and never logs the secret', async () => {
    const wrong = 'wrong-secret-0123456789abcdef';
    const { sandbox, client, key, log } = await setup({ secret: wrong });
    const error = await client.request(BUILDINGS).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthError);
    expect((error as AuthError).message).toMatch(new RegExp(`refused API key "${key.key}" .*HTTP 401.*API_SECRET`));
    expect((error as AuthError).message).not.toContain(wrong);
    expect(sandbox.stats.authCalls).toBe(1);
    expect(sandbox.stats.queries).toBe(0);
    expect(log.lines.join('\n')).not.toContain(wrong);
  });

  it('never writes the secret or the token into a log line, even at trace level with retries', async () => {
    const { sandbox, client, key, log } = await setup();
    sandbox.setFaults({ seed: 5, serverError: 0.3, rateLimit: 0.2, retryAfterSeconds: 0 });
    await runPool(20, 5, () => client.request(BUILDINGS));
    sandbox.revokeTokens();
    await client.request(BUILDINGS);
    const { token } = await client.token();
    expect(client.stats.retries).toBeGreaterThan(0);
    expect(client.stats.reauthsOn401).toBe(1);
    const text = log.lines.join('\n');
    expect(text).toContain('retrying');
    expect(text).not.toContain(key.secret);
    expect(text).not.toContain(token);
  });

  it('reports a missing scope on a mutation as an AuthError naming WritePublicApi and where to grant it', async () => {
    const { client } = await setup({ key: 'readKey' });
    const error = await client.request(SEND_TEST_EVENT, { id: 'x' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthError);
    expect((error as Error).message).toMatch(/may not run mutation SendTestEvent \(HTTP 403\)\. Mutations need scope WritePublicApi on the key .*\/settings\/apiaccess/);
  });

  it('reuses a cached token across processes (a new client) until the refresh margin, then authenticates', async () => {
    const tmp = tempDir();
    try {
      const tokenCacheFile = join(tmp.dir, 'tokens.json');
      const { clock, sandbox, client, key } = await setup({ tokenCacheFile });
      await client.request(BUILDINGS);
      const next = () =>
        createApiClient({ baseUrl: sandbox.url, apiKey: key.key, apiSecret: key.secret, clock, tokenCacheFile, secrets: new SecretRegistry() });
      clock.advance(5 * MIN);
      const second = next();
      await second.request(BUILDINGS);
      await second.close();
      expect(second.stats.authCalls).toBe(0);
      expect(sandbox.stats.authCalls).toBe(1);
      clock.advance(5 * MIN);
      const third = next();
      await third.request(BUILDINGS);
      await third.close();
      expect(third.stats.authCalls).toBe(1);
      expect(statSync(tokenCacheFile).mode & 0o777).toBe(0o600);
    } finally {
      tmp.remove();
    }
  });

  it('exposes the token with its expiry and decoded claims', async () => {
    const { clock, client, customer } = await setup({ expiresIn: 600 });
    const info = await client.token();
    expect(info.expiresAt).toBe(clock.now() + 600_000);
    expect(info.claims).toMatchObject({ customerId: customer.id, scopes: ['ReadPublicApi'] });
  });
});
