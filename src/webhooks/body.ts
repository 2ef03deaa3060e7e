import type { IncomingMessage } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { GzipBody, type InflateQueue } from './inflate.ts';
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
 * What one live inflater holds, charged to the budget while it lives: zlib's inflate state and its window, the
 * Gunzip object and its handle (measured per inflater under a flood of stalled bombs: docs/webhooks.md), rounded up.
 */
export const INFLATER_BYTES = 128 * 1024;

/**
 * The memory all requests not yet authenticated may hold at once, whatever the number of connections: their wire
 * bytes and their inflaters. Beyond it a request is refused with 503 (transient: the platform retries it later), so
 * a flood of uploads that never authenticate cannot grow the process. Inflaters may take a quarter of it: a flood
 * of stalled gzip uploads must leave room for deliveries sent without compression. What they inflate to is never
 * held (inflate.ts), so the inflaters' own state is all they cost.
 */
export class PendingBudget {
  readonly limit: number;
  #used = 0;
  #inflaters = 0;

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

  /** Inflaters that fit in their share of the budget (a quarter of it, at least one). */
  get maxInflaters(): number {
    return Math.max(1, Math.floor(this.limit / 4 / INFLATER_BYTES));
  }

  /** Takes one inflater's bytes, within its share of the budget; false when they do not fit. */
  reserveInflater(): boolean {
    if (this.#inflaters >= this.maxInflaters) return false;
    if (!this.reserve(INFLATER_BYTES)) return false;
    this.#inflaters += 1;
    return true;
  }

  releaseInflater(): void {
    if (this.#inflaters === 0) return;
    this.#inflaters -= 1;
    this.release(INFLATER_BYTES);
  }
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
 * kept. Only the wire bytes are kept. The decompressed bytes go to `sink` (the signature verifiers) as they arrive
 * and are then dropped, so an unauthenticated body is never held decompressed. A gzip body is inflated as its bytes
 * arrive, by `inflate`'s steps (one shared output buffer, inflate.ts), counted against `maxDecompressedBytes`: a gzip
 * bomb is refused (413) as soon as it inflates past the limit (plus at most one step), however slowly the rest of it
 * would come, and a corrupt stream as soon as zlib sees it (400). The sender waits (the request is paused) while its
 * bytes are inflated. The budget is given back when this settles.
 */
export function readBody(
  req: IncomingMessage,
  encoding: ContentEncoding,
  limits: BodyLimits,
  budget: PendingBudget,
  inflate: InflateQueue,
  sink: (chunk: Buffer) => void,
): Promise<ReadBody> {
  if (encoding === 'gzip' && !budget.reserveInflater()) {
    return Promise.reject(new Refusal(503, 'busy', { wireBytes: 0, pendingBytes: budget.used, maxPendingBytes: budget.limit }));
  }
  return new Promise((resolve, reject) => {
    new BodyRead(req, limits, budget, sink, (error, body) => (error ? reject(error) : resolve(body!))).start(encoding === 'gzip' ? inflate : undefined);
  });
}

/** One body being read (readBody): its counts, its kept wire bytes, its inflater, and the request's listeners. */
class BodyRead {
  private wireBytes = 0;
  private inflatedBytes = 0;
  private reserved = 0;
  private readonly chunks: Buffer[] = [];
  private settled = false;
  private wireEnded = false;
  private gzip: GzipBody | undefined;

  constructor(
    private readonly req: IncomingMessage,
    private readonly limits: BodyLimits,
    private readonly budget: PendingBudget,
    private readonly sink: (chunk: Buffer) => void,
    private readonly settle: (error: Refusal | undefined, body?: ReadBody) => void,
  ) {}

  /** Listens to the request; `inflate` for a gzip body (its inflater is already reserved in the budget). */
  start(inflate: InflateQueue | undefined): void {
    if (inflate) this.gzip = this.inflater(inflate);
    this.req.on('data', this.onWire);
    this.req.on('end', this.onWireEnd);
    this.req.on('error', this.onWireError);
    this.req.on('aborted', this.onAborted);
    this.req.on('close', this.onClose);
  }

  private inflater(inflate: InflateQueue): GzipBody {
    return new GzipBody(inflate, {
      output: (bytes) => {
        this.inflatedBytes += bytes.length;
        if (this.inflatedBytes > this.limits.maxDecompressedBytes) {
          const { wireBytes, inflatedBytes } = this;
          this.finish(new Refusal(413, 'decompressed_too_large', { wireBytes, inflatedBytes, maxDecompressedBytes: this.limits.maxDecompressedBytes }));
          return false;
        }
        this.sink(bytes);
        return true;
      },
      drained: () => {
        if (!this.settled && !this.wireEnded) this.req.resume();
      },
      ended: () => this.finish(undefined),
      failed: (error) => this.finish(new Refusal(400, 'corrupt_gzip', { wireBytes: this.wireBytes, inflatedBytes: this.inflatedBytes }, { cause: error })),
    });
  }

  private finish(error: Refusal | undefined): void {
    if (this.settled) return;
    this.settled = true;
    const { req, budget } = this;
    req.off('data', this.onWire);
    req.off('end', this.onWireEnd);
    req.off('error', this.onWireError);
    req.off('aborted', this.onAborted);
    req.off('close', this.onClose);
    if (this.gzip) {
      this.gzip.destroy();
      budget.releaseInflater();
    }
    budget.release(this.reserved);
    if (error) {
      // Stop reading: the answer closes the connection (after a bounded lingering read, linger.ts).
      req.pause();
      this.chunks.length = 0;
      this.settle(error);
    } else {
      this.settle(undefined, { wire: Buffer.concat(this.chunks), wireBytes: this.wireBytes, bytes: this.gzip ? this.inflatedBytes : this.wireBytes });
    }
  }

  private readonly onWire = (chunk: Buffer): void => {
    const { limits, budget } = this;
    this.wireBytes += chunk.length;
    if (this.wireBytes > limits.maxBodyBytes) {
      this.finish(new Refusal(413, 'body_too_large', { wireBytes: this.wireBytes, maxBodyBytes: limits.maxBodyBytes }));
      return;
    }
    if (!budget.reserve(chunk.length)) {
      this.finish(new Refusal(503, 'busy', { wireBytes: this.wireBytes, pendingBytes: budget.used, maxPendingBytes: budget.limit }));
      return;
    }
    this.reserved += chunk.length;
    this.chunks.push(chunk);
    if (!this.gzip) {
      this.sink(chunk);
      return;
    }
    // Inflating is slower than the wire for a bomb: the sender waits until its bytes are inflated.
    this.req.pause();
    this.gzip.write(chunk);
  };

  private readonly onWireEnd = (): void => {
    this.wireEnded = true;
    // gzip: settled once the inflater reached the end of the stream (or found it cut short).
    if (this.gzip) this.gzip.end();
    else this.finish(undefined);
  };

  private readonly onWireError = (error: Error): void => this.finish(new Refusal(400, 'body_aborted', {}, { cause: error }));

  private readonly onAborted = (): void => this.finish(new Refusal(400, 'body_aborted', { wireBytes: this.wireBytes }));

  // The sender went away before the end of the body (whichever of 'aborted', 'error', 'close' node emits).
  private readonly onClose = (): void => {
    if (!this.wireEnded) this.onAborted();
  };
}

/** The decompressed body of an authenticated request (the wire bytes were inflated once already, within the limit). */
export function decompressed(body: ReadBody, encoding: ContentEncoding, limits: BodyLimits): Buffer {
  return encoding === 'gzip' ? gunzipSync(body.wire, { maxOutputLength: Math.max(1, limits.maxDecompressedBytes) }) : body.wire;
}
