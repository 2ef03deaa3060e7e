import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { createTransport, gunzipPieceBytes, maxGzipBytes, type Transport } from '../../src/api/transport.ts';
import { ApiTransportError } from '../../src/api/failure.ts';

/**
 * The answer's body as the transport reads it: gunzipped in one piece, bounded before and while it is inflated
 * (src/api/transport.ts). A real server on a random port, real gzip.
 */

const LIMIT = 64 * 1024;

describe('transport: reading an answer', () => {
  let server: Server | undefined;
  let transport: Transport | undefined;
  const stop = async () => {
    await transport?.close();
    await new Promise((r) => (server ? server.close(r) : r(undefined)));
    server = transport = undefined;
  };
  afterEach(stop);

  async function serve(body: Buffer, encoding = 'gzip'): Promise<Transport> {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': encoding, 'content-length': body.length });
        res.end(body);
      });
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    transport = createTransport({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 10_000, maxBodyBytes: LIMIT });
    return transport;
  }

  const refusal = async (t: Transport) => {
    const error = await t.post('/q', {}, {}).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(ApiTransportError);
    return error as ApiTransportError;
  };

  it('takes an incompressible answer of exactly the limit: its gzip stream is longer than the limit, not longer than maxGzipBytes', async () => {
    const content = randomBytes(LIMIT);
    const gz = gzipSync(content, { level: 9 });
    expect(gz.length).toBeGreaterThan(LIMIT);
    expect(gz.length).toBeLessThanOrEqual(maxGzipBytes(LIMIT));
    const t = await serve(gz);
    const answer = await t.post('/q', {}, {});
    expect(answer.body.equals(content)).toBe(true);
  });

  it('refuses an answer one byte over the limit once inflated, and a compressed one over maxGzipBytes, as permanent', async () => {
    for (const body of [gzipSync(Buffer.alloc(LIMIT + 1, 0x20)), randomBytes(maxGzipBytes(LIMIT) + 1)]) {
      const error = await refusal(await serve(body));
      expect(error.message).toMatch(`the answer is larger than ${LIMIT} bytes once decompressed; refusing it`);
      expect(error.retryable).toBe(false);
      await stop();
    }
  });

  it('stops inflating a small stream that would inflate far past the limit', async () => {
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024));
    expect(bomb.length).toBeLessThan(LIMIT * 8);
    const before = process.memoryUsage().arrayBuffers;
    const error = await refusal(await serve(bomb));
    expect(error.message).toMatch(/once decompressed; refusing it/);
    // Inflated whole, it would have held 64 MiB at once.
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(32 * 1024 * 1024);
  });

  it('reads x-gzip, a stream of two gzip members, and an identity body alike', async () => {
    const text = JSON.stringify({ data: { ok: true, list: Array.from({ length: 5000 }, (_, i) => i) } });
    const half = text.length >> 1;
    for (const [body, encoding] of [
      [gzipSync(text), 'x-gzip'],
      [Buffer.concat([gzipSync(text.slice(0, half)), gzipSync(text.slice(half))]), 'gzip'],
      [Buffer.from(text), 'identity'],
    ] as const) {
      const t = await serve(body, encoding);
      expect((await t.post('/q', {}, {})).body.toString('utf8')).toBe(text);
      await stop();
    }
  });

  it('names a cut-off gzip stream as corrupt, retryable', async () => {
    const gz = gzipSync(JSON.stringify({ data: { list: Array.from({ length: 5000 }, (_, i) => i) } }));
    const error = await refusal(await serve(gz.subarray(0, gz.length - 20)));
    expect(error.reason).toBe('corrupt_body');
    expect(error.message).toMatch(/gzip body of the HTTP 200 answer was truncated or corrupt/);
    expect(error.retryable).toBe(true);
  });

  it('inflates an answer in one piece of the size its trailer states, bounded by 16 KiB, 4 MiB and the limit', () => {
    const page = gzipSync(Buffer.alloc(300_000, 0x41));
    expect(gunzipPieceBytes(page, 64 << 20)).toBe(300_001);
    expect(gunzipPieceBytes(gzipSync('{}'), 64 << 20)).toBe(16 * 1024);
    const claims = Buffer.from(page);
    claims.writeUInt32LE(0xffffffff, claims.length - 4);
    expect(gunzipPieceBytes(claims, 64 << 20)).toBe(4 * 1024 * 1024);
    expect(gunzipPieceBytes(page, LIMIT)).toBe(LIMIT + 1);
    expect(gunzipPieceBytes(Buffer.alloc(3), 64 << 20)).toBe(16 * 1024);
  });
});
