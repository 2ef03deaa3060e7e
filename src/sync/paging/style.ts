import type { YamlPath, YamlSource } from '../definition-yaml.ts';
import type { RecordsPath } from './answer.ts';

/**
 * A paging style: how one kind of API hands out a listing page by page (Airbyte's declarative paginators, the Singer
 * SDK's `BaseAPIPaginator`). Each style is one module in this folder holding everything about it: its keys in a
 * definitions file, the variables it sets and what they carry, how it reads an answer and the types of what it reads
 * there, and what progress means for it (the page contract in src/sync/contract.ts asks the style). The loader,
 * `check` (src/app/check-fit.ts), the probe and the refused-request messages (src/sync/fetch.ts) read all of it from
 * the style object and name no style. A new API shape is one new file and its line in ./index.ts.
 */

/** What a paging variable is for: the names in a definitions file's `paging.variables` (`pageSize`, `cursor`...). */
export type PagingRole = string;

/** What a paging variable carries, as the loader, `check` and a refused request's message need to know it. */
export interface VariableRole {
  /** The GraphQL type of its value: an Int, or text (String, ID). */
  readonly type: 'Int' | 'text';
  /** What it carries, for messages: `page size` (`needs the variable that carries the page size`). */
  readonly carries: string;
  /** The same with its article: `a page size`. */
  readonly a: string;
  /** What to check when the platform refuses a request naming the variable. */
  readonly fix: string;
}

/** The page size: every style that asks for a number of records per page sends it in this role. */
export const PAGE_SIZE_ROLE: VariableRole = {
  type: 'Int',
  carries: 'page size',
  a: 'a page size',
  fix: 'set `paging.maxPageSize` (the most the API answers) or `paging.pageSize` for the stream in the definitions file, or lower SYNC_PAGE_SIZE',
};

/** What a style reads in an answer to page on: any of `paths` (alternatives; the document must select one), typed. */
export interface PagingRead {
  readonly paths: ReadonlyArray<readonly string[]>;
  /** The GraphQL type the value has: a Boolean, an Int, or text (String, ID). */
  readonly holds: 'Boolean' | 'Int' | 'text';
}

/** The page to read: its checkpoint text (null: the window's first page) and the records asked for. */
export interface PageAt {
  /** Where the page starts, as the style keeps it: the platform's cursor or token, or our offset or page number. */
  position: string | null;
  pageSize: number;
}

/** One answer as the style read it: the records (before validation) and the checkpoint of the next page. */
export interface PageRead {
  nodes: unknown[];
  /** The checkpoint of the next page (the platform's cursor or token, or our offset or page number); null: done. */
  next: string | null;
}

export interface PagingStyle {
  /** The style's name in a definitions file (`relay-nodes`): its module's `name`. */
  readonly style: string;
  /** The GraphQL variables the style sets, by role. */
  readonly variableNames: Readonly<Partial<Record<PagingRole, string>>>;
  /** What each role of the style carries (every role it may set, whether this stream names a variable for it or not). */
  readonly roles: Readonly<Record<PagingRole, VariableRole>>;
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
  /** The key of the paging map that says where the records are (`records`, `connection`), for a located error. */
  readonly recordsKey: string;
  /** The answer paths (from `data`) the style reads the records from as lists, outermost first. */
  readonly lists: ReadonlyArray<readonly string[]>;
  /** The paging information the style reads: the document must select each entry, one of its alternative paths at least. */
  readonly reads: ReadonlyArray<PagingRead>;
  /** The paging variables of the request for `at`. */
  variables(at: PageAt): Record<string, unknown>;
  /** One answer's records and what follows, or the detail of a shape violation. */
  read(data: unknown, at: PageAt): PageRead | string;
  /** Why a stored checkpoint cannot be resumed by this style (the paging was changed mid-window), or undefined. */
  unresumable(position: string): string | undefined;
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

export interface StyleModule<N extends string = string> {
  /** The style's name in a definitions file, the word of its `style:` (its registry, ./index.ts, types it exactly). */
  name: N;
  /** Keys of the style's paging map besides `style` and `variables`, and which of them are required. */
  keys: readonly string[];
  required: readonly string[];
  /** The roles of `paging.variables` and what each carries (the parsed style carries them on). */
  roles: Readonly<Record<PagingRole, VariableRole>>;
  parse(input: PagingInput): PagingStyle | undefined;
}

/** Identity: keeps a module's `name` as its literal word, so the registry's union of names is exact. */
export function defineStyle<N extends string>(module: StyleModule<N>): StyleModule<N> {
  return module;
}

/** The lists a records path walks (`a.b[].c[].d`: `a.b`, `a.b.c`, `a.b.c.d`), outermost first. */
export function listsOf(records: RecordsPath): string[][] {
  const levels: string[][] = [[...records.path]];
  for (const step of records.each) levels.push([...levels.at(-1)!, ...step]);
  return levels;
}

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
