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
