import http from 'node:http';
import { gunzipSync } from 'node:zlib';
import type { AddressInfo } from 'node:net';
import type { SandboxKey } from '../../src/sandbox/index.ts';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** Bytes as received on the wire (not decompressed). */
  raw: Buffer;
  /** Decompressed when Content-Encoding was gzip. */
  text: string;
  json: any;
}

/** A plain node:http POST that does not decompress, so tests see exactly what the server sent. */
export function post(url: string, body: string | Buffer, headers: Record<string, string> = {}, timeoutMs = 10_000): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        const text = (res.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, raw, text, json });
      });
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error('client timeout')));
    req.on('error', reject);
    req.end(body);
  });
}

export async function authenticate(baseUrl: string, key: SandboxKey): Promise<string> {
  const res = await post(`${baseUrl}/api/v1/auth`, JSON.stringify({ ApiKey: key.key, ApiSecret: key.secret }));
  if (res.status !== 200) throw new Error(`auth failed: ${res.status} ${res.text}`);
  return res.json.idToken as string;
}

export function gql(
  baseUrl: string,
  token: string,
  body: { query: string; variables?: unknown; operationName?: string },
  headers: Record<string, string> = {},
): Promise<RawResponse> {
  return post(`${baseUrl}/api/external/query`, JSON.stringify(body), { Authorization: `Bearer ${token}`, ...headers });
}

export const OCCUPANCY_QUERY = `query Occupancy($from: DateTime!, $to: DateTime!, $first: Int, $after: String) {
  occupancy(from: $from, to: $to, first: $first, after: $after) {
    nodes { id floorSpaceId occupancyStatus headcount created }
    pageInfo { hasNextPage endCursor }
  }
}`;

export interface Node {
  id: string;
  floorSpaceId: string;
  occupancyStatus: string;
  headcount: number | null;
  created: string;
}

/** Pages through occupancy(from, to) until hasNextPage is false. */
export async function pageAll(baseUrl: string, token: string, from: string, to: string, first: number): Promise<{ nodes: Node[]; pages: number }> {
  const nodes: Node[] = [];
  let after: string | null = null;
  let pages = 0;
  for (;;) {
    const res = await gql(baseUrl, token, { query: OCCUPANCY_QUERY, operationName: 'Occupancy', variables: { from, to, first, after } });
    if (res.status !== 200 || res.json.errors) throw new Error(`page failed: ${res.status} ${res.text}`);
    pages++;
    const page = res.json.data.occupancy;
    nodes.push(...page.nodes);
    if (!page.pageInfo.hasNextPage) return { nodes, pages };
    after = page.pageInfo.endCursor;
  }
}

export interface Received {
  headers: http.IncomingHttpHeaders;
  raw: Buffer;
  /** Raw header names and values as sent (case preserved). */
  rawHeaders: string[];
}

/** A webhook receiver on port 0 that records requests and answers with the status `respond` picks (0: never answers). */
export async function startReceiver(respond: (n: number) => number = () => 200): Promise<{
  url: string;
  received: Received[];
  close(): Promise<void>;
}> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, raw: Buffer.concat(chunks), rawHeaders: req.rawHeaders });
      const status = respond(received.length);
      if (status > 0) res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/occupancy`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
