import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { request } from 'undici';
import type { SyncJob } from './sync-job.ts';

/**
 * The raw baseline's network side: the minimal client a developer would write by hand. It authenticates once, then
 * pages the same occupancy query over the same windows with the same page size as the engine, one request at a
 * time: undici, Accept-Encoding gzip, gunzip, JSON.parse. No retries, no validation, no overlap.
 */

export interface RawNode {
  id: string;
  floorSpaceId: string;
  occupancyStatus: string;
  headcount: number;
  created: string;
}

const QUERY = readFileSync(new URL('../jobs/occupancy.graphql', import.meta.url), 'utf8');

async function postJson(url: string, body: unknown, headers: Record<string, string>): Promise<unknown> {
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', 'accept-encoding': 'gzip', ...headers },
    body: JSON.stringify(body),
  });
  const raw = Buffer.from(await res.body.arrayBuffer());
  const text = res.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
  if (res.statusCode !== 200) throw new Error(`POST ${url}: HTTP ${res.statusCode} ${text.toString('utf8').slice(0, 200)}`);
  return JSON.parse(text.toString('utf8'));
}

/** Calls `write` once per page, in order, and awaits it before fetching the next page. */
export async function fetchAllPages(job: SyncJob, write: (nodes: RawNode[]) => void | Promise<void>): Promise<void> {
  const auth = (await postJson(`${job.sandbox.url}/api/v1/auth`, { ApiKey: job.sandbox.apiKey, ApiSecret: job.sandbox.apiSecret }, {})) as {
    idToken: string;
  };
  const headers = { authorization: `Bearer ${auth.idToken}` };
  for (let from = job.from; from < job.to; from += job.stepMs) {
    const window = { from: new Date(from).toISOString(), to: new Date(Math.min(from + job.stepMs, job.to)).toISOString() };
    let after: string | null = null;
    for (;;) {
      const json = (await postJson(
        `${job.sandbox.url}/api/external/query`,
        { query: QUERY, operationName: 'Occupancy', variables: { ...window, first: job.pageSize, after } },
        headers,
      )) as { data: { occupancy: { nodes: RawNode[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } } };
      const { nodes, pageInfo } = json.data.occupancy;
      await write(nodes);
      if (!pageInfo.hasNextPage) break;
      after = pageInfo.endCursor;
    }
  }
}
