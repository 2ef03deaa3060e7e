import type { SinkName, SinkRecords } from '../store/types.ts';
import {
  flattenNested,
  offsetOf,
  readConnectionPage,
  readListPage,
  readOffsetPage,
  type ProcessedPage,
  type RawPage,
  type WindowPaging,
} from './contract.ts';
import type { AnyStream, Paging } from './stream.ts';

/** What the engine needs from the API client (src/api): one GraphQL request, abortable. */
export interface GraphQLRequester {
  request<T = unknown>(document: any, variables?: Record<string, unknown>, options?: { signal?: AbortSignal }): Promise<T>;
  /** The platform's time from its latest answer (epoch ms), when known: caps the watermark (see windows.ts). */
  serverTime?(): number | undefined;
  /**
   * The customer the credentials belong to, when the platform says (a token claim), else undefined. The engine
   * compares it with the configured customer once, before the first write.
   */
  customerOf?(options?: { signal?: AbortSignal }): Promise<string | undefined>;
}

export interface FetchedPage<S extends SinkName = SinkName> extends ProcessedPage<SinkRecords[S]> {
  /** The platform's time when it answered this page (its `Date` header), if known. */
  serverTime?: number;
  /** The local clock when the answer arrived, to judge the skew between the two. */
  localTime: number;
}

/**
 * One request of a stream, checked against the page contract by the window's `paging` (which throws
 * ContractViolation) before anything of it can be committed. Paging variables are added for relay streams.
 */
export async function fetchPage(input: {
  stream: AnyStream;
  client: GraphQLRequester;
  document: unknown;
  variables: Record<string, unknown>;
  pageSize: number;
  cursor: string | null;
  signal: AbortSignal;
  paging: WindowPaging<any>;
  now: () => number;
}): Promise<FetchedPage> {
  const { paging } = input.stream;
  const offset = paging.style === 'offset' ? offsetOf(input.cursor) : 0;
  const variables =
    paging.style === 'relay'
      ? { ...input.variables, [paging.pageSizeVar]: input.pageSize, [paging.cursorVar]: input.cursor ?? null }
      : paging.style === 'offset'
        ? { ...input.variables, [paging.limitVar]: input.pageSize, [paging.offsetVar]: offset }
        : input.variables;
  const data = await input.client.request<unknown>(input.document, variables, { signal: input.signal });
  const serverTime = input.client.serverTime?.();
  const localTime = input.now();
  const raw =
    paging.style === 'offset'
      ? readOffsetPage(data, paging.path, paging.each, offset, input.pageSize)
      : nested(paging.style === 'single' ? readListPage(data, paging.path) : readConnectionPage(data, paging.connection), paging);
  const page = input.paging.accept(raw);
  return { ...page, localTime, ...(serverTime !== undefined && { serverTime }) } as FetchedPage;
}

/** Records nested in lists of the page (declarative definitions), flattened; a page without `each` is unchanged. */
function nested(raw: RawPage | string, paging: Paging): RawPage | string {
  if (typeof raw === 'string' || !paging.each?.length) return raw;
  const where = `data.${(paging.style === 'relay' ? [...paging.connection, 'nodes'] : paging.path).join('.')}`;
  const nodes = flattenNested(raw.nodes, paging.each, where);
  return typeof nodes === 'string' ? nodes : { ...raw, nodes };
}
