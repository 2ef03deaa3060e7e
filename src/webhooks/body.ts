import type { IncomingMessage } from 'node:http';
import { createGunzip, gunzipSync } from 'node:zlib';
import { Refusal } from './refusal.ts';

export interface BodyLimits {
  /** Bytes accepted on the wire (compressed size when gzip). */
  maxBodyBytes: number;
  /** Bytes accepted after decompression. */
  maxDecompressedBytes: number;
}

export type ContentEncoding = 'identity' | 'gzip';

/** The encodings we can decode; anything else is refused (415) before a byte of the body is read. */
export function contentEncodingOf(req: IncomingMessage): ContentEncoding {
  const raw = req.headers['content-encoding'];
  const value = (raw ?? '').trim().toLowerCase();
  if (value === '' || value === 'identity') return 'identity';
  if (value === 'gzip' || value === 'x-gzip') return 'gzip';
  throw new Refusal(415, 'unsupported_encoding', { contentEncoding: value.slice(0, 32) });
}

/** A declared Content-Length over the limit is refused at once, without reading the body. */
export function checkDeclaredLength(req: IncomingMessage, limits: BodyLimits): void {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limits.maxBodyBytes) {
    throw new Refusal(413, 'body_too_large', { declaredBytes: Number(declared), maxBodyBytes: limits.maxBodyBytes });
  }
}

/**
 * The memory all requests not yet authenticated may hold at once, whatever the number of connections: their wire
 * bytes. Beyond it a request is refused with 503 (transient: the platform retries it later), so a flood of uploads
 * that never authenticate cannot grow the process.
 */
export class PendingBudget {
  readonly limit: number;
  #used = 0;

  constructor(limit: number) {
    this.limit = limit;
  }

  get used(): number {
    return this.#used;
  }

  /** Takes `bytes` from the budget; false (nothing taken) when they do not fit. */
  reserve(bytes: number): boolean {
    if (this.#used + bytes > this.limit) return false;
    this.#used += bytes;
    return true;
  }

  release(bytes: number): void {
    this.#used = Math.max(0, this.#used - bytes);
  }
}

/**
 * At most this many bodies are inflated at once. A zlib inflater holds about a quarter of a MiB (its 32 KiB window,
 * state and output buffers) for as long as it lives, so an inflater is only created once a body has arrived whole,
 * and only a few at a time: an upload that stalls half-way holds its wire bytes and nothing else.
 */
const MAX_INFLATING = 4;
let inflating = 0;
const inflateQueue: Array<() => void> = [];

async function inflateSlot(): Promise<() => void> {
  if (inflating >= MAX_INFLATING) await new Promise<void>((resolve) => inflateQueue.push(resolve));
  inflating += 1;
  return () => {
    inflating -= 1;
    inflateQueue.shift()?.();
  };
}

export interface ReadBody {
  /** The body as it came over the wire (gzip-compressed when the encoding says so): kept, bounded by maxBodyBytes. */
  wire: Buffer;
  wireBytes: number;
  /** Decompressed bytes (equal to wireBytes without compression). */
  bytes: number;
}

/**
 * Reads the request body while counting wire bytes against `maxBodyBytes`, each reserved in `budget` before it is
 * kept. Only the wire bytes are kept. The decompressed bytes go to `sink` (the signature verifiers) and are then
 * dropped, so an unauthenticated body is never held decompressed: without compression as they arrive; with gzip
 * once the whole body has arrived, inflated in a stream counted against `maxDecompressedBytes` (a gzip bomb stops
 * at the limit plus one zlib chunk). The budget is given back when this settles.
 */
export async function readBody(
  req: IncomingMessage,
  encoding: ContentEncoding,
  limits: BodyLimits,
  budget: PendingBudget,
  sink: (chunk: Buffer) => void,
): Promise<ReadBody> {
  let reserved = 0;
  try {
    const wire = await readWire(req, limits, budget, encoding === 'gzip' ? undefined : sink, (n) => (reserved += n));
    if (encoding !== 'gzip') return { wire, wireBytes: wire.length, bytes: wire.length };
    const release = await inflateSlot();
    try {
      return { wire, wireBytes: wire.length, bytes: await inflateInto(wire, limits, sink) };
    } finally {
      release();
    }
  } finally {
    budget.release(reserved);
  }
}

function readWire(
  req: IncomingMessage,
  limits: BodyLimits,
  budget: PendingBudget,
  sink: ((chunk: Buffer) => void) | undefined,
  reserved: (bytes: number) => void,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let wireBytes = 0;
    const chunks: Buffer[] = [];
    let settled = false;
    let wireEnded = false;

    const finish = (error: Refusal | undefined) => {
      if (settled) return;
      settled = true;
      req.off('data', onWire);
      req.off('end', onWireEnd);
      req.off('error', onWireError);
      req.off('aborted', onAborted);
      req.off('close', onClose);
      if (error) {
        // Stop reading: the response is sent with `Connection: close`, so the rest of the upload is never buffered.
        req.pause();
        chunks.length = 0;
        reject(error);
      } else {
        resolve(Buffer.concat(chunks));
      }
    };
    const onWire = (chunk: Buffer) => {
      wireBytes += chunk.length;
      if (wireBytes > limits.maxBodyBytes) {
        finish(new Refusal(413, 'body_too_large', { wireBytes, maxBodyBytes: limits.maxBodyBytes }));
        return;
      }
      if (!budget.reserve(chunk.length)) {
        finish(new Refusal(503, 'busy', { wireBytes, pendingBytes: budget.used, maxPendingBytes: budget.limit }));
        return;
      }
      reserved(chunk.length);
      chunks.push(chunk);
      sink?.(chunk);
    };
    const onWireEnd = () => {
      wireEnded = true;
      finish(undefined);
    };
    const onWireError = (error: Error) => finish(new Refusal(400, 'body_aborted', {}, { cause: error }));
    const onAborted = () => finish(new Refusal(400, 'body_aborted', { wireBytes }));
    // The sender went away before the end of the body (whichever of 'aborted', 'error', 'close' node emits).
    const onClose = () => {
      if (!wireEnded) onAborted();
    };
    req.on('data', onWire);
    req.on('end', onWireEnd);
    req.on('error', onWireError);
    req.on('aborted', onAborted);
    req.on('close', onClose);
  });
}

/** Inflates `wire` chunk by chunk into `sink`, stopping at the decompressed limit; resolves to the inflated size. */
function inflateInto(wire: Buffer, limits: BodyLimits, sink: (chunk: Buffer) => void): Promise<number> {
  return new Promise((resolve, reject) => {
    const gunzip = createGunzip();
    let inflatedBytes = 0;
    let settled = false;
    const finish = (error?: Refusal) => {
      if (settled) return;
      settled = true;
      gunzip.destroy();
      if (error) reject(error);
      else resolve(inflatedBytes);
    };
    gunzip.on('data', (chunk: Buffer) => {
      inflatedBytes += chunk.length;
      if (inflatedBytes > limits.maxDecompressedBytes) {
        finish(new Refusal(413, 'decompressed_too_large', { wireBytes: wire.length, inflatedBytes, maxDecompressedBytes: limits.maxDecompressedBytes }));
        return;
      }
      sink(chunk);
    });
    gunzip.on('end', () => finish());
    gunzip.on('error', (error) => finish(new Refusal(400, 'corrupt_gzip', { wireBytes: wire.length, inflatedBytes }, { cause: error })));
    gunzip.end(wire);
  });
}

/** The decompressed body of an authenticated request (the wire bytes were inflated once already, within the limit). */
export function decompressed(body: ReadBody, encoding: ContentEncoding, limits: BodyLimits): Buffer {
  return encoding === 'gzip' ? gunzipSync(body.wire, { maxOutputLength: Math.max(1, limits.maxDecompressedBytes) }) : body.wire;
}
