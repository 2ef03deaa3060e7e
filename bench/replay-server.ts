import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { request } from 'undici';

/**
 * The replay server: the platform at (nearly) zero cost, so a sync measured against it is bound by the client and
 * the database, not by the server it reads from.
 *
 * Before anything is timed, `record` asks the sandbox every question both sides will ask (the token endpoint once,
 * then every page of every window, following the sandbox's own cursors), keeps each answer gzipped once, and
 * `serveReplay` then answers from memory: a Map lookup and one socket write per request, `Content-Encoding: gzip`,
 * keep-alive. GraphQL answers are keyed by operation name and variables (canonical JSON), never by the query text,
 * which may differ between our .graphql document and a baseline's. A request that was not recorded is a miss: it is
 * answered 500, counted, and the harness fails the benchmark, so a figure never includes a silent fallback.
 */

export const AUTH_PATH = '/api/v1/auth';
export const QUERY_PATH = '/api/external/query';
export const STATS_PATH = '/__replay/stats';
export const OPERATION = 'Occupancy';

/** What a client reads: [from, to) in windows of `stepMs` aligned on `from`, pages of `pageSize`. */
export interface ReplayPlan {
  from: number;
  to: number;
  stepMs: number;
  pageSize: number;
}

export interface Credentials {
  url: string;
  apiKey: string;
  apiSecret: string;
}

export interface ReplayStats {
  hits: number;
  misses: number;
  /** The first few keys that missed, for the error message. */
  missed: string[];
  /** Readings in the answers served (a hit counts its page's readings). */
  rowsServed: number;
  /** This process's CPU (user + system) since it started serving, in microseconds. */
  cpuUs: number;
}

interface Answer {
  gz: Buffer;
  rows: number;
}

/** JSON with sorted keys at every level: the same variables always give the same key. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

export function replayKey(path: string, body: { ApiKey?: unknown; operationName?: unknown; variables?: unknown }): string {
  if (path === AUTH_PATH) return `auth ${String(body.ApiKey)}`;
  if (path === QUERY_PATH) return `${String(body.operationName ?? '(anonymous)')} ${canonicalJson(body.variables ?? {})}`;
  return `path ${path}`;
}

/** The windows a backfill of the plan reads (src/sync/windows.ts planBackfill: a grid of step aligned on from). */
export function planWindows(plan: ReplayPlan): Array<{ from: string; to: string }> {
  const out: Array<{ from: string; to: string }> = [];
  for (let from = plan.from; from < plan.to; from += plan.stepMs) {
    out.push({ from: new Date(from).toISOString(), to: new Date(Math.min(from + plan.stepMs, plan.to)).toISOString() });
  }
  return out;
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Buffer> {
  // No Accept-Encoding: the sandbox answers plain JSON, and the recorder gzips each answer once itself.
  const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const raw = Buffer.from(await res.body.arrayBuffer());
  if (res.statusCode !== 200) throw new Error(`recording: POST ${url}: HTTP ${res.statusCode} ${raw.toString('utf8').slice(0, 300)}`);
  return raw;
}

export interface Recording {
  answers: Map<string, Answer>;
  rows: number;
  jsonBytes: number;
  gzBytes: number;
}

/** Asks the sandbox every question of `plans` and keeps the answers, gzipped once. */
export async function record(source: Credentials, plans: ReplayPlan[]): Promise<Recording> {
  const answers = new Map<string, Answer>();
  let rows = 0;
  let jsonBytes = 0;
  let gzBytes = 0;
  const keep = (key: string, json: Buffer, n: number) => {
    const gz = gzipSync(json);
    answers.set(key, { gz, rows: n });
    rows += n;
    jsonBytes += json.length;
    gzBytes += gz.length;
  };
  const authBody = { ApiKey: source.apiKey, ApiSecret: source.apiSecret };
  const auth = await post(`${source.url}${AUTH_PATH}`, authBody);
  keep(replayKey(AUTH_PATH, authBody), auth, 0);
  const headers = { authorization: `Bearer ${(JSON.parse(auth.toString('utf8')) as { idToken: string }).idToken}` };
  for (const plan of plans) {
    for (const window of planWindows(plan)) {
      let after: string | null = null;
      for (;;) {
        const variables: Record<string, unknown> = { ...window, first: plan.pageSize, after };
        const body = { query: OCCUPANCY_QUERY, operationName: OPERATION, variables };
        const json = await post(`${source.url}${QUERY_PATH}`, body, headers);
        const page = (JSON.parse(json.toString('utf8')) as { data: { occupancy: { nodes: unknown[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } } }).data
          .occupancy;
        const key = replayKey(QUERY_PATH, body);
        // Two plans may share windows (the steady-state window inside a backfill range): the same key, the same answer.
        if (!answers.has(key)) keep(key, json, page.nodes.length);
        if (!page.pageInfo.hasNextPage) break;
        after = page.pageInfo.endCursor;
      }
    }
  }
  return { answers, rows, jsonBytes, gzBytes };
}

/** The baselines' copy of jobs/occupancy.graphql's operation (the replay key ignores the text). */
export const OCCUPANCY_QUERY =
  'query Occupancy($from: DateTime!, $to: DateTime!, $first: Int, $after: String) { occupancy(from: $from, to: $to, first: $first, after: $after) ' +
  '{ nodes { id floorSpaceId occupancyStatus headcount created } pageInfo { hasNextPage endCursor } } }';

export interface ReplayServer {
  url: string;
  stats(): ReplayStats;
  close(): Promise<void>;
}

export async function serveReplay(recording: Recording, host = '127.0.0.1'): Promise<ReplayServer> {
  const { answers } = recording;
  const stats: ReplayStats = { hits: 0, misses: 0, missed: [], rowsServed: 0, cpuUs: 0 };
  const cpuAtStart = process.cpuUsage();
  const snapshot = (): ReplayStats => {
    const cpu = process.cpuUsage(cpuAtStart);
    return { ...stats, missed: [...stats.missed], cpuUs: cpu.user + cpu.system };
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (req.method === 'GET' && path === STATS_PATH) {
      const body = JSON.stringify(snapshot());
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let key: string;
      try {
        key = replayKey(path, JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>);
      } catch {
        key = `unparsable body for ${path}`;
      }
      const answer = answers.get(key);
      if (!answer) {
        stats.misses++;
        if (stats.missed.length < 5) stats.missed.push(key);
        const body = JSON.stringify({ error: 'REPLAY_MISS', message: `not recorded: ${key}` });
        res.writeHead(500, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
        return;
      }
      stats.hits++;
      stats.rowsServed += answer.rows;
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': answer.gz.length });
      res.end(answer.gz);
    });
  });
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    stats: snapshot,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The harness's view of a replay server in another process. */
export async function fetchStats(url: string): Promise<ReplayStats> {
  const res = await request(`${url}${STATS_PATH}`);
  return (await res.body.json()) as ReplayStats;
}
