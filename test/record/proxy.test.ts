import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { request } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { prepareOutDir, writeExchange } from '../../src/app/record-files.ts';
import { startRecordingProxy, type RecordingProxy } from '../../src/app/record-proxy.ts';
import { RecordingRedactor } from '../../src/app/record-redact.ts';
import { silentLogger } from '../../src/logger.ts';
import type { RecordedExchange } from '../../src/sandbox/replay-format.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { tempDir } from '../support/tmp.ts';
import { leaks } from './helpers.ts';

/**
 * The recorder's proxy and redactor against a real sandbox (real HTTP, real gzip): what the command gets is what the
 * platform sent, and what is kept holds no secret in any form, whichever field or encoding carried it.
 */

const SIGNATURE_SECRET = 'sig "secret" / for + the webhook & = 64 characters at least, so it is a valid one!';
const HEADER_VALUE = 'x-token-value-4c1d9e2f0123';
const PREVIOUS_SECRET = 'previous webhook secret: also registered in the configuration, 64 characters or more....';

describe('the recording proxy', () => {
  let sandbox: Sandbox;
  let proxy: RecordingProxy;
  let work: ReturnType<typeof tempDir>;
  let kept: RecordedExchange[];
  let customer: Sandbox['customers'][number];

  beforeEach(async () => {
    sandbox = await startSandbox({ seed: 3, customers: 1 });
    customer = sandbox.customers[0]!;
    work = tempDir('occupancy-sync-proxy-');
    prepareOutDir(work.dir + '/rec');
    kept = [];
    const redactor = new RecordingRedactor([
      { id: customer.id, apiKey: customer.writeKey.key, apiSecret: customer.writeKey.secret, webhookSecrets: [PREVIOUS_SECRET], webhookHeaders: {} },
    ]);
    proxy = await startRecordingProxy({
      upstream: sandbox.url,
      logger: silentLogger,
      onExchange: async (captured) => {
        const exchange = redactor.redact(captured);
        kept.push(exchange);
        await writeExchange(join(work.dir, 'rec'), exchange);
      },
    });
  });
  afterEach(async () => {
    await proxy.close();
    await sandbox.close();
    work.remove();
  });

  async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
    const res = await request(`${proxy.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', 'accept-encoding': 'gzip', ...headers },
      body: JSON.stringify(body),
    });
    const raw = Buffer.from(await res.body.arrayBuffer());
    return { status: res.statusCode, headers: res.headers, raw, json: JSON.parse((res.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8')) };
  }

  const token = async () => (await post('/api/v1/auth', { ApiKey: customer.writeKey.key, ApiSecret: customer.writeKey.secret })).json.idToken as string;

  it('passes answers on unchanged (gzip, the platform Date) and keeps them decompressed, with status, headers and timing', async () => {
    const idToken = await token();
    const res = await post('/api/external/query', { query: '{ buildings { id name } }' }, { authorization: `Bearer ${idToken}` });
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(res.json.data.buildings).toHaveLength(3);
    await proxy.close();
    const [auth, query] = kept;
    expect(auth).toMatchObject({ seq: 1, endpoint: 'auth', key: 'recorded-key-1', response: { status: 200 } });
    expect(query).toMatchObject({
      seq: 2,
      endpoint: 'query',
      key: 'recorded-key-1',
      request: { headers: { authorization: 'Bearer [removed: token 1 of recorded-key-1]', 'accept-encoding': 'gzip' } },
      response: { status: 200, contentEncoding: 'gzip', wireBytes: res.raw.length, headers: { date: res.headers.date }, body: { data: { buildings: res.json.data.buildings } } },
    });
    expect(query!.durationMs).toBeGreaterThanOrEqual(0);
    expect(Date.parse(query!.startedAt)).toBeGreaterThanOrEqual(Date.parse(auth!.startedAt));
  });

  it('removes webhook secrets, custom header values, signatures and any registered secret in every encoding', async () => {
    const idToken = await token();
    const bearer = { authorization: `Bearer ${idToken}`, 'x-service-signature': 't=1,s=ABCDEF0123456789', cookie: 'session=abc123secretcookie' };
    const registered = await post(
      '/api/external/query',
      {
        query: 'mutation RegisterWebhook($input: RegisterWebhookInput!) { registerWebhook(input: $input) { id additionalHeaders { key value } signed } }',
        operationName: 'RegisterWebhook',
        variables: { input: { url: 'https://receiver.example/hook', eventTypes: ['Occupancy'], signatureSecret: SIGNATURE_SECRET, additionalHeaders: [{ key: 'X-Token', value: HEADER_VALUE }] } },
      },
      bearer,
    );
    expect(registered.json.data.registerWebhook.additionalHeaders).toEqual([{ key: 'X-Token', value: HEADER_VALUE }]);
    // Secrets known by then, smuggled in other encodings into an ordinary variable.
    for (const nameLike of [
      Buffer.from(SIGNATURE_SECRET).toString('base64'),
      Buffer.from(HEADER_VALUE).toString('hex').toUpperCase(),
      encodeURIComponent(PREVIOUS_SECRET),
      JSON.stringify(`${idToken}`).slice(1, -1),
      Buffer.from(customer.writeKey.secret).toString('base64url'),
    ]) {
      await post('/api/external/query', { query: 'query B($n: String) { buildings(nameLike: $n) { id } }', operationName: 'B', variables: { n: `x${nameLike}` } }, bearer);
    }
    await proxy.close();
    expect(
      leaks(join(work.dir, 'rec'), {
        signatureSecret: SIGNATURE_SECRET,
        headerValue: HEADER_VALUE,
        previous: PREVIOUS_SECRET,
        apiSecret: customer.writeKey.secret,
        apiKey: customer.writeKey.key,
        token: idToken,
        tokenSignature: idToken.split('.')[2]!,
        signature: 't=1,s=ABCDEF0123456789',
        cookie: 'abc123secretcookie',
      }),
    ).toEqual([]);
    const mutation = kept.find((x) => x.request.body && (x.request.body as { operationName?: string }).operationName === 'RegisterWebhook')!;
    expect(mutation.request.headers).toMatchObject({ 'x-service-signature': '[removed: webhook signature]', cookie: '[removed: cookie]' });
    expect((mutation.request.body as { variables: unknown }).variables).toEqual({
      input: {
        url: 'https://receiver.example/hook',
        eventTypes: ['Occupancy'],
        signatureSecret: '[removed: webhook signature secret]',
        additionalHeaders: [{ key: 'X-Token', value: '[removed: webhook header value]' }],
      },
    });
    expect(mutation.response!.body).toMatchObject({ data: { registerWebhook: { additionalHeaders: [{ key: 'X-Token', value: '[removed: webhook header value]' }] } } });
    const smuggled = kept.filter((x) => (x.request.body as { operationName?: string } | undefined)?.operationName === 'B');
    expect(smuggled.map((x) => (x.request.body as { variables: { n: string } }).variables.n)).toEqual(['x[REDACTED]', 'x[REDACTED]', 'x[REDACTED]', 'x[removed: a JWT]', 'x[REDACTED]']);
  });

  it('passes failures on in kind and records how each exchange ended', async () => {
    const idToken = await token();
    const body = { query: '{ buildings { id } }' };
    sandbox.setFaults({ connectionReset: 1 });
    await expect(post('/api/external/query', body, { authorization: `Bearer ${idToken}` })).rejects.toMatchObject({ code: expect.stringMatching(/UND_ERR_SOCKET|ECONNRESET/) });
    sandbox.setFaults({ truncatedGzip: 1 });
    const cut = await request(`${proxy.url}/api/external/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'accept-encoding': 'gzip', authorization: `Bearer ${idToken}` },
      body: JSON.stringify(body),
    });
    expect(cut.statusCode).toBe(200);
    await expect(cut.body.arrayBuffer()).rejects.toThrow();
    sandbox.setFaults(undefined);
    await proxy.close();
    expect(kept.map((x) => [x.seq, x.failure?.stage ?? 'answered'])).toEqual([[1, 'answered'], [2, 'no-answer'], [3, 'body']]);
    expect(kept[2]!.response).toMatchObject({ status: 200, contentEncoding: 'gzip' });
  });
});
