import { gunzipSync } from 'node:zlib';
import { request } from 'undici';
import type { Reading } from './raw-writers.ts';

/**
 * The minimal client's network side, the one a developer would write by hand: authenticate once, then page the
 * occupancy query over the same windows with the same page size and the same variables as the engine
 * (`{from, to, first, after}`, `after: null` on a window's first page), with undici's `request` (keep-alive),
 * `Accept-Encoding: gzip`, gunzipSync, JSON.parse. No validation; no retries but a 429's `Retry-After`, waited out.
 *
 * Erasable TypeScript only: the steady-state benchmark runs it with plain `node` (type stripping), without tsx.
 */

/** What a client reads, and from where. */
export interface ReadJob {
  url: string;
  apiKey: string;
  apiSecret: string;
  /** Epoch ms: [from, to) in windows of stepMs aligned on from, pages of pageSize. */
  from: number;
  to: number;
  stepMs: number;
  pageSize: number;
}

export interface Page {
  nodes: Reading[];
  /** The variables of the next request, or undefined after the last page of the last window. */
  next: Record<string, unknown> | undefined;
}

const QUERY =
  'query Occupancy($from: DateTime!, $to: DateTime!, $first: Int, $after: String) { occupancy(from: $from, to: $to, first: $first, after: $after) ' +
  '{ nodes { id floorSpaceId occupancyStatus headcount created } pageInfo { hasNextPage endCursor } } }';

async function postJson(url: string, body: unknown, headers: Record<string, string>): Promise<unknown> {
  for (;;) {
    const res = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', 'accept-encoding': 'gzip', ...headers },
      body: JSON.stringify(body),
    });
    const raw = Buffer.from(await res.body.arrayBuffer());
    const text = res.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
    // A 429 is waited out as it asks (the latency benchmark's limits); anything else but 200 ends the run.
    const retryAfter = Number(res.headers['retry-after']);
    if (res.statusCode === 429 && Number.isFinite(retryAfter)) {
      await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000));
      continue;
    }
    if (res.statusCode !== 200) throw new Error(`POST ${url}: HTTP ${res.statusCode} ${text.toString('utf8').slice(0, 300)}`);
    return JSON.parse(text.toString('utf8'));
  }
}

function windowVariables(job: ReadJob, from: number): Record<string, unknown> | undefined {
  if (from >= job.to) return undefined;
  return { from: new Date(from).toISOString(), to: new Date(Math.min(from + job.stepMs, job.to)).toISOString(), first: job.pageSize, after: null };
}

export class MinimalClient {
  readonly job: ReadJob;
  #headers: Record<string, string> | undefined;

  constructor(job: ReadJob) {
    this.job = job;
  }

  async authenticate(): Promise<void> {
    const auth = (await postJson(`${this.job.url}/api/v1/auth`, { ApiKey: this.job.apiKey, ApiSecret: this.job.apiSecret }, {})) as { idToken: string };
    this.#headers = { authorization: `Bearer ${auth.idToken}` };
  }

  first(): Record<string, unknown> | undefined {
    return windowVariables(this.job, this.job.from);
  }

  async page(variables: Record<string, unknown>): Promise<Page> {
    const json = (await postJson(`${this.job.url}/api/external/query`, { query: QUERY, operationName: 'Occupancy', variables }, this.#headers!)) as {
      data: { occupancy: { nodes: Reading[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } };
    };
    const { nodes, pageInfo } = json.data.occupancy;
    const next = pageInfo.hasNextPage
      ? { ...variables, after: pageInfo.endCursor }
      : windowVariables(this.job, Date.parse(variables.to as string));
    return { nodes, next };
  }
}

/** One page at a time: fetch, write (awaited), fetch the next. */
export async function readSequential(job: ReadJob, write: (nodes: Reading[]) => void | Promise<void>): Promise<void> {
  const client = new MinimalClient(job);
  await client.authenticate();
  for (let vars = client.first(); vars; ) {
    const page = await client.page(vars);
    await write(page.nodes);
    vars = page.next;
  }
}

/** The fetch of page n+1 overlaps the write of page n; writes stay in order, one at a time. */
export async function readOverlapped(job: ReadJob, write: (nodes: Reading[]) => Promise<void>): Promise<void> {
  const client = new MinimalClient(job);
  await client.authenticate();
  const first = client.first();
  let pending = first ? client.page(first) : undefined;
  let writing: Promise<void> = Promise.resolve();
  while (pending) {
    const page = await pending;
    pending = page.next ? client.page(page.next) : undefined;
    await writing;
    writing = write(page.nodes);
  }
  await writing;
}

/**
 * `inFlight` windows at once (issue 25's reachability check of the floor): each window paged in order, a window
 * started as soon as one finishes; pages are written one at a time in the order they arrive, while fetching goes on.
 */
export async function readParallel(job: ReadJob, inFlight: number, write: (nodes: Reading[]) => void | Promise<void>): Promise<void> {
  const client = new MinimalClient(job);
  await client.authenticate();
  const windows: Array<Record<string, unknown>> = [];
  for (let v = client.first(); v; v = windowVariables(job, Date.parse(v.to as string))) windows.push(v);
  let next = 0;
  let writing: Promise<void> = Promise.resolve();
  const worker = async (): Promise<void> => {
    while (next < windows.length) {
      const first = windows[next++]!;
      for (let vars: Record<string, unknown> | undefined = first; vars; ) {
        const page = await client.page(vars);
        writing = writing.then(() => write(page.nodes));
        // The page's `next` is the following window's first page after a window's last: that window is another's.
        vars = page.next && page.next.from === first.from ? page.next : undefined;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, inFlight) }, worker));
  await writing;
}

