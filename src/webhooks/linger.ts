import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

/**
 * A lingering close (nginx's lingering_close), for a request answered before its body was read to the end.
 *
 * Closing a socket whose receive buffer still holds unread bytes makes the kernel send a reset instead of a FIN,
 * and the reset discards what the sender had not yet read: a client that writes its whole body before reading the
 * answer (most do) sees a broken pipe or a reset instead of our 413 or 503. So the answer is sent, the sending side
 * is closed (FIN), and the rest of the body is read and thrown away, for a bounded number of bytes and time, before
 * the connection is closed: once the body has ended, and at the latest when a bound is reached.
 *
 * What it costs is bounded: nothing is kept (the bytes are dropped as they arrive), the connection counts against
 * WEBHOOK_MAX_CONNECTIONS meanwhile, at most `maxBytes` are read and at most `maxMs` pass. A body declared longer
 * than what is left of `maxBytes` is not waited for: the connection closes at once, as before.
 */
export interface LingerLimits {
  /** Bytes of the body read and dropped at most. */
  maxBytes: number;
  /** Time the connection may linger at most, from the answer. */
  maxMs: number;
}

/** Lingering, by default: the time nginx's lingering_timeout gives a silent sender. */
export const DEFAULT_LINGER_MS = 5_000;
/** The bytes a lingering connection reads and drops, by default: this many times WEBHOOK_MAX_BODY_BYTES. */
export const LINGER_BODY_MULTIPLE = 4;

/**
 * Arranges the lingering close of `req`'s connection; call it before the answer is sent, which must carry
 * `Connection: close`. Returns false (and does nothing) when the body is declared longer than the linger would read:
 * then the connection is closed once the answer is out, as node does by itself. `onClosed`: called once the
 * lingering connection is closed, whichever way.
 */
export function lingerAfterAnswer(req: IncomingMessage, limits: LingerLimits, onClosed: () => void = () => {}): boolean {
  const socket = req.socket as Socket & { destroySoon?: () => void };
  if (req.complete || socket.destroyed) return false;
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limits.maxBytes) return false;
  let read = 0;
  let closed = false;
  let answered = false;
  // A FIN queued behind the answer: destroyed once both are out, never before (that would cut the answer).
  const destroyWhenFlushed = () => {
    if (socket.writableFinished || socket.destroyed) socket.destroy();
    else socket.once('finish', () => socket.destroy());
  };
  const close = () => {
    if (closed) return;
    closed = true;
    clearTimeout(timer);
    req.off('data', drop);
    if (answered) destroyWhenFlushed();
  };
  const drop = (chunk: Buffer) => {
    read += chunk.length;
    if (read > limits.maxBytes) {
      // More than the linger reads: closed at once, whatever the sender then sees.
      closed = true;
      clearTimeout(timer);
      socket.destroy();
    }
  };
  const timer = setTimeout(close, limits.maxMs);
  timer.unref();
  // Taking the body's data ourselves keeps node from reading it as a keep-alive connection would (req._dump), and
  // the listener counts it.
  req.on('data', drop);
  req.once('end', close);
  socket.once('close', () => {
    closed = true;
    clearTimeout(timer);
    onClosed();
  });
  req.resume();
  // node:http ends a `Connection: close` response with destroySoon(): a FIN, then the socket destroyed as soon as
  // the FIN is out, the body's unread bytes with it. Here the FIN goes out and the socket waits for the body's end.
  socket.destroySoon = function lingeringDestroySoon(this: Socket) {
    answered = true;
    if (this.writable) this.end();
    if (closed) destroyWhenFlushed();
  };
  return true;
}
