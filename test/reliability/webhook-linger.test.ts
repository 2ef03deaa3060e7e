import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, afterEach, expect, it } from 'vitest';
import { join } from 'node:path';
import type { ReceiverOptions } from '../../src/webhooks/receiver.ts';
import { signatureHeader } from '../../src/webhooks/signature.ts';
import { spawnTs, type Child } from '../support/process.ts';
import { tempDir } from '../support/tmp.ts';
import { waitFor, within } from '../support/wait.ts';
import { SECRET_A } from '../webhooks/helpers.ts';

/**
 * Answers a sender can read: a request refused before its body ended (a declared length over the limit, a body
 * streamed past it, a gzip bomb) is answered, and the connection then reads and drops the rest of the body (a
 * lingering close, src/webhooks/linger.ts) before it closes. A client that writes its whole body before it reads, as
 * most do, reads the answer instead of a broken pipe or a reset; and what the linger reads, and for how long, is
 * bounded.
 */

const tmp = tempDir('linger-');
afterAll(() => tmp.remove());
let child: Child | undefined;

afterEach(async () => {
  child?.process.stdin!.end();
  await child?.exit(30_000, 'the receiver to exit once its stdin is closed');
  child = undefined;
});

/** A receiver in its own process (the sender's writes and the receiver's close race as over a network). */
interface Started {
  port: number;
  /** The reason of every request answered so far. */
  outcomes(): Promise<string[]>;
  /** Connections answered before their body ended that still read the rest of it. */
  lingering(): Promise<number>;
}

async function start(name: string, overrides: Partial<ReceiverOptions> = {}): Promise<Started> {
  child = spawnTs('test/reliability/webhook-receiver-child.ts', [join(tmp.dir, `${name}.db`), JSON.stringify(overrides)], { stdin: 'pipe', stderr: 'inherit' });
  const started = child;
  const { url } = JSON.parse(await started.nextLine('the receiver to print its URL')) as { url: string };
  const outcomes = async () => {
    started.write('outcomes\n');
    return (JSON.parse(await started.nextLine('the receiver to list its outcomes')) as { outcomes: string[] }).outcomes;
  };
  const lingering = async () => {
    started.write('state\n');
    return (JSON.parse(await started.nextLine('the receiver to report its state')) as { lingering: number }).lingering;
  };
  return { port: Number(new URL(url).port), outcomes, lingering };
}

const FORGED = { 'X-Service-Signature': signatureHeader(SECRET_A, 'not this body', Math.floor(Date.now() / 1000)) };

function head(headers: Record<string, string>): string {
  const lines = Object.entries({ Host: 'x', 'Content-Type': 'application/json', ...FORGED, ...headers }).map(([k, v]) => `${k}: ${v}\r\n`);
  return `POST /webhook HTTP/1.1\r\n${lines.join('')}\r\n`;
}

interface Result {
  /** The status line read, or '' when none was. */
  status: string;
  /** The socket error met before the status line was read (EPIPE, ECONNRESET), or ''. */
  error: string;
  /** Whether the whole request was written. */
  wrote: boolean;
}

/**
 * A client that writes the whole request before it reads anything, as most HTTP clients do, in 64 KiB writes each
 * waiting for the one before and a turn of the event loop (a sender whose body is still on its way when the answer
 * comes, as under load): a socket
 * error before the status line is read is what such a client reports instead of the answer.
 */
function writeAllThenRead(port: number, request: Buffer[]): Promise<Result> {
  return new Promise((resolve) => {
    const result: Result = { status: '', error: '', wrote: false };
    // Half-open allowed: the receiver's FIN after its answer does not end our side; we go on writing the body.
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    let text = '';
    let failed = false;
    const done = () => {
      socket.destroy();
      resolve(result);
    };
    socket.on('error', (error: NodeJS.ErrnoException) => {
      failed = true;
      if (!result.status) result.error = error.code ?? error.message;
      done();
    });
    socket.on('close', done);
    // The receiver's FIN after its answer: all there is to read has been read.
    socket.on('end', done);
    const whole = Buffer.concat(request);
    const step = 64 * 1024;
    const next = (offset: number) => {
      if (failed) return;
      if (offset >= whole.length) {
        result.wrote = true;
        socket.on('data', (chunk: Buffer) => {
          text += chunk.toString('latin1');
          const end = text.indexOf('\r\n');
          if (end >= 0 && !result.status) result.status = text.slice(0, end);
        });
        return;
      }
      // One write per turn of the event loop: the receiver has time to answer while the body is still being sent.
      socket.write(whole.subarray(offset, offset + step), (error) => {
        if (!error) setImmediate(next, offset + step);
      });
    };
    next(0);
  });
}

it('50 clients that write a 2 MiB body with a declared length over the limit before reading, all at once, each read the 413', async () => {
  const r = await start('declared');
  const body = Buffer.alloc(2 * 1024 * 1024, 0x20);
  const request = [Buffer.from(head({ 'Content-Length': String(body.length) })), body];
  const results = await within(
    Promise.all(Array.from({ length: 50 }, () => writeAllThenRead(r.port, request))),
    '50 clients to write 2 MiB each and read their answers',
    45_000,
  );
  const summary = results.map((x) => x.status || `no answer (${x.error || 'closed'})`);
  expect(summary.filter((s) => s === 'HTTP/1.1 413 Payload Too Large'), JSON.stringify([...new Set(summary)])).toHaveLength(50);
  expect(results.every((x) => x.wrote)).toBe(true);
  expect(await r.outcomes()).toEqual(Array(50).fill('body_too_large'));
}, 60_000);

it('a body streamed past the limit and a gzip bomb, written whole before reading: each sender reads its 413', async () => {
  const r = await start('streamed', { maxDecompressedBytes: 1024 * 1024 });
  // Refused once 1 MiB has come: the other 2 MiB are still on their way.
  const streamed = Buffer.alloc(3 * 1024 * 1024, 0x20);
  const chunked = [Buffer.from(head({ 'Transfer-Encoding': 'chunked' })), Buffer.from(`${streamed.length.toString(16)}\r\n`), streamed, Buffer.from('\r\n0\r\n\r\n')];
  // Inflates past the limit within its first KiB; the incompressible rest (within the wire limit) is still on its way.
  const bomb = gzipSync(Buffer.concat([Buffer.alloc(16 * 1024 * 1024, 0), randomBytes(900 * 1024)]), { level: 9 });
  const gzip = [Buffer.from(head({ 'Content-Encoding': 'gzip', 'Content-Length': String(bomb.length) })), bomb];
  const results = await within(
    Promise.all([...Array.from({ length: 10 }, () => writeAllThenRead(r.port, chunked)), ...Array.from({ length: 10 }, () => writeAllThenRead(r.port, gzip))]),
    '20 clients to write their bodies and read their answers',
    45_000,
  );
  expect(results.map((x) => x.status || `no answer (${x.error || 'closed'})`)).toEqual(Array(20).fill('HTTP/1.1 413 Payload Too Large'));
  expect((await r.outcomes()).sort()).toEqual([...Array(10).fill('body_too_large'), ...Array(10).fill('decompressed_too_large')]);
}, 60_000);

it('the linger is bounded: the rest of a stalled body is read until lingerMs, then a FIN; a body longer than 4 x maxBodyBytes is not read', async () => {
  const r = await start('bounded', { maxBodyBytes: 64 * 1024, lingerMs: 1_000 });

  // Declares 200 KiB (within the linger's 256 KiB), sends 1 KiB and stalls; once answered, sends 32 KiB more. The
  // receiver still reads the connection after its answer (it lingers), and once the linger's time is up it closes
  // it, with a FIN and no reset (the 32 KiB were read).
  const stalled = connect({ port: r.port, host: '127.0.0.1', allowHalfOpen: true });
  let text = '';
  const errors: string[] = [];
  const ended = new Promise<void>((resolve) => stalled.once('end', resolve));
  const closed = new Promise<boolean>((resolve) => stalled.once('close', resolve));
  stalled.on('error', (error: NodeJS.ErrnoException) => errors.push(error.code ?? error.message));
  stalled.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  stalled.write(head({ 'Content-Length': String(200 * 1024) }));
  stalled.write(Buffer.alloc(1024, 0x20));
  await within(
    new Promise<void>((resolve) => {
      const check = () => (text.includes('\r\n\r\n') ? resolve() : stalled.once('data', check));
      check();
    }),
    'the 413 to a stalled sender',
    15_000,
  );
  expect(text.split('\r\n')[0]).toBe('HTTP/1.1 413 Payload Too Large');
  expect(await r.lingering()).toBe(1);
  stalled.write(Buffer.alloc(32 * 1024, 0x20));
  await within(ended, 'the receiver to close the stalled connection (FIN)', 15_000);
  stalled.end();
  const hadError = await within(closed, 'the stalled connection to close', 15_000);
  expect({ hadError, errors }).toEqual({ hadError: false, errors: [] });
  await waitFor(async () => (await r.lingering()) === 0, 'the receiver to count no lingering connection', 15_000);

  // Declared far over what the linger reads: closed once answered, without reading the body; a sender writing it
  // all meets an error before it is done.
  const huge = Buffer.alloc(16 * 1024 * 1024, 0x20);
  const declared = await within(writeAllThenRead(r.port, [Buffer.from(head({ 'Content-Length': String(huge.length) })), huge]), 'a 16 MiB body to be refused', 30_000);
  expect(declared.wrote).toBe(false);

  // Streamed (no declared length) past what the linger reads: cut once it has read that much.
  const chunks = [Buffer.from(head({ 'Transfer-Encoding': 'chunked' })), Buffer.from(`${huge.length.toString(16)}\r\n`), huge, Buffer.from('\r\n0\r\n\r\n')];
  const streamed = await within(writeAllThenRead(r.port, chunks), 'a 16 MiB streamed body to be refused', 30_000);
  expect(streamed.wrote).toBe(false);
  expect(await r.outcomes()).toEqual(['body_too_large', 'body_too_large', 'body_too_large']);
}, 60_000);
