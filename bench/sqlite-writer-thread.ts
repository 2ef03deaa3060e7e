import { parentPort, workerData, Worker } from 'node:worker_threads';
import { sqliteWriter, type PageWriter, type Reading } from './raw-writers.ts';

/**
 * The overlapped SQLite baseline's writer: a worker thread with its own connection and prepared statement, so the
 * main thread fetches page n+1 while page n is written. Pages arrive by postMessage (structured clone of the parsed
 * nodes: what a minimal script does) and are acknowledged after their COMMIT.
 */

interface ThreadData {
  path: string;
  customerId: string;
}

if (parentPort && (workerData as { sqliteWriterThread?: ThreadData } | undefined)?.sqliteWriterThread) {
  const { path, customerId } = (workerData as { sqliteWriterThread: ThreadData }).sqliteWriterThread;
  const port = parentPort;
  const writer = sqliteWriter(path, customerId);
  port.on('message', (nodes: Reading[] | null) => {
    if (nodes === null) {
      void writer.close().then(() => port.postMessage('closed'));
      return;
    }
    writer.write(nodes);
    port.postMessage('ok');
  });
}

/** A PageWriter whose writes run on a worker thread; one write in flight at a time. */
export function threadWriter(path: string, customerId: string): PageWriter {
  const worker = new Worker(new URL(import.meta.url), { workerData: { sqliteWriterThread: { path, customerId } } });
  let waiting: { resolve: () => void; reject: (e: unknown) => void } | undefined;
  let failure: unknown;
  worker.on('message', () => {
    const w = waiting;
    waiting = undefined;
    w?.resolve();
  });
  worker.on('error', (error) => {
    failure = error;
    waiting?.reject(error);
    waiting = undefined;
  });
  const ask = (message: Reading[] | null) =>
    new Promise<void>((resolve, reject) => {
      if (failure) return reject(failure);
      waiting = { resolve, reject };
      worker.postMessage(message);
    });
  return {
    write: (nodes) => ask(nodes),
    close: async () => {
      await ask(null);
      await worker.terminate();
    },
  };
}
