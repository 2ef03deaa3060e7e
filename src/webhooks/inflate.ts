import { constants, createGunzip, type Gunzip } from 'node:zlib';

/**
 * Inflating gzip bodies that are not yet authenticated, one step at a time on the main thread, into one output
 * buffer that every step reuses.
 *
 * Why not zlib's stream: it allocates a fresh output buffer for every chunk it produces, so a bomb's 16 MiB becomes
 * thousands of buffers that live until a garbage collection, and V8 collects them only after the process has grown
 * by tens of MiB; many bombs inflating at once, and the wire bytes of the rest of an attack, add up in the RSS
 * however small the live memory is. Here what an unauthenticated body inflates to exists only in the shared
 * buffer, for as long as the signature check takes to read it, whatever the number of bombs.
 *
 * Steps come from every body in turn (a queue, round robin), a bounded number per turn of the event loop: a bomb
 * cannot hold the loop, and a delivery sent without compression is read between the steps.
 */

/** Output of one step: zlib fills it, the sink reads it, the next step overwrites it. */
const STEP_OUTPUT_BYTES = 64 * 1024;
/** Output inflated per turn of the event loop before the queue yields to I/O. */
const TURN_OUTPUT_BYTES = 1024 * 1024;

/** The synchronous side of zlib's handle: what node's own `zlib.*Sync` functions call. */
interface ZlibHandle {
  writeSync(flush: number, input: Buffer, inOffset: number, inLength: number, output: Buffer, outOffset: number, outLength: number): void;
}

export interface InflateSink {
  /** Inflated bytes, valid only during the call (the buffer is reused). false: stop, the body was refused. */
  output(bytes: Buffer): boolean;
  /** Every byte written so far is inflated: the sender may send more. */
  drained(): void;
  /** The gzip stream ended well after `end()`. */
  ended(): void;
  /** zlib refused the stream (corrupt, or cut short at `end()`). */
  failed(error: Error): void;
}

/** One body's inflater: wire bytes queued, inflated by the queue's steps. */
export class GzipBody {
  readonly #gunzip: Gunzip;
  readonly #handle: ZlibHandle;
  readonly #state: Uint32Array;
  readonly #queue: InflateQueue;
  readonly #sink: InflateSink;
  readonly #input: Buffer[] = [];
  #inputOffset = 0;
  #ending = false;
  #more = false;
  #done = false;
  #error: Error | undefined;

  constructor(queue: InflateQueue, sink: InflateSink) {
    this.#queue = queue;
    this.#sink = sink;
    this.#gunzip = createGunzip();
    const internals = this.#gunzip as unknown as { _handle?: Partial<ZlibHandle>; _writeState?: unknown };
    if (typeof internals._handle?.writeSync !== 'function' || !(internals._writeState instanceof Uint32Array)) {
      this.#gunzip.destroy();
      throw new Error(`node:zlib of Node ${process.version} has no synchronous handle; the webhook receiver needs Node 22 or later`);
    }
    this.#handle = internals._handle as ZlibHandle;
    this.#state = internals._writeState;
    // zlib reports a corrupt stream by destroying the Gunzip (synchronously, inside writeSync) and emitting the error.
    this.#gunzip.on('error', (error) => (this.#error ??= error));
  }

  /** Whether wire bytes wait to be inflated (or zlib holds output it had no room for). */
  get pending(): boolean {
    return !this.#done && (this.#input.length > 0 || this.#ending || this.#more);
  }

  write(chunk: Buffer): void {
    if (this.#done) return;
    this.#input.push(chunk);
    this.#queue.add(this);
  }

  end(): void {
    if (this.#done) return;
    this.#ending = true;
    this.#queue.add(this);
  }

  /** Frees zlib's state; nothing more is inflated. */
  destroy(): void {
    this.#done = true;
    this.#input.length = 0;
    this.#gunzip.destroy();
  }

  /**
   * One step: at most `output.length` bytes inflated into `output` and handed to the sink. Returns the bytes
   * produced. The input is consumed as node's own zlib stream consumes it (its processCallback): a chunk is done
   * once zlib leaves output room, so trailing zero padding after the stream is ignored as there.
   */
  step(output: Buffer): number {
    if (!this.pending) return 0;
    const input = this.#input[0];
    const finishing = input === undefined && this.#ending;
    const inBuffer = input ?? EMPTY;
    const inLength = inBuffer.length - this.#inputOffset;
    this.#handle.writeSync(finishing ? constants.Z_FINISH : constants.Z_NO_FLUSH, inBuffer, this.#inputOffset, inLength, output, 0, output.length);
    if (this.#gunzip.destroyed) {
      this.#fail(this.#gunzip.errored ?? this.#error ?? new Error('corrupt gzip stream'));
      return 0;
    }
    const outLeft = this.#state[0]!;
    const inLeft = this.#state[1]!;
    const produced = output.length - outLeft;
    this.#more = outLeft === 0;
    if (input) {
      this.#inputOffset += inLength - inLeft;
      if (!this.#more || this.#inputOffset >= input.length) {
        this.#input.shift();
        this.#inputOffset = 0;
      }
    }
    if (produced > 0 && !this.#sink.output(output.subarray(0, produced))) {
      this.destroy();
      return produced;
    }
    if (this.#more || this.#done) return produced;
    if (finishing) {
      this.#done = true;
      this.#gunzip.destroy();
      this.#sink.ended();
    } else if (this.#input.length === 0) {
      this.#sink.drained();
    }
    return produced;
  }

  #fail(error: Error): void {
    this.destroy();
    this.#sink.failed(error);
  }
}

const EMPTY = Buffer.alloc(0);

/**
 * The bodies waiting to be inflated, each given one step in turn. One queue per receiver: it owns the one output
 * buffer.
 */
export class InflateQueue {
  readonly #output = Buffer.allocUnsafe(STEP_OUTPUT_BYTES);
  readonly #waiting = new Set<GzipBody>();
  #scheduled = false;

  /** Bodies with wire bytes not yet inflated. */
  get size(): number {
    return this.#waiting.size;
  }

  add(body: GzipBody): void {
    this.#waiting.add(body);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.#turn());
    }
  }

  #turn(): void {
    this.#scheduled = false;
    let produced = 0;
    while (produced < TURN_OUTPUT_BYTES && this.#waiting.size > 0) {
      for (const body of [...this.#waiting]) {
        // Leaves the set before its step, so that a body the step hands more input to (a sink that resumes the
        // request) comes back at the end of the round.
        this.#waiting.delete(body);
        produced += body.step(this.#output);
        if (body.pending) this.#waiting.add(body);
        if (produced >= TURN_OUTPUT_BYTES) break;
      }
    }
    if (this.#waiting.size > 0 && !this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.#turn());
    }
  }
}
