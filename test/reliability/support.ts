import { connect } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { waitFor } from '../support/wait.ts';

/**
 * A full garbage collection, without starting the worker with --expose-gc: the flag is set at run time and `gc`
 * fetched from a fresh context, where V8 installs it.
 */
export function forceGc(): void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  gc();
}

/** Sends headers and the first half of a body, then hangs up: a sender that dies mid-upload. */
export async function sendTruncated(url: string, headers: Record<string, string>, body: Buffer, whileReading: () => boolean): Promise<void> {
  const target = new URL(url);
  const socket = connect(Number(target.port), target.hostname);
  socket.on('error', () => {});
  await new Promise((resolve) => socket.once('connect', resolve));
  const head = [`POST ${target.pathname} HTTP/1.1`, `Host: ${target.host}`, `Content-Length: ${body.length}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  socket.write(`${head.join('\r\n')}\r\n\r\n`);
  socket.write(body.subarray(0, Math.floor(body.length / 2)));
  // Hang up only once the receiver is reading the body, so every truncated upload reaches the handler.
  await waitFor(whileReading, 'the receiver to read the truncated body', 10_000, { everyMs: 0 });
  socket.destroy();
}
