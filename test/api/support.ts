import { parseDocumentSource } from '../../src/api/documents.ts';

/** Documents the client tests send (inline, so they do not depend on the sync helper's jobs/ files). */
export const BUILDINGS = parseDocumentSource(
  'query Buildings($nameLike: String) { buildings(nameLike: $nameLike) { id name } }',
  'test/buildings.graphql',
);
export const SEND_TEST_EVENT = parseDocumentSource(
  'mutation SendTestEvent($id: ID!) { sendTestEvent(webhookId: $id) }',
  'test/send-test-event.graphql',
);

/** An injectable sleep that records every wait asked for and returns at once. */
export function recordingSleep(): { sleep: (ms: number, signal?: AbortSignal) => Promise<void>; delays: number[] } {
  const delays: number[] = [];
  return {
    delays,
    sleep: async (ms, signal) => {
      signal?.throwIfAborted();
      delays.push(ms);
    },
  };
}

/** Runs `count` tasks with at most `concurrency` in flight; `task(i)` is called in index order. */
export async function runPool<T>(count: number, concurrency: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      results[i] = await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return results;
}
