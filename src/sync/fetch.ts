import { ContractViolation, GraphQLResponseError } from '../errors.ts';
import { namesArgument } from '../api/graphql-errors.ts';
import type { SinkName, SinkRecords } from '../store/types.ts';
import type { ProcessedPage, PageContract } from './contract.ts';
import type { AnyStream } from './stream.ts';

/** What the engine needs from the API client (src/api): one GraphQL request, abortable. */
export interface GraphQLRequester {
  request<T = unknown>(document: any, variables?: Record<string, unknown>, options?: { signal?: AbortSignal }): Promise<T>;
  /** The platform's time from its latest answer (epoch ms), when known: caps the watermark (see run/plan.ts). */
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
 * One request of a stream: the stream's variables with its paging style's over them, the answer read by the style and
 * checked against the page contract by the window's `contract` (which throws ContractViolation) before anything of it
 * can be committed.
 */
export async function fetchPage(input: {
  stream: AnyStream;
  client: GraphQLRequester;
  document: unknown;
  variables: Record<string, unknown>;
  pageSize: number;
  position: string | null;
  signal: AbortSignal;
  contract: PageContract<any>;
  now: () => number;
}): Promise<FetchedPage> {
  const style = input.stream.paging;
  const at = { position: input.position, pageSize: input.pageSize };
  if (input.position !== null) {
    const unresumable = style.unresumable(input.position);
    if (unresumable) throw new ContractViolation('shape', unresumable, 'resuming a window', { fix: 'reset the stream\'s state (`occupancy-sync state reset --stream ' + input.stream.name + ' --yes`) after changing its paging' });
  }
  const variables = { ...input.variables, ...style.variables(at) };
  let data: unknown;
  try {
    data = await input.client.request<unknown>(input.document, variables, { signal: input.signal });
  } catch (error) {
    throw error instanceof GraphQLResponseError ? refused(input.stream, variables, error) : error;
  }
  const serverTime = input.client.serverTime?.();
  const localTime = input.now();
  const page = input.contract.accept(style.read(data, at), input.pageSize);
  return { ...page, localTime, ...(serverTime !== undefined && { serverTime }) } as FetchedPage;
}

/**
 * The platform refused the request: when its message names a variable the stream sent, the error says which, with
 * what value, and what to change; the platform's own words stay in the message.
 */
function refused(stream: AnyStream, variables: Record<string, unknown>, error: GraphQLResponseError): GraphQLResponseError {
  const text = error.errors.map((e) => e.message).join(' ');
  // A variable counts as named when the message is about it ("$first", "argument first"), not when its name merely
  // stands in a dump of the request's values.
  const named = Object.keys(variables).filter((name) => namesArgument(text, new Set([name])) !== undefined);
  const names = stream.paging.variableNames;
  const role = Object.keys(names).find((r) => named.includes(names[r]!));
  const limit = /between \d+ and (\d+)|(?:at most|maximum(?: of)?|max(?:imum)?|<=|not exceed|up to)\s*(\d+)/i.exec(text);
  const shown = named.map((n) => `$${n} = ${JSON.stringify(variables[n])?.slice(0, 60)}`).join(', ');
  const head = `stream ${stream.name}: the API refused the request${shown ? ` (${shown})` : ''}: ${cutAtWord(text, 300)}`;
  const wrapped = new GraphQLResponseError(error.operationName, error.errors, { cause: error });
  // An answer that already says how to fix it (a replay, a proxy of ours) is not given a second, guessed fix.
  wrapped.message = /\bFix:/.test(text) ? head : `${head}. Fix: ${fixFor(stream, role, named, limit)}`;
  return wrapped;
}

function fixFor(stream: AnyStream, role: string | undefined, named: string[], limit: RegExpExecArray | null): string {
  if (role === 'pageSize' && limit) return `set \`paging.maxPageSize: ${limit[1] ?? limit[2]}\` for stream ${stream.name} in the definitions file`;
  if (role) return stream.paging.roles[role]!.fix;
  if (named.length) return `check the stream's variables in the definitions file (their values, and for window bounds their format: docs/api-assumptions.md, "Window bounds")`;
  return 'compare the stream\'s document with the schema (`occupancy-sync check`, `occupancy-sync schema`)';
}

/** At most `max` characters, cut at a word's end and marked, so a long message never ends in half a word. */
function cutAtWord(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return `${space > max / 2 ? cut.slice(0, space) : cut}…`;
}
