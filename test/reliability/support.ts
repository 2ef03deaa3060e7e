import { connect } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { join } from 'node:path';
import { openStore } from '../../src/store/index.ts';
import type { Store } from '../../src/store/types.ts';
import { tempDir } from '../helpers/tmp.ts';

/** A migrated SQLite store in a private directory. */
export async function sqliteStore(label: string): Promise<{ store: Store; path: string; dir: string; cleanup(): Promise<void> }> {
  const tmp = tempDir(`reliability-${label}-`);
  const path = join(tmp.dir, `${label}.db`);
  const store = await openStore({ url: `file:${path}`, dialect: 'sqlite', sqlitePath: path });
  await store.migrate();
  return {
    store,
    path,
    dir: tmp.dir,
    async cleanup() {
      await store.close().catch(() => {});
      tmp.remove();
    },
  };
}

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
  while (!whileReading()) await new Promise((resolve) => setImmediate(resolve));
  socket.destroy();
}

/** Runs `task` over `items` with at most `limit` in flight. */
export async function pooled<T>(items: Iterable<T>, limit: number, task: (item: T) => Promise<void>): Promise<void> {
  const iterator = items[Symbol.iterator]();
  const worker = async () => {
    for (let next = iterator.next(); !next.done; next = iterator.next()) await task(next.value);
  };
  await Promise.all(Array.from({ length: limit }, worker));
}
