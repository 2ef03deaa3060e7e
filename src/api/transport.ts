import { Pool } from 'undici';
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { abortError } from './abort.ts';
import { ApiTransportError, type FailureReason } from './retry.ts';

/**
 * One HTTP exchange with the platform: POST a JSON body over a keep-alive pool, read the whole answer (gunzipping
 * it as a stream), and turn every way this can fail into an ApiTransportError with a reason the retry policy
 * understands. Status codes are left to the caller, which knows which endpoint it talked to.
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

const CONNECT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);

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
        throw new ApiTransportError('timeout', `POST ${path}: no complete answer within ${options.timeoutMs} ms`, { cause: error });
      }
      const code = errorCode(error);
      const kind: FailureReason = code && CONNECT_CODES.has(code) ? 'connect' : code && TIMEOUT_CODES.has(code) ? 'timeout' : reason;
      throw new ApiTransportError(kind, `POST ${path}: ${what} (${code ?? (error as Error)?.message ?? 'error'})`, { cause: error });
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
        response.body.destroy();
        throw error;
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

async function readBody(body: Readable, encoding: string, maxBytes: number, signal: AbortSignal): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  const collect = async (source: AsyncIterable<Buffer>): Promise<void> => {
    for await (const chunk of source) {
      size += chunk.length;
      if (size > maxBytes) {
        throw new ApiTransportError('corrupt_body', `the answer is larger than ${maxBytes} bytes once decompressed; refusing it`, {
          retryable: false,
        });
      }
      chunks.push(chunk);
    }
  };
  if (encoding === 'gzip' || encoding === 'x-gzip') {
    await pipeline(body, createGunzip(), collect, { signal });
  } else if (encoding === 'identity' || encoding === '') {
    await pipeline(body, collect, { signal });
  } else {
    throw new ApiTransportError('corrupt_body', `the answer uses Content-Encoding ${JSON.stringify(encoding)}, but only gzip was accepted`, {
      retryable: false,
    });
  }
  return Buffer.concat(chunks);
}

/**
 * Parses a JSON body. A 2xx answer that is not JSON is a cut-off or garbled response, hence retryable; `status`
 * is kept for the message.
 */
export function parseJsonBody(response: HttpResponse, path: string): unknown {
  try {
    return JSON.parse(response.body.toString('utf8'));
  } catch (error) {
    throw new ApiTransportError('invalid_json', `POST ${path}: the HTTP ${response.status} answer is not valid JSON`, {
      cause: error,
      status: response.status,
    });
  }
}
