import type { SinkName, SinkRecords } from '../store/types.ts';
import { atPath, type AnyStream } from './stream.ts';

/** What the engine needs from the API client (src/api): one GraphQL request, abortable. */
export interface GraphQLRequester {
  request<T = unknown>(document: any, variables?: Record<string, unknown>, options?: { signal?: AbortSignal }): Promise<T>;
}

export interface FetchedPage<S extends SinkName = SinkName> {
  records: Array<SinkRecords[S]>;
  /** Nodes in the response (before collapsing equal keys). */
  nodes: number;
  hasNextPage: boolean;
  endCursor: string | null;
}

/** Rows with equal keys in one page collapse to the last one: an upsert cannot touch one row twice (Postgres). */
export function dedupeByKey<R>(records: R[], keyFields: ReadonlyArray<string>): R[] {
  if (records.length < 2) return records;
  const byKey = new Map<string, R>();
  for (const record of records) {
    const key = JSON.stringify(keyFields.map((f) => (record as Record<string, unknown>)[f]));
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
  return { records, nodes: nodes.length, hasNextPage, endCursor };
}
