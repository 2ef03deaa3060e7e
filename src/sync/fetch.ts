import type { SinkName, SinkRecords } from '../store/types.ts';
import { atPath, type AnyStream } from './stream.ts';

/** What the engine needs from the API client (src/api): one GraphQL request, abortable. */
export interface GraphQLRequester {
  request<T = unknown>(document: any, variables?: Record<string, unknown>, options?: { signal?: AbortSignal }): Promise<T>;
  /** The platform's time from its latest answer (epoch ms), when known: caps the watermark (see windows.ts). */
  serverTime?(): number | undefined;
}

export interface FetchedPage<S extends SinkName = SinkName> {
  records: Array<SinkRecords[S]>;
  /** Nodes in the response (before collapsing equal keys). */
  nodes: number;
  hasNextPage: boolean;
  endCursor: string | null;
  /**
   * The platform's time when it answered this page (client.serverTime() right after the answer), if known. Kept
   * with the page because the next page is fetched while this one commits.
   */
  serverTime?: number;
}

/** Rows with equal keys in one page collapse to the last one: an upsert cannot touch one row twice (Postgres). */
export function dedupeByKey<R>(records: R[], keyFields: ReadonlyArray<string>): R[] {
  if (records.length < 2) return records;
  const byKey = new Map<string, R>();
  for (const record of records) {
    // Concatenation, not JSON.stringify of an array (this runs for every row). Strings go in as they are, anything
    // else JSON-encoded behind a \u0001 mark so 1 and "1" stay distinct; \u0000 separates the fields.
    let key = '';
    for (const field of keyFields) {
      const value = (record as Record<string, unknown>)[field];
      key += (typeof value === 'string' ? value : `\u0001${JSON.stringify(value)}`) + '\u0000';
    }
    byKey.delete(key);
    byKey.set(key, record);
  }
  return byKey.size === records.length ? records : [...byKey.values()];
}

/** One request of a stream, mapped to sink records. Paging variables are added for relay streams. */
export async function fetchPage(input: {
  stream: AnyStream;
  client: GraphQLRequester;
  document: unknown;
  variables: Record<string, unknown>;
  pageSize: number;
  cursor: string | null;
  signal: AbortSignal;
}): Promise<FetchedPage> {
  const { stream, paging } = { stream: input.stream, paging: input.stream.paging };
  const variables =
    paging.style === 'relay'
      ? { ...input.variables, [paging.pageSizeVar]: input.pageSize, [paging.cursorVar]: input.cursor ?? null }
      : input.variables;
  const data = await input.client.request<unknown>(input.document, variables, { signal: input.signal });
  const serverTime = input.client.serverTime?.();

  let nodes: unknown;
  let hasNextPage = false;
  let endCursor: string | null = null;
  if (paging.style === 'single') {
    nodes = atPath(data, paging.path, stream.name);
  } else {
    const connection = atPath(data, paging.connection, stream.name) as Record<string, unknown> | null;
    nodes = connection?.nodes;
    const pageInfo = connection?.pageInfo as { hasNextPage?: unknown; endCursor?: unknown } | undefined;
    hasNextPage = pageInfo?.hasNextPage === true;
    endCursor = typeof pageInfo?.endCursor === 'string' ? pageInfo.endCursor : null;
    if (hasNextPage && (!endCursor || endCursor === input.cursor)) {
      // Following it would loop forever or skip rows; stop with the run failed and the checkpoint intact.
      throw new TypeError(
        `stream ${stream.name}: the API reported hasNextPage without a new endCursor (after ${JSON.stringify(input.cursor)})`,
      );
    }
  }
  if (!Array.isArray(nodes)) throw new TypeError(`stream ${stream.name}: expected a list of nodes in the response`);
  const records = dedupeByKey(
    nodes.map((node): SinkRecords[SinkName] => stream.map(node)),
    stream.keyFields as ReadonlyArray<string>,
  );
  return { records, nodes: nodes.length, hasNextPage, endCursor, ...(serverTime !== undefined && { serverTime }) };
}
