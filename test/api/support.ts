import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
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

export interface Seen {
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
}
export type Reply = (res: ServerResponse, seen: Seen) => void;

/** A reply with a JSON body (and any header, a Content-Type included, overridden). */
export const json = (status: number, body: unknown, headers: Record<string, string> = {}) => (res: ServerResponse): void => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

/** A reply with these exact bytes and headers (no Content-Type unless given). */
export const raw = (status: number, body: string | Buffer, headers: Record<string, string> = {}) => (res: ServerResponse): void => {
  res.writeHead(status, headers);
  res.end(body);
};

export const TOKEN = { idToken: 'opaque-token-0123456789', expiresIn: 900 };
export const DATA = { data: { buildings: [] } };

/**
 * A scripted platform: answers auth and query requests from queues (the last query reply repeats once the queue is
 * down to it, when `repeatLast`) and records what the client sent.
 */
export async function scripted(auth: Reply[], query: Reply[], options: { repeatLast?: boolean } = {}): Promise<{ url: string; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const entry = { path: req.url ?? '', headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString() || '{}') };
      seen.push(entry);
      const queue = req.url === '/api/v1/auth' ? auth : query;
      const reply = (options.repeatLast && queue.length === 1 ? queue[0] : queue.shift()) ?? json(500, { error: 'script exhausted' });
      reply(res, entry);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}
