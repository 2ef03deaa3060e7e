import type { YamlPath, YamlSource } from '../definition-yaml.ts';
import type { RecordsPath } from './answer.ts';

/**
 * A paging style: how one kind of API hands out a listing page by page (Airbyte's declarative paginators, the Singer
 * SDK's `BaseAPIPaginator`). Each style is one module in this folder holding everything about it: its keys in a
 * definitions file, the variables it sets, how it reads an answer, and what progress means for it (the page contract
 * in src/sync/contract.ts asks the style). A new API shape is one new file and a line in ./index.ts.
 */

export const PAGING_STYLES = ['single', 'relay-nodes', 'relay-edges', 'token', 'offset', 'page-number'] as const;
export type PagingStyleName = (typeof PAGING_STYLES)[number];

/** What a paging variable is for: the names in a definitions file's `paging.variables`. */
export type PagingRole = 'pageSize' | 'cursor' | 'token' | 'offset' | 'page';

/** The page to read: its checkpoint text (null: the window's first page) and the records asked for. */
export interface PageAt {
  cursor: string | null;
  pageSize: number;
}

/** One answer as the style read it: the records (before validation) and the checkpoint of the next page. */
export interface PageRead {
  nodes: unknown[];
  /** The checkpoint of the next page (the platform's cursor or token, or our offset or page number); null: done. */
  next: string | null;
}

export interface PagingStyle {
  readonly style: PagingStyleName;
  /** The GraphQL variables the style sets, by role. */
  readonly variableNames: Readonly<Partial<Record<PagingRole, string>>>;
  /** Records per page this stream asks for; unset: SYNC_PAGE_SIZE (capped at maxPageSize). */
  readonly pageSize: number | undefined;
  /** The most records one answer may hold, as the API documents it. Single pages: the truncation guard's limit. */
  readonly maxPageSize: number | undefined;
  /** The platform hands out the cursors (relay, token): one returned twice in a window would page forever. */
  readonly serverCursors: boolean;
  /** False for a single page: an answer holding the declared maximum may have been cut, and nothing can ask for more. */
  readonly canAskForMore: boolean;
  /** Where the records are, for the check that the document selects them (and how deep `$parent` may go). */
  readonly records: RecordsPath;
  /**
   * The paging information the style reads (paths from `data`): the document must select each entry, one of its
   * alternative paths at least.
   */
  readonly reads: ReadonlyArray<ReadonlyArray<readonly string[]>>;
  /** The paging variables of the request for `at`. */
  variables(at: PageAt): Record<string, unknown>;
  /** One answer's records and what follows, or the detail of a shape violation. */
  read(data: unknown, at: PageAt): PageRead | string;
  /** Why a stored checkpoint cannot be resumed by this style (the paging was changed mid-window), or undefined. */
  unresumable(cursor: string): string | undefined;
}

/** Records the document must declare a variable the stream sends (definitions.ts checks it against the document). */
export type Need = (at: YamlPath, variable: string, role: string) => void;

/** What a style module gets to read its part of a definitions file; each problem goes to `src` with its position. */
export interface PagingInput {
  src: YamlSource;
  at: YamlPath;
  /** The paging map, its keys already checked against the style's. */
  p: Record<string, unknown>;
  /** The GraphQL variable playing `role` (from `paging.variables`), declared to the document check. */
  variable(role: PagingRole, required: boolean): string | undefined;
  /** A records path (`a.b[].c`) at `key`. */
  records(key: string): RecordsPath | undefined;
  /** An answer path (`a.b.c`, no lists) at `key`, when given (required: an error when not). */
  answerPath(key: string, required: boolean): string[] | undefined;
  /** A whole number at `key` from `min` up, when given. */
  count(key: string, min: number): number | undefined;
}

export interface StyleModule {
  name: PagingStyleName;
  /** Keys of the style's paging map besides `style` and `variables`, and which of them are required. */
  keys: readonly string[];
  required: readonly string[];
  /** The roles of `paging.variables`, and which are required. */
  roles: readonly PagingRole[];
  parse(input: PagingInput): PagingStyle | undefined;
}

/** Keys every style takes. */
export const SIZE_KEYS = ['pageSize', 'maxPageSize'] as const;

/** The records asked per page: the stream's own, else the global setting, never above the API's maximum. */
export function effectivePageSize(style: Pick<PagingStyle, 'pageSize' | 'maxPageSize'>, fallback: number): number {
  const wanted = style.pageSize ?? fallback;
  return style.maxPageSize === undefined ? wanted : Math.min(wanted, style.maxPageSize);
}

/** Checkpoints we make ourselves (offsets, page numbers) are digits; anything else came from another style. */
export function digitsOnly(what: string): (cursor: string) => string | undefined {
  return (cursor) =>
    /^\d{1,15}$/.test(cursor) ? undefined : `the stored page checkpoint ${JSON.stringify(cursor.slice(0, 40))} is not ${what} (was the stream's paging changed mid-window?)`;
}
