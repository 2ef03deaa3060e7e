import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { waitFor } from '../support/wait.ts';
import { API_VARIANT_INFO, API_VARIANTS } from '../../src/sandbox/index.ts';
import { authenticate, gql } from './helpers.ts';

function capture() {
  let text = '';
  return { stream: { write: (s: string) => (text += s) }, text: () => text };
}

describe('occupancy-sync sandbox', () => {
  it('starts, prints customer ids, demo keys and an .env block that work, and exits 0 on abort', async () => {
    const out = capture();
    const err = capture();
    const controller = new AbortController();
    const run = main(['node', 'occupancy-sync', 'sandbox', '--port', '0', '--seed', '5', '--customers', '3', '--days', '2'], {
      env: { LOG_LEVEL: 'warn' },
      stdout: out.stream,
      stderr: err.stream,
      signal: controller.signal,
    });
    const started = await waitFor(() => out.text().includes('Stop with'), 'the sandbox to print its keys and how to stop it', 20_000, { everyMs: 5, unless: run });
    expect(started, `the sandbox ended before it was ready: ${err.text()}`).toBe(true);
    const text = out.text();
    const env = Object.fromEntries([...text.matchAll(/^(API_BASE_URL|API_KEY|API_SECRET|CUSTOMER_ID|CUSTOMER_NAME)=(.+)$/gm)].map((m) => [m[1], m[2]]));
    expect(Object.keys(env).sort()).toEqual(['API_BASE_URL', 'API_KEY', 'API_SECRET', 'CUSTOMER_ID', 'CUSTOMER_NAME']);
    // The first customer's name, quoted (it has spaces), so a report made from the block names the customer.
    const first = /^ {2}(\S.*)\n {4}CUSTOMER_ID {2}(\S+)$/m.exec(text)!;
    expect(env.CUSTOMER_ID).toBe(first[2]);
    expect(env.CUSTOMER_NAME).toBe(JSON.stringify(first[1]));
    expect(text.match(/CUSTOMER_ID {2}[0-9a-f-]{36}/g)).toHaveLength(3);

    const token = await authenticate(env.API_BASE_URL!, { key: env.API_KEY!, secret: env.API_SECRET!, scopes: [], userCanWrite: true });
    const payload = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8'));
    expect(payload.customerId).toBe(env.CUSTOMER_ID);
    expect(payload.exp - payload.iat).toBe(900);
    const res = await gql(env.API_BASE_URL!, token, { query: '{ buildings { id name } }' });
    expect(res.json.data.buildings).toHaveLength(3);

    controller.abort();
    expect(await run).toBe(0);
    expect(out.text()).toContain('sandbox stopped');
    await expect(fetch(`${env.API_BASE_URL}/api/v1/auth`, { method: 'POST' })).rejects.toThrow();
  });

  it('rejects a bad --port with a usage error naming the option', async () => {
    const err = capture();
    const code = await main(['node', 'occupancy-sync', 'sandbox', '--port', '70000'], {
      env: {},
      stdout: capture().stream,
      stderr: err.stream,
      signal: new AbortController().signal,
    });
    expect(code).toBe(64);
    expect(err.text()).toMatch(/--port must be a whole number from 0 to 65535/);
  });

  it('documents itself in --help with examples', async () => {
    const out = capture();
    const code = await main(['node', 'occupancy-sync', 'sandbox', '--help'], { env: {}, stdout: out.stream, stderr: capture().stream, signal: new AbortController().signal });
    expect(code).toBe(0);
    expect(out.text()).toMatch(/--expires-in/);
    expect(out.text()).toMatch(/occupancy-sync sandbox --port 4000/);
    // Aligned to the longest name, its summary under its query.
    const width = Math.max(...API_VARIANTS.map((v) => v.length));
    for (const variant of API_VARIANTS) {
      expect(out.text()).toContain(`  ${variant.padEnd(width)} ${API_VARIANT_INFO[variant].query}\n  ${' '.repeat(width)} ${API_VARIANT_INFO[variant].summary}\n`);
    }
  });

  it('serves the API variant --api-variant names, says which, and refuses an unknown one listing the variants', async () => {
    const out = capture();
    const err = capture();
    const controller = new AbortController();
    const run = main(['node', 'occupancy-sync', 'sandbox', '--port', '0', '--api-variant', 'edges'], { env: { LOG_LEVEL: 'warn' }, stdout: out.stream, stderr: err.stream, signal: controller.signal });
    const started = await waitFor(() => out.text().includes('Stop with'), 'the sandbox to print its keys', 20_000, { everyMs: 5, unless: run });
    expect(started, `the sandbox ended before it was ready: ${err.text()}`).toBe(true);
    expect(out.text()).toContain('API variant edges: occupancyEvents(filter: { observedFrom, observedBefore }, first, after) (schema: src/sandbox/schema-edges.graphql)');
    const url = out.text().match(/^API_BASE_URL=(.+)$/m)![1]!;
    const key = out.text().match(/^API_KEY=(.+)$/m)![1]!;
    const secret = out.text().match(/^API_SECRET=(.+)$/m)![1]!;
    const token = await authenticate(url, { key, secret, scopes: [], userCanWrite: true });
    const res = await gql(url, token, { query: '{ occupancyEvents(filter: { observedFrom: "2026-01-01T00:00:00Z", observedBefore: "2026-01-01T01:00:00Z" }, first: 1) { pageInfo { hasNextPage } } }' });
    expect(res.json).toEqual({ data: { occupancyEvents: { pageInfo: { hasNextPage: false } } } });
    controller.abort();
    expect(await run).toBe(0);

    const bad = capture();
    const code = await main(['node', 'occupancy-sync', 'sandbox', '--api-variant', 'relay'], { env: {}, stdout: capture().stream, stderr: bad.stream, signal: new AbortController().signal });
    expect(code).toBe(64);
    expect(bad.text()).toMatch(/--api-variant.*use one of v1, v2, edges, token, pages, capped/);
  });
});
