import { API_VARIANT_INFO, type ApiVariant, type GroundTruthObservation } from '../../src/sandbox/index.ts';
import { gql } from './helpers.ts';

/**
 * Raw GraphQL clients of each API variant's occupancy query (plain HTTP, not occupancy-sync's client or engine), each
 * paging a whole window the way the variant's documentation says and turning its records back into v1's canonical
 * form, so a test compares them with `sandbox.truth`. Every reader checks the variant's formats as it goes: a record
 * in another format fails the test instead of being converted silently.
 */

export interface Canonical {
  id: string;
  floorSpaceId: string;
  occupancyStatus: string;
  headcount: number | null;
  created: string;
}

export interface Read {
  records: Canonical[];
  /** Requests made. */
  pages: number;
}

export const canonical = (o: GroundTruthObservation): Canonical => ({
  id: o.id,
  floorSpaceId: o.floorSpaceId,
  occupancyStatus: o.occupancyStatus,
  headcount: o.headcount,
  created: o.created,
});

/** The canonical status a variant's spelling stands for; a spelling the variant does not use fails. */
export function unspell(variant: ApiVariant, spelled: unknown): string {
  const entry = Object.entries(API_VARIANT_INFO[variant].statuses).find(([, s]) => s === spelled);
  if (!entry) throw new Error(`${variant}: status ${JSON.stringify(spelled)} is none of ${JSON.stringify(API_VARIANT_INFO[variant].statuses)}`);
  return entry[0];
}

async function data(url: string, token: string, query: string, operationName: string, variables: Record<string, unknown>): Promise<any> {
  const res = await gql(url, token, { query, operationName, variables }, { 'Accept-Encoding': 'gzip' });
  if (res.status !== 200 || res.json?.errors) throw new Error(`${operationName} failed: ${res.status} ${res.text}`);
  return res.json.data;
}

/** A loop bound: no test window holds anywhere near this many pages. */
const MAX_PAGES = 10_000;

export const EDGES_QUERY = `query Events($filter: OccupancyFilter!, $first: Int!, $after: String) {
  occupancyEvents(filter: $filter, first: $first, after: $after) {
    edges { cursor node { id floorSpace { id } status headcount observedAt } }
    pageInfo { hasNextPage endCursor }
  }
}`;

export async function readEdges(url: string, token: string, observedFrom: string, observedBefore: string, first: number): Promise<Read> {
  const records: Canonical[] = [];
  let after: string | null = null;
  for (let pages = 1; pages <= MAX_PAGES; pages++) {
    const page: any = (await data(url, token, EDGES_QUERY, 'Events', { filter: { observedFrom, observedBefore }, first, after })).occupancyEvents;
    for (const { cursor, node } of page.edges) {
      if (typeof cursor !== 'string' || !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$/.test(node.observedAt)) {
        throw new Error(`edges: bad edge ${JSON.stringify({ cursor, node })}`);
      }
      records.push({
        id: node.id,
        floorSpaceId: node.floorSpace.id,
        occupancyStatus: unspell('edges', node.status),
        headcount: node.headcount,
        created: new Date(Date.parse(node.observedAt)).toISOString(),
      });
    }
    if (page.pageInfo.endCursor !== (page.edges.at(-1)?.cursor ?? null)) throw new Error('edges: endCursor is not the last edge cursor');
    if (!page.pageInfo.hasNextPage) return { records, pages };
    after = page.pageInfo.endCursor;
  }
  throw new Error('edges: paging did not end');
}

export const TOKEN_QUERY = `query Readings($startTime: Int!, $endTime: Int!, $limit: Int, $nextToken: String) {
  listOccupancyReadings(startTime: $startTime, endTime: $endTime, limit: $limit, nextToken: $nextToken) {
    items { id floorSpaceId status headcount timestamp }
    nextToken
  }
}`;

/** startTime and endTime in epoch seconds, both inclusive. */
export async function readToken(url: string, token: string, startTime: number, endTime: number, limit?: number): Promise<Read & { lastPageSize: number }> {
  const records: Canonical[] = [];
  let nextToken: string | null = null;
  for (let pages = 1; pages <= MAX_PAGES; pages++) {
    const page: any = (await data(url, token, TOKEN_QUERY, 'Readings', { startTime, endTime, limit, nextToken })).listOccupancyReadings;
    for (const item of page.items) {
      if (typeof item.timestamp !== 'number' || !Number.isSafeInteger(item.timestamp)) throw new Error(`token: timestamp ${JSON.stringify(item.timestamp)} is not epoch ms`);
      records.push({ id: item.id, floorSpaceId: item.floorSpaceId, occupancyStatus: unspell('token', item.status), headcount: item.headcount, created: new Date(item.timestamp).toISOString() });
    }
    if (page.nextToken == null) return { records, pages, lastPageSize: page.items.length };
    nextToken = page.nextToken;
  }
  throw new Error('token: paging did not end');
}

export const PAGES_QUERY = `query Page($from: String!, $to: String!, $page: Int!, $pageSize: Int!) {
  occupancyPage(from: $from, to: $to, page: $page, pageSize: $pageSize) {
    totalCount totalPages page pageSize
    readings { id floorSpaceId status headcount recordedAt }
  }
}`;

/** from and to in epoch ms, [from, to). Pages until a short page, checking totalCount and totalPages on the way. */
export async function readPages(url: string, token: string, fromMs: number, toMs: number, pageSize: number): Promise<Read & { totalCount: number }> {
  const records: Canonical[] = [];
  let totalCount = -1;
  for (let page = 1; page <= MAX_PAGES; page++) {
    const answer = (await data(url, token, PAGES_QUERY, 'Page', { from: String(fromMs), to: String(toMs), page, pageSize })).occupancyPage;
    if (answer.page !== page || answer.pageSize !== pageSize || answer.totalPages !== Math.ceil(answer.totalCount / pageSize)) {
      throw new Error(`pages: inconsistent page ${JSON.stringify({ ...answer, readings: answer.readings.length })}`);
    }
    if (totalCount >= 0 && answer.totalCount !== totalCount) throw new Error('pages: totalCount changed while paging');
    totalCount = answer.totalCount;
    for (const r of answer.readings) {
      if (typeof r.recordedAt !== 'string' || !/^\d+$/.test(r.recordedAt)) throw new Error(`pages: recordedAt ${JSON.stringify(r.recordedAt)} is not epoch ms digits`);
      records.push({ id: r.id, floorSpaceId: r.floorSpaceId, occupancyStatus: unspell('pages', r.status), headcount: r.headcount, created: new Date(Number(r.recordedAt)).toISOString() });
    }
    if (answer.readings.length < pageSize) return { records, pages: page, totalCount };
  }
  throw new Error('pages: paging did not end');
}

export const V2_QUERY = `query Readings($since: DateTime!, $until: DateTime!, $limit: Int!, $offset: Int) {
  floorSpaceReadings(since: $since, until: $until, limit: $limit, offset: $offset) {
    buildingId
    floorSpaces { floorSpaceId readings { id status people observedAt } }
  }
}`;

export async function readV2(url: string, token: string, since: string, until: string, limit: number): Promise<Read> {
  const records: Canonical[] = [];
  for (let pages = 1; pages <= MAX_PAGES; pages++) {
    const groups = (await data(url, token, V2_QUERY, 'Readings', { since, until, limit, offset: records.length })).floorSpaceReadings;
    const before = records.length;
    for (const b of groups) {
      for (const f of b.floorSpaces) {
        for (const r of f.readings) {
          if (typeof r.observedAt !== 'string' || !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+02:00$/.test(r.observedAt)) throw new Error(`v2: observedAt ${JSON.stringify(r.observedAt)} is not ISO at +02:00`);
          records.push({ id: r.id, floorSpaceId: f.floorSpaceId, occupancyStatus: unspell('v2', r.status), headcount: r.people, created: new Date(Date.parse(r.observedAt)).toISOString() });
        }
      }
    }
    if (records.length - before < limit) return { records: sortCanonical(records), pages };
  }
  throw new Error('v2: paging did not end');
}

/** v2 groups a page by building and floor space; (created, id) order is restored across the whole read. */
function sortCanonical(records: Canonical[]): Canonical[] {
  return records.sort((a, b) => (a.created < b.created ? -1 : a.created > b.created ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

export const CAPPED_QUERY = `query Readings($from: DateTime!, $to: DateTime!) {
  occupancyReadings(from: $from, to: $to) { id floorSpaceId occupancyStatus headcount created }
}`;

export async function readCapped(url: string, token: string, from: string, to: string): Promise<Read> {
  const rows = (await data(url, token, CAPPED_QUERY, 'Readings', { from, to })).occupancyReadings as Array<Omit<Canonical, 'created'> & { created: unknown }>;
  return { records: rows.map((r) => ({ ...r, occupancyStatus: unspell('capped', r.occupancyStatus), created: cappedTime(r.created) })), pages: 1 };
}

/** capped's `created`: epoch seconds, a JSON number (whole: readings lie on ticks). */
export function cappedTime(value: unknown): string {
  if (!Number.isInteger(value)) throw new Error(`capped: created ${JSON.stringify(value)} is not whole epoch seconds`);
  return new Date((value as number) * 1000).toISOString();
}

export const PRESENCE_QUERY = `query Presence($from: DateTime!, $to: DateTime!, $first: Int, $after: String) {
  presence(from: $from, to: $to, first: $first, after: $after) {
    nodes { id spaceId occupied observedAt }
    pageInfo { hasNextPage endCursor }
  }
}`;

/** presence: Relay nodes over [from, to); `occupied` a Boolean, no headcount (read back as null). */
export async function readPresence(url: string, token: string, from: string, to: string, first: number): Promise<Read> {
  const records: Canonical[] = [];
  let after: string | null = null;
  for (let pages = 1; pages <= MAX_PAGES; pages++) {
    const page: any = (await data(url, token, PRESENCE_QUERY, 'Presence', { from, to, first, after })).presence;
    for (const n of page.nodes) {
      if (typeof n.occupied !== 'boolean' || 'headcount' in n) throw new Error(`presence: bad node ${JSON.stringify(n)}`);
      records.push({ id: n.id, floorSpaceId: n.spaceId, occupancyStatus: unspell('presence', String(n.occupied)), headcount: null, created: n.observedAt });
    }
    if (!page.pageInfo.hasNextPage) return { records, pages };
    after = page.pageInfo.endCursor;
  }
  throw new Error('presence: paging did not end');
}

export const CHANGE_QUERY = `query Changes($from: DateTime!, $to: DateTime!, $limit: Int, $cursor: String) {
  statusChanges(from: $from, to: $to, limit: $limit, cursor: $cursor) {
    changes { id floorSpaceId status headcount changedAt }
    nextCursor
  }
}`;

/** change: events over [from, to), a list + nextCursor; a null cursor ends. */
export async function readChange(url: string, token: string, from: string, to: string, limit: number): Promise<Read> {
  const records: Canonical[] = [];
  let cursor: string | null = null;
  for (let pages = 1; pages <= MAX_PAGES; pages++) {
    const page: any = (await data(url, token, CHANGE_QUERY, 'Changes', { from, to, limit, cursor })).statusChanges;
    for (const c of page.changes) {
      records.push({ id: c.id, floorSpaceId: c.floorSpaceId, occupancyStatus: unspell('change', c.status), headcount: c.headcount, created: c.changedAt });
    }
    if (page.nextCursor == null) return { records, pages };
    cursor = page.nextCursor;
  }
  throw new Error('change: paging did not end');
}

export const PER_SPACE_QUERY = `query SpaceReadings($floorSpaceId: ID!, $from: DateTime!, $to: DateTime!, $first: Int, $after: String) {
  floorSpaceOccupancy(floorSpaceId: $floorSpaceId, from: $from, to: $to, first: $first, after: $after) {
    nodes { id occupancyStatus headcount created }
    pageInfo { hasNextPage endCursor }
  }
}`;

/** per-space: the floor space listing, then each space's readings page by page (they do not name their space). */
export async function readPerSpace(url: string, token: string, from: string, to: string, first: number): Promise<Read> {
  const spaces = (await data(url, token, 'query S { floorSpaces { id buildingId name capacity } }', 'S', {})).floorSpaces as Array<{ id: string }>;
  const records: Canonical[] = [];
  let pages = 1;
  for (const space of spaces) {
    let after: string | null = null;
    for (let n = 1; ; n++) {
      if (n > MAX_PAGES) throw new Error('per-space: paging did not end');
      pages += 1;
      const page: any = (await data(url, token, PER_SPACE_QUERY, 'SpaceReadings', { floorSpaceId: space.id, from, to, first, after })).floorSpaceOccupancy;
      for (const r of page.nodes) {
        if ('floorSpaceId' in r) throw new Error('per-space: a reading names its space');
        records.push({ id: r.id, floorSpaceId: space.id, occupancyStatus: unspell('per-space', r.occupancyStatus), headcount: r.headcount, created: r.created });
      }
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
  }
  return { records: sortCanonical(records), pages };
}
