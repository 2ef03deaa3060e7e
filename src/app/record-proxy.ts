import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import type { Logger } from '../logger.ts';
import type { CapturedExchange } from './record-redact.ts';

/**
 * The recorder's reverse proxy: listens on loopback (plain http, which API_BASE_URL allows there), forwards each
 * request byte for byte to the platform (https), sends the answer back byte for byte (gzip stays gzip, the platform's
 * Date header stays), and hands both to `onExchange`. The recorded command is unchanged code talking to what looks
 * like the platform, so the recording holds what the real client really sent: its retries, its re-authentications,
 * its headers. A failure is passed on in kind: no answer is a dropped connection, a body cut off is cut off again.
 */

export interface RecordingProxyOptions {
  /** The platform's base URL (API_BASE_URL); its path, if any, prefixes every forwarded path. */
  upstream: string;
  /** Called once per exchange, when it is over; the proxy's close() waits for the returned promises. */
  onExchange(exchange: CapturedExchange): Promise<void>;
  logger: Logger;
  /** Real time (the recorded command's own clock stands still). */
  now?: () => number;
}

export interface RecordingProxy {
  url: string;
  /** Stops accepting, waits for exchanges in flight to be handed over. */
  close(): Promise<void>;
}

const MAX_REQUEST_BYTES = 16 * 1024 * 1024;
/** Hop-by-hop headers (RFC 9110 7.6.1) and those recomputed for the other side. */
const NOT_FORWARDED = new Set(['host', 'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'content-length']);

function forwardable(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !NOT_FORWARDED.has(name)) out[name] = value;
  return out;
}

async function readAll(stream: AsyncIterable<unknown>, limit: number, chunks: Buffer[]): Promise<void> {
  let size = 0;
  for await (const chunk of stream) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    size += buffer.length;
    if (size > limit) throw new RangeError(`more than ${limit} bytes`);
    chunks.push(buffer);
  }
}

const errorText = (error: unknown): string => {
  const code = (error as { code?: unknown }).code;
  const cause = (error as { cause?: { code?: unknown } }).cause?.code;
  return [typeof code === 'string' ? code : undefined, typeof cause === 'string' ? cause : undefined, (error as Error).message].filter(Boolean).join(': ');
};

export async function startRecordingProxy(options: RecordingProxyOptions): Promise<RecordingProxy> {
  const now = options.now ?? Date.now;
  const upstream = new URL(options.upstream);
  const prefix = upstream.pathname.replace(/\/+$/, '');
  // No idle timers: the recorded command's own HTTP_TIMEOUT decides when an answer is too late, and its giving up
  // (closing the connection) aborts the forwarded request.
  const pool = new Pool(upstream.origin, { connections: 64, headersTimeout: 0, bodyTimeout: 0 });
  const pending = new Set<Promise<void>>();
  let seq = 0;

  const hand = (exchange: CapturedExchange) => {
    const done = options.onExchange(exchange).catch((error: unknown) => {
      options.logger.error({ err: error, seq: exchange.seq }, 'record: could not keep an exchange');
    });
    pending.add(done);
    void done.finally(() => pending.delete(done));
  };

  const context: ProxyContext = { pool, prefix, now, next: () => ++seq, hand };
  const server = createServer((req, res) => {
    forward(context, req, res).catch((error: unknown) => {
      options.logger.error({ err: error }, 'record: the proxy failed on a request');
      res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => {
      closed ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        while (pending.size > 0) await Promise.all([...pending]);
        server.closeAllConnections();
        await stopped;
        await pool.close();
      })();
      return closed;
    },
  };
}

/** What forwarding a request needs of its proxy. */
interface ProxyContext {
  pool: Pool;
  /** The upstream URL's path, prefixed to each request's. */
  prefix: string;
  now: () => number;
  /** The next exchange's sequence number. */
  next(): number;
  hand(exchange: CapturedExchange): void;
}
/** One request passed on to the platform and its answer back, the exchange handed over as it went. */
async function forward(ctx: ProxyContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const n = ctx.next();
  const startedAt = ctx.now();
  const t0 = performance.now();
  const method = req.method ?? 'GET';
  const path = req.url ?? '/';
  const chunks: Buffer[] = [];
  const request = { method, path, headers: req.headers, body: Buffer.alloc(0) };
  const finish = (rest: Pick<CapturedExchange, 'response' | 'failure'>) =>
    ctx.hand({ seq: n, startedAt, durationMs: performance.now() - t0, request, ...rest });

  try {
    await readAll(req, MAX_REQUEST_BYTES, chunks);
  } catch (error) {
    request.body = Buffer.concat(chunks);
    res.destroy();
    finish({ failure: { stage: 'no-answer', message: `the recorder did not forward the request: its body could not be read (${errorText(error)})` } });
    return;
  }
  request.body = Buffer.concat(chunks);

  const gone = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) gone.abort();
  });
  let answer: Awaited<ReturnType<Pool['request']>>;
  try {
    answer = await ctx.pool.request({
      path: ctx.prefix + path,
      method: method as 'POST',
      headers: forwardable(req.headers),
      body: request.body.length > 0 ? request.body : null,
      signal: gone.signal,
    });
  } catch (error) {
    res.destroy();
    finish({ failure: gone.signal.aborted ? { stage: 'client-gone', message: 'the command closed the connection before the answer came' } : { stage: 'no-answer', message: errorText(error) } });
    return;
  }
  const body: Buffer[] = [];
  const headers = forwardable(answer.headers as IncomingHttpHeaders);
  try {
    await readAll(answer.body, Number.MAX_SAFE_INTEGER, body);
  } catch (error) {
    const wire = Buffer.concat(body);
    const response = { status: answer.statusCode, headers: answer.headers as IncomingHttpHeaders, wire };
    if (gone.signal.aborted) {
      finish({ response, failure: { stage: 'client-gone', message: 'the command closed the connection while the answer came' } });
      return;
    }
    // Cut off on the way in, cut off on the way out: announce what the platform announced, send what came.
    res.sendDate = false;
    const announced = answer.headers['content-length'];
    res.writeHead(answer.statusCode, { ...headers, ...(announced !== undefined && { 'content-length': String(announced) }) });
    res.write(wire, () => res.destroy());
    finish({ response, failure: { stage: 'body', message: `the answer's body was cut off after ${wire.length} bytes (${errorText(error)})` } });
    return;
  }
  const wire = Buffer.concat(body);
  if (!gone.signal.aborted) {
    // The platform's Date header, not ours: the command caps its watermark with it.
    res.sendDate = false;
    res.writeHead(answer.statusCode, { ...headers, 'content-length': String(wire.length) });
    res.end(wire);
  }
  finish({
    response: { status: answer.statusCode, headers: answer.headers as IncomingHttpHeaders, wire },
    ...(gone.signal.aborted && { failure: { stage: 'client-gone' as const, message: 'the command closed the connection before the answer was passed on' } }),
  });
}

