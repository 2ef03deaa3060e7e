import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { request } from 'undici';
import { Gate, parseLimits, type LimitStats, type ReplayLimits, type Verdict } from './replay-limits.ts';

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
 *
 * `PUT /__replay/limits` sets latency and limits (bench/replay-limits.ts) for the requests that follow and resets
 * their counters, so one server serves both the runs at zero cost and the runs against a platform far away.
 */

export const AUTH_PATH = '/api/v1/auth';
export const QUERY_PATH = '/api/external/query';
export const STATS_PATH = '/__replay/stats';
export const LIMITS_PATH = '/__replay/limits';
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
  /** The limits in force and what they saw since they were set (PUT /__replay/limits). */
  limits: ReplayLimits;
  limited: LimitStats & {
    /** Queries answered with their recorded page (200). */
    pages: number;
  };
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

/** The windows a backfill of the plan reads (src/sync/run/plan.ts planBackfill: a grid of step aligned on from). */
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

export interface ServeOptions {
  host?: string;
  /** How an answer waits out the latency (tests hold answers back with it). Default: a timer. */
  wait?: (ms: number) => Promise<unknown>;
}

export async function serveReplay(recording: Recording, options: ServeOptions = {}): Promise<ReplayServer> {
  const { answers } = recording;
  const host = options.host ?? '127.0.0.1';
  const wait = options.wait ?? ((ms: number) => sleep(ms));
  const stats = { hits: 0, misses: 0, missed: [] as string[], rowsServed: 0 };
  let gate = new Gate();
  let pages = 0;
  const cpuAtStart = process.cpuUsage();
  const snapshot = (): ReplayStats => {
    const cpu = process.cpuUsage(cpuAtStart);
    return { ...stats, missed: [...stats.missed], cpuUs: cpu.user + cpu.system, limits: gate.limits, limited: { ...gate.stats(), pages } };
  };
  const sendJsonBody = (res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}) => {
    const body = JSON.stringify(value);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers });
    res.end(body);
  };

  const answer = (res: ServerResponse, key: string) => {
    const found = answers.get(key);
    if (!found) {
      stats.misses++;
      if (stats.missed.length < 5) stats.missed.push(key);
      sendJsonBody(res, 500, { error: 'REPLAY_MISS', message: `not recorded: ${key}` });
      return false;
    }
    stats.hits++;
    stats.rowsServed += found.rows;
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': found.gz.length });
    res.end(found.gz);
    return true;
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (req.method === 'GET' && path === STATS_PATH) return sendJsonBody(res, 200, snapshot());
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: Record<string, unknown> | undefined;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      } catch {
        body = undefined;
      }
      if (path === LIMITS_PATH && req.method === 'PUT') {
        try {
          gate = new Gate(parseLimits(body));
          pages = 0;
          return sendJsonBody(res, 200, gate.limits);
        } catch (error) {
          return sendJsonBody(res, 400, { error: 'BAD_LIMITS', message: (error as Error).message });
        }
      }
      const key = body ? replayKey(path, body) : `unparsable body for ${path}`;
      // Decided on arrival, against the limits in force then; the answer leaves after the latency.
      const admitted = gate;
      let verdict: Verdict | undefined;
      if (path === QUERY_PATH) verdict = admitted.admit(performance.now());
      else if (path === AUTH_PATH) admitted.token();
      const respond = () => {
        try {
          if (verdict === 'in-flight' || verdict === 'rate') {
            const why = verdict === 'in-flight' ? `more than ${admitted.limits.maxInFlight} queries in flight` : `more than ${admitted.limits.perSecond} queries per second`;
            sendJsonBody(res, 429, { errors: [{ message: `replay: ${why}`, extensions: { code: 'RATE_LIMITED' } }] }, { 'retry-after': String(admitted.retryAfterSeconds) });
          } else if (answer(res, key) && verdict === 'accepted' && admitted === gate) {
            pages++;
          }
        } finally {
          if (verdict) admitted.done(verdict);
        }
      };
      const { latencyMs } = admitted.limits;
      if (latencyMs > 0) void wait(latencyMs).then(respond);
      else respond();
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

/** Sets the latency and limits of the requests that follow (and resets their counters). */
export async function setLimits(url: string, limits: ReplayLimits): Promise<void> {
  const res = await request(`${url}${LIMITS_PATH}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(limits) });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`replay server: PUT ${LIMITS_PATH}: HTTP ${res.statusCode} ${text}`);
}
