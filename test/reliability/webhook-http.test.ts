import { DELIVERIES } from '../support/deliveries.ts';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { connect as netConnect, type Socket } from 'node:net';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { memoryLogger } from '../../src/logger.ts';
import { startReceiver, type Receiver, type ReceiverOptions, type WebhookOutcome } from '../../src/webhooks/receiver.ts';
import { signatureHeader } from '../../src/webhooks/signature.ts';
import { CUSTOMER_A, SECRET_A, customer, delivery } from '../webhooks/helpers.ts';
import { migratedStore } from '../support/databases.ts';
import { spawnTs, type Child } from '../support/process.ts';
import { tempDir } from '../support/tmp.ts';
import { waitFor, within } from '../support/wait.ts';
import { Figures } from './figures.ts';

/**
 * The receiver at the HTTP level, over raw sockets (the bytes an attacker chooses, not what an HTTP client would
 * send), on plain HTTP and on HTTPS: a gzip bomb sent slowly behind a valid signature, a body trickled forever, and
 * every framing or header ambiguity a proxy and the receiver could read differently (request smuggling). The
 * framing cases run a third time against a receiver in a process started with --insecure-http-parser, the flag
 * NODE_OPTIONS can carry into any node process: the receiver must not inherit node's lenient parser from it.
 */

const FRAMING = [
  ['bare-lf-chunk', 'chunked framing ended with a bare LF (`0\\n\\n`), a second request hidden behind it'],
  ['bare-lf-headers', 'header lines ended with a bare LF'],
  ['bare-cr', 'a bare CR inside the header block'],
  ['obs-fold', 'a header value folded onto a second line (obs-fold)'],
  ['two-hosts', 'two `Host` headers'],
  ['host-list', '`Host: a, b`'],
  ['cl-and-te', '`Content-Length` and `Transfer-Encoding: chunked` together, a request hidden in the body'],
  ['two-content-lengths', 'two equal `Content-Length` headers'],
  ['te-not-chunked', '`Transfer-Encoding: gzip, chunked`'],
  ['te-http-1.0', '`Transfer-Encoding: chunked` on an HTTP/1.0 request'],
  ['two-signatures', 'the valid `X-Service-Signature` twice'],
  ['two-content-types', 'two `Content-Type` headers'],
  ['nul-in-header', 'a NUL in a header value'],
  ['behind-a-refusal', 'a delivery pipelined behind a request refused (401) before its body, so answered with `Connection: close`'],
] as const;
type FramingCase = (typeof FRAMING)[number][0];

const figures = new Figures(
  { section: 'webhook-http', title: 'The receiver at the HTTP level: raw sockets on HTTP and HTTPS (SQLite)' },
  ['webhook-http/slow-gzip-bomb', 'webhook-http/trickled-body', ...FRAMING.map(([key]) => `webhook-http/${key}`)],
);
afterAll(() => void figures.publish());

const tmp = tempDir('webhook-http-');
let tlsFiles: { cert: string; key: string };
beforeAll(() => {
  const cert = join(tmp.dir, 'cert.pem');
  const key = join(tmp.dir, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1'], { stdio: 'ignore' });
  tlsFiles = { cert, key };
});
afterAll(() => tmp.remove());

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

type Transport = 'http' | 'https';
const TRANSPORTS: Transport[] = ['http', 'https'];

interface Target {
  port: number;
  transport: Transport;
  outcomes: WebhookOutcome[];
  receiver: Receiver | undefined;
  stored(): Promise<number>;
}

async function receiverOn(transport: Transport, options: Partial<ReceiverOptions> = {}): Promise<Target> {
  const { store, drop } = await migratedStore('sqlite', 'webhook-http');
  cleanups.push(drop);
  const outcomes: WebhookOutcome[] = [];
  const receiver = await startReceiver({ deliveries: DELIVERIES, 
    store,
    customers: [customer(CUSTOMER_A, { webhookSecrets: [SECRET_A] })],
    logger: memoryLogger().logger,
    onOutcome: (o) => outcomes.push(o),
    ...(transport === 'https' && { tlsCert: tlsFiles.cert, tlsKey: tlsFiles.key }),
    ...options,
  });
  cleanups.push(() => receiver.close());
  const stored = async () => Number((await store.query<{ n: unknown }>('SELECT count(*) AS n FROM webhook_deliveries'))[0]!.n);
  return { port: receiver.port, transport, outcomes, receiver, stored };
}

/** A raw connection: what it was sent is exactly what the test wrote; `text()` is everything received so far. */
interface Raw {
  socket: Socket;
  text(): string;
  /** The first line of the answer, once it has come. */
  statusLine(what: string): Promise<string>;
  /** Resolves when the receiver has closed the connection. */
  closed: Promise<void>;
  write(bytes: string | Buffer): Promise<void>;
}

async function open(target: { port: number; transport: Transport }): Promise<Raw> {
  const socket: Socket =
    target.transport === 'https'
      ? tlsConnect({ port: target.port, host: '127.0.0.1', rejectUnauthorized: false })
      : netConnect(target.port, '127.0.0.1');
  cleanups.push(() => socket.destroy());
  socket.on('error', () => {});
  let received = '';
  const listeners = new Set<() => void>();
  socket.on('data', (d: Buffer) => {
    received += d.toString('latin1');
    for (const l of listeners) l();
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    socket.once(target.transport === 'https' ? 'secureConnect' : 'connect', () => resolve());
    socket.once('error', reject);
  });
  return {
    socket,
    text: () => received,
    closed,
    statusLine: (what) =>
      within(
        new Promise<string>((resolve) => {
          const check = () => {
            if (received.includes('\r\n')) resolve(received.slice(0, received.indexOf('\r\n')));
          };
          listeners.add(check);
          check();
          void closed.then(() => resolve(received.split('\r\n')[0]!));
        }),
        what,
        20_000,
      ),
    write: (bytes) => new Promise<void>((resolve) => socket.write(bytes, () => resolve())),
  };
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

function signedBody() {
  const body = JSON.stringify(delivery({ Id: randomUUID(), Created: new Date().toISOString(), Sent: new Date().toISOString() }));
  return { body, signature: signatureHeader(SECRET_A, body, nowSeconds()) };
}

describe.each(TRANSPORTS)('slow senders (%s)', (transport) => {
  it('refuses a slowly sent gzip bomb with a valid signature as soon as it inflates past the limit, and closes the connection', async () => {
    const limit = 1024 * 1024;
    // A generous request timeout: only the inflated size may end this upload.
    const target = await receiverOn(transport, { maxDecompressedBytes: limit, requestTimeoutMs: 600_000 });
    const inflated = Buffer.alloc(64 * 1024 * 1024, 0x20);
    const bomb = gzipSync(inflated, { level: 9 });
    const raw = await open(target);
    await raw.write(
      `POST /webhook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n` +
        `X-Service-Signature: ${signatureHeader(SECRET_A, inflated, nowSeconds())}\r\nContent-Length: ${bomb.length}\r\n\r\n`,
    );
    // 1 KiB at a time, each write waiting for the previous one, until an answer comes; the rest is never sent.
    let sent = 0;
    const answered = raw.statusLine('an answer to the bomb');
    let done = false;
    void answered.finally(() => (done = true));
    while (!done && sent < 16 * 1024) {
      await raw.write(bomb.subarray(sent, sent + 1024));
      sent += 1024;
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(await answered).toBe('HTTP/1.1 413 Payload Too Large');
    await within(raw.closed, 'the receiver to close the connection', 20_000);
    expect(raw.text()).toContain('{"error":"decompressed_too_large"}');
    expect(sent).toBeLessThan(bomb.length);
    expect(target.outcomes).toEqual([{ status: 413, reason: 'decompressed_too_large' }]);
    expect(target.receiver!.handler.pendingBytes).toBe(0);
    expect(await target.stored()).toBe(0);
    if (transport === 'https') {
      figures.record({
        key: 'webhook-http/slow-gzip-bomb',
        tried: 'a gzip bomb (64 MiB of spaces in 64 KiB) signed over its whole content, sent 1 KiB at a time, the rest withheld; limit 1 MiB, HTTP and HTTPS',
        count: TRANSPORTS.length,
        held: '413 decompressed_too_large before the rest of the body was sent; the receiver closed the connection; nothing pending, nothing stored',
      });
    }
  });

  it('cuts a body trickled forever once WEBHOOK_REQUEST_TIMEOUT has passed', async () => {
    const target = await receiverOn(transport, { requestTimeoutMs: 1000 });
    const { body, signature } = signedBody();
    const raw = await open(target);
    await raw.write(
      `POST /webhook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Service-Signature: ${signature}\r\n` +
        `Content-Length: ${body.length}\r\n\r\n`,
    );
    // One byte every 100 ms, for longer than the body would last: the sender never finishes on its own.
    let at = 0;
    const trickle = setInterval(() => raw.socket.write(body.charAt(at++ % body.length)), 100);
    cleanups.push(() => clearInterval(trickle));
    await within(raw.closed, 'the receiver to cut the trickled upload', 30_000);
    expect(raw.text().split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
    // The timeout ended the upload, not the body: it was cut before its last byte was sent (a whole body would have
    // been a valid delivery, answered 200 and stored).
    expect(at).toBeLessThan(body.length);
    // The sender may see the connection closed before the receiver has recorded why (a busy machine showed it).
    await waitFor(() => target.outcomes.length > 0, 'the receiver to record the cut upload');
    expect(target.outcomes).toEqual([{ status: 400, reason: 'body_aborted' }]);
    expect(await target.stored()).toBe(0);
    if (transport === 'https') {
      figures.record({
        key: 'webhook-http/trickled-body',
        tried: 'a signed body sent one byte every 100 ms without end; WEBHOOK_REQUEST_TIMEOUT=1s, HTTP and HTTPS',
        count: TRANSPORTS.length,
        held: 'cut with 408 once the timeout passed (checked every second, not every 30 s); nothing stored',
      });
    }
  });
});

/** The bytes of each framing case: a signed delivery that would be stored if the request were read as sent. */
function framingRequest(kind: FramingCase): string {
  const { body, signature } = signedBody();
  const hidden = `POST /webhook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Service-Signature: ${signature}\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
  const head = (extra: string, version = '1.1') =>
    `POST /webhook HTTP/${version}\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Service-Signature: ${signature}\r\n${extra}`;
  const sized = `Content-Length: ${body.length}\r\n\r\n${body}`;
  const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
  switch (kind) {
    case 'bare-lf-chunk':
      return `${head('Transfer-Encoding: chunked\r\n\r\n')}${chunk(body)}0\n\n${hidden}`;
    case 'bare-lf-headers':
      return head(sized).replace(/\r\n/g, (m, offset: number, s: string) => (offset < s.indexOf('\r\n\r\n') ? '\n' : m));
    case 'bare-cr':
      return head(`X-Note: a\rb\r\n${sized}`);
    case 'obs-fold':
      return head(`X-Note: a\r\n b\r\n${sized}`);
    case 'two-hosts':
      return head(`Host: other.example\r\n${sized}`);
    case 'host-list':
      return head(sized).replace('Host: 127.0.0.1', 'Host: 127.0.0.1, other.example');
    case 'cl-and-te':
      return `${head(`Content-Length: ${Buffer.byteLength(chunk(body)) + 5}\r\nTransfer-Encoding: chunked\r\n\r\n`)}${chunk(body)}0\r\n\r\n${hidden}`;
    case 'two-content-lengths':
      return head(`Content-Length: ${body.length}\r\n${sized}`);
    case 'te-not-chunked':
      return `${head('Transfer-Encoding: gzip, chunked\r\n\r\n')}${chunk(body)}0\r\n\r\n`;
    case 'te-http-1.0':
      return `${head('Transfer-Encoding: chunked\r\n\r\n', '1.0')}${chunk(body)}0\r\n\r\n`;
    case 'two-signatures':
      return head(`X-Service-Signature: ${signature}\r\n${sized}`);
    case 'two-content-types':
      return head(`Content-Type: text/plain\r\n${sized}`);
    case 'nul-in-header':
      return head(`X-Note: a\u0000b\r\n${sized}`);
    case 'behind-a-refusal':
      return `POST /webhook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${sized}${hidden}`;
  }
}

interface FramingTarget {
  name: string;
  port: number;
  transport: Transport;
  /** Deliveries stored so far. */
  stored(): Promise<number>;
  /** Outcomes the handler reported (undefined for the receiver in its own process: it is checked by `stored`). */
  outcomes: WebhookOutcome[] | undefined;
}

async function lenientChild(): Promise<{ target: FramingTarget; child: Child }> {
  const path = join(tmp.dir, `lenient-${randomUUID()}.db`);
  const child = spawnTs('test/reliability/fixtures/receiver-child.ts', [path], { nodeFlags: ['--insecure-http-parser'], stdin: 'pipe' });
  cleanups.push(async () => {
    child.process.stdin!.end();
    await child.exit(30_000, 'the receiver to exit once its stdin is closed');
  });
  const { url } = JSON.parse(await child.nextLine('the receiver to print its URL')) as { url: string };
  const stored = async () => {
    child.write('stored\n');
    return (JSON.parse(await child.nextLine('the receiver to count its deliveries')) as { stored: number }).stored;
  };
  return { child, target: { name: 'http under --insecure-http-parser', port: Number(new URL(url).port), transport: 'http', stored, outcomes: undefined } };
}

describe('framing and header ambiguities (request smuggling)', () => {
  it.each(FRAMING)('%s: refused, the connection closed, nothing hidden processed, on HTTP, HTTPS and under --insecure-http-parser', async (kind, what) => {
    const targets: FramingTarget[] = [];
    for (const transport of TRANSPORTS) {
      const t = await receiverOn(transport);
      targets.push({ name: transport, port: t.port, transport, stored: t.stored, outcomes: t.outcomes });
    }
    targets.push((await lenientChild()).target);
    for (const target of targets) {
      const raw = await open(target);
      await raw.write(Buffer.from(framingRequest(kind), 'latin1'));
      const status = await raw.statusLine(`an answer to ${kind} on ${target.name}`);
      await within(raw.closed, `the receiver to close the connection after ${kind} on ${target.name}`, 20_000);
      expect([target.name, status]).toEqual([target.name, kind === 'behind-a-refusal' ? 'HTTP/1.1 401 Unauthorized' : 'HTTP/1.1 400 Bad Request']);
      // One answer only: nothing hidden behind the request was read as a second one.
      expect([target.name, raw.text().match(/HTTP\/1\.1 /g)?.length]).toEqual([target.name, 1]);
      expect([target.name, await target.stored()]).toEqual([target.name, 0]);
      // What reached the handler was refused there: as malformed, or cut short when the parser failed mid-body.
      for (const o of target.outcomes ?? []) {
        if (kind === 'behind-a-refusal') expect([target.name, o]).toEqual([target.name, { status: 401, reason: 'signature_missing' }]);
        else expect([target.name, o.status, ['malformed_request', 'body_aborted'].includes(o.reason)]).toEqual([target.name, 400, true]);
      }
    }
    figures.record({
      key: `webhook-http/${kind}`,
      tried: `${what}, on a validly signed delivery; HTTP, HTTPS, and HTTP in a process run with --insecure-http-parser`,
      count: targets.length,
      held: `${kind === 'behind-a-refusal' ? '401' : '400'} and the connection closed; one answer, nothing hidden read as a request; nothing stored`,
    });
  });
});
