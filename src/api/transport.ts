import { Pool } from './undici-pool.ts';
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { abortError } from './abort.ts';
import { ApiTransportError, type FailureReason } from './failure.ts';

/**
 * One HTTP exchange with the platform: POST a JSON body over a keep-alive pool, read the whole answer (gunzipped in
 * one piece on the thread pool), and turn every way this can fail into an ApiTransportError with a reason the retry
 * policy understands. Status codes are left to the caller, which knows which endpoint it talked to.
 */

export interface HttpResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** The decoded (decompressed) body. */
  body: Buffer;
}

export interface TransportOptions {
  baseUrl: string;
  /** Whole-exchange limit per attempt: connect, send, and read the full body. */
  timeoutMs: number;
  /** Upper bound on sockets to the platform. */
  connections?: number;
  /** A larger (decompressed) body is refused; protects against a runaway or hostile gzip stream. */
  maxBodyBytes?: number;
}

export interface Transport {
  post(path: string, payload: unknown, headers: Record<string, string>, signal?: AbortSignal): Promise<HttpResponse>;
  close(): Promise<void>;
}

const DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024;

const gunzipBuffer = promisify(gunzip);
/**
 * The piece the gunzip writes its output in: each piece is a callback on the event loop, so the size the gzip trailer
 * states (ISIZE: the last member's, modulo 4 GiB) makes an answer one piece. Bounded both ways: a hostile or
 * multi-member trailer only costs more pieces or a larger first buffer, never more than 4 MiB (nor than the limit
 * allows) at once. A gunzip of the answers as a stream, in zlib's 16 KiB pieces, cost the main thread several times
 * as much (docs/performance.md, "An answer gunzipped in one piece").
 */
export function gunzipPieceBytes(wire: Buffer, maxBytes: number): number {
  const stated = wire.length >= 18 ? wire.readUInt32LE(wire.length - 4) : 0;
  return Math.min(Math.max(stated + 1, 16 * 1024), 4 * 1024 * 1024, Math.max(maxBytes + 1, 64));
}

/**
 * The largest gzip stream whose content can still fit `maxBytes`: zlib's bound on deflate's output (compressBound:
 * 5 bytes per 16 KiB of input, plus 13), the gzip header and trailer (18), and room for a file name or a comment. A
 * larger compressed answer is refused before it is inflated.
 */
export function maxGzipBytes(maxBytes: number): number {
  return maxBytes + 5 * Math.ceil(maxBytes / 16_384) + 1024;
}

const CONNECT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);
const CONNECT_WORDS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name could not be resolved right now',
  EHOSTUNREACH: 'no route to the host',
  ENETUNREACH: 'the network is unreachable',
  UND_ERR_CONNECT_TIMEOUT: 'no answer to the connection attempt',
};
const TLS_CODES = new Set([
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_NOT_YET_VALID',
]);

function errorCode(error: unknown): string | undefined {
  for (let e: unknown = error; e && typeof e === 'object'; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

export function createTransport(options: TransportOptions): Transport {
  const base = new URL(options.baseUrl);
  const prefix = base.pathname.replace(/\/+$/, '');
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const pool = new Pool(base.origin, {
    connections: options.connections ?? 32,
    keepAliveTimeout: 30_000,
    // Our own AbortSignal.timeout covers the whole exchange; undici's idle timers would only duplicate it.
    headersTimeout: 0,
    bodyTimeout: 0,
  });

  async function post(path: string, payload: unknown, headers: Record<string, string>, signal?: AbortSignal): Promise<HttpResponse> {
    signal?.throwIfAborted();
    const timeout = AbortSignal.timeout(options.timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    const fail = (reason: FailureReason, what: string, error: unknown): never => {
      if (signal?.aborted) throw abortError(signal);
      if (timeout.aborted) {
        throw new ApiTransportError(
          'timeout',
          `POST ${base.origin}${prefix}${path}: no complete answer within ${options.timeoutMs} ms (HTTP_TIMEOUT). Fix: check the network to API_BASE_URL, or raise HTTP_TIMEOUT`,
          { cause: error },
        );
      }
      const code = errorCode(error);
      if (code && TLS_CODES.has(code)) {
        // A certificate the platform's address does not prove is not fixed by asking again.
        throw new ApiTransportError(
          'client_error',
          `cannot reach the platform at ${base.origin} (API_BASE_URL): its TLS certificate was refused (${code}). ` +
            'Fix: check API_BASE_URL (the host must match its certificate), or give Node the CA with NODE_EXTRA_CA_CERTS',
          { cause: error, retryable: false },
        );
      }
      if (code && CONNECT_CODES.has(code)) {
        throw new ApiTransportError(
          'connect',
          `cannot reach the platform at ${base.origin} (API_BASE_URL): ${CONNECT_WORDS[code] ?? 'the connection failed'} (${code}). ` +
            'Fix: check API_BASE_URL and that this host can reach it (DNS, firewall, proxy)',
          { cause: error },
        );
      }
      const kind: FailureReason = code && TIMEOUT_CODES.has(code) ? 'timeout' : reason;
      throw new ApiTransportError(kind, `POST ${base.origin}${prefix}${path}: ${what} (${code ?? (error as Error)?.message ?? 'error'})`, { cause: error });
    };

    let response;
    try {
      response = await pool.request({
        path: prefix + path,
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify(payload),
        signal: combined,
      });
    } catch (error) {
      return fail('network', 'the request failed', error);
    }
    const encoding = String(response.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
    try {
      const body = await readBody(response.body, encoding, maxBodyBytes, combined);
      return { status: response.statusCode, headers: response.headers, body };
    } catch (error) {
      if (error instanceof ApiTransportError) {
        // undici's body errors with "Request aborted" when destroyed unread; nobody reads it any more.
        response.body.on('error', () => undefined).destroy();
        throw new ApiTransportError(error.reason, `POST ${path}: ${error.message}`, { status: response.statusCode, retryable: error.retryable, cause: error.cause });
      }
      const compressed = encoding === 'gzip' || encoding === 'x-gzip';
      return fail(
        compressed ? 'corrupt_body' : 'network',
        compressed ? `the gzip body of the HTTP ${response.statusCode} answer was truncated or corrupt` : `the body of the HTTP ${response.statusCode} answer was cut off`,
        error,
      );
    }
  }

  return { post, close: () => pool.close() };
}

/** The whole body of an answer, decoded; exported for bench/gunzip.ts. */
export async function readBody(body: Readable, encoding: string, maxBytes: number, signal: AbortSignal): Promise<Buffer> {
  if (encoding !== 'gzip' && encoding !== 'x-gzip' && encoding !== 'identity' && encoding !== '') {
    throw new ApiTransportError('client_error', `the answer uses Content-Encoding ${JSON.stringify(encoding.slice(0, 40))}, but only gzip was accepted`, {
      retryable: false,
    });
  }
  const gzipped = encoding === 'gzip' || encoding === 'x-gzip';
  // Permanent: the same answer would be as large the next time.
  const tooLarge = () => new ApiTransportError('client_error', `the answer is larger than ${maxBytes} bytes once decompressed; refusing it`, { retryable: false });
  const wireLimit = gzipped ? maxGzipBytes(maxBytes) : maxBytes;
  const chunks: Buffer[] = [];
  let size = 0;
  // Kept aside: the pipeline reports its own abort error when the collector stops it, not the collector's reason.
  let refused: ApiTransportError | undefined;
  const collect = async (source: AsyncIterable<Buffer>): Promise<void> => {
    for await (const chunk of source) {
      size += chunk.length;
      if (size > wireLimit) throw (refused = tooLarge());
      chunks.push(chunk);
    }
  };
  try {
    await pipeline(body, collect, { signal });
  } catch (error) {
    throw refused ?? error;
  }
  const wire = Buffer.concat(chunks, size);
  if (!gzipped) return wire;
  try {
    // maxOutputLength stops the inflate at the limit: a small hostile stream is never inflated past it.
    return await gunzipBuffer(wire, { maxOutputLength: maxBytes, chunkSize: gunzipPieceBytes(wire, maxBytes) });
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge();
    throw error;
  }
}
