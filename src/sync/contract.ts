import { createHash } from 'node:crypto';
import { ContractViolation, type ContractRule } from '../errors.ts';
import type { IsoUtc } from '../time.ts';
import type { RecordValidator } from './records.ts';

/**
 * The page contract (docs/sync.md, "The page contract"): what every answer must satisfy before anything of it is
 * committed. Pure: no I/O, no clock. Checked per page, in the order pages are read:
 *
 * - shape: the connection is an object, `nodes` a list, `pageInfo` present, `hasNextPage` a boolean, and an
 *   `endCursor` whenever there is a next page;
 * - records: each node is validated against the stream's declaration; a node that breaks it is rejected (quarantined)
 *   unless the rejections are wholesale (the API changed) or the operator asked to fail on any;
 * - window: every valid record's cursor field lies inside the requested half-open window [from, to);
 * - progress: no endCursor seen before in this window, and never several pages in a row without a record not seen
 *   before in it; at most `maxPages` pages per window. No window can page forever.
 */

/** A page as the API described it, before any record is read. */
export interface RawPage {
  nodes: unknown[];
  hasNextPage: boolean;
  endCursor: string | null;
}

function describe(value: unknown): string {
  if (value === undefined) return 'missing';
  if (value === null) return 'null';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  if (typeof value === 'number' || typeof value === 'boolean') return `the ${typeof value} ${String(value)}`;
  return Array.isArray(value) ? 'an array' : 'an object';
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Follows `path` from `data`; the violation names the first step that is missing or not an object. */
function follow(data: unknown, path: readonly string[]): { value: unknown } | string {
  let value: unknown = data;
  let where = 'data';
  for (const key of path) {
    if (!isObject(value)) return `${where} is ${describe(value)}, expected an object`;
    value = value[key];
    where += `.${key}`;
  }
  return { value };
}

/** A list answered in one request (`single` paging). Returns the violation's detail when the shape is wrong. */
export function readListPage(data: unknown, path: readonly string[]): RawPage | string {
  const found = follow(data, path);
  if (typeof found === 'string') return found;
  if (!Array.isArray(found.value)) return `data.${path.join('.')} is ${describe(found.value)}, expected a list`;
  return { nodes: found.value, hasNextPage: false, endCursor: null };
}

/** A Relay-style connection (`relay` paging). Returns the violation's detail when the shape is wrong. */
export function readConnectionPage(data: unknown, path: readonly string[]): RawPage | string {
  const found = follow(data, path);
  if (typeof found === 'string') return found;
  const where = `data.${path.join('.')}`;
  const connection = found.value;
  if (!isObject(connection)) return `${where} is ${describe(connection)}, expected an object with nodes and pageInfo`;
  if (!Array.isArray(connection.nodes)) return `${where}.nodes is ${describe(connection.nodes)}, expected a list`;
  const pageInfo = connection.pageInfo;
  if (!isObject(pageInfo)) return `${where}.pageInfo is ${describe(pageInfo)}, expected { hasNextPage, endCursor }`;
  if (typeof pageInfo.hasNextPage !== 'boolean') {
    return `${where}.pageInfo.hasNextPage is ${describe(pageInfo.hasNextPage)}, expected a boolean`;
  }
  const endCursor = pageInfo.endCursor;
  if (pageInfo.hasNextPage && (typeof endCursor !== 'string' || endCursor.length === 0)) {
    return `${where}.pageInfo.hasNextPage is true but endCursor is ${describe(endCursor)}, so the next page cannot be asked for`;
  }
  return { nodes: connection.nodes, hasNextPage: pageInfo.hasNextPage, endCursor: typeof endCursor === 'string' ? endCursor : null };
}

/** A node that broke its declaration, as kept in the quarantine table. */
export interface RejectedRecord {
  /** Stable id of the raw node (SHA-256 of its JSON), so a node read again is one quarantine row. */
  fingerprint: string;
  /** The node as received, as JSON (cut at MAX_RAW_CHARS). */
  raw: string;
  reason: string;
}

export interface ProcessedPage<R> {
  /** Valid records, equal keys collapsed to the last one (an upsert cannot touch one row twice). */
  records: R[];
  rejected: RejectedRecord[];
  /** Nodes in the answer. */
  nodes: number;
  hasNextPage: boolean;
  endCursor: string | null;
  /** Page number within this window in this run (1 = the first page read). */
  number: number;
}

export interface PagingLimits {
  /** Pages in a row with no record not seen before in the window (while hasNextPage) before the window fails. */
  maxPagesWithoutNew: number;
  /** Pages per window before it fails. */
  maxPages: number;
  /** Share of a window's records that may be rejected before the window fails (0..1). */
  maxRejectedShare: number;
  /** Fewer rejected records than this never make a window fail on the share alone (one bad record must not block). */
  minRejectedForShare: number;
  /** `fail`: any rejected record fails the window instead of being quarantined. */
  onRejected: 'quarantine' | 'fail';
}

export const DEFAULT_LIMITS: PagingLimits = {
  maxPagesWithoutNew: 3,
  maxPages: 10_000,
  maxRejectedShare: 0.5,
  minRejectedForShare: 10,
  onRejected: 'quarantine',
};

const MAX_RAW_CHARS = 16_384;
/** More than any page holds (the sandbox and our settings cap pages at 5,000 records). */
const MAX_PAGE_NODES = 1 << 20;

function rawOf(node: unknown): { raw: string; fingerprint: string } {
  let json: string;
  try {
    json = JSON.stringify(node) ?? 'undefined';
  } catch {
    json = String(node);
  }
  const fingerprint = createHash('sha256').update(json).digest('hex').slice(0, 32);
  const raw = json.length > MAX_RAW_CHARS ? `${json.slice(0, MAX_RAW_CHARS)}… (${json.length} characters, cut)` : json;
  return { raw, fingerprint };
}

/** Concatenated key fields; strings as they are, anything else JSON behind a mark so 1 and "1" differ. */
function keyOf(record: Record<string, unknown>, fields: ReadonlyArray<string>): string {
  let key = '';
  for (const field of fields) {
    const value = record[field];
    key += (typeof value === 'string' ? value : `\u0001${JSON.stringify(value)}`) + '\u0000';
  }
  return key;
}

export interface WindowPagingOptions<R> {
  /** The window (or listing) for messages; the caller's message names customer and stream. */
  where: string;
  validate: RecordValidator<R>;
  keyFields: ReadonlyArray<string>;
  /** The window being read, and the record field it is cut on; absent for full-refresh streams. */
  window?: { from: IsoUtc; to: IsoUtc; cursorField: string; apiPath: string };
  /** The cursor the window resumes at (a checkpoint), if any: it counts as seen. */
  startCursor: string | null;
  limits: PagingLimits;
}

/**
 * The contract state of one window (or one full-refresh listing): the cursors and record keys seen so far and the
 * running counts. `accept` processes one answer and returns its records, or throws ContractViolation.
 */
export class WindowPaging<R> {
  readonly #o: WindowPagingOptions<R>;
  readonly #cursors = new Set<string>();
  /** Record keys (and rejected records' fingerprints) seen in this window: a page with none new makes no progress. */
  readonly #seen = new Set<string>();
  #pages = 0;
  #withoutNew = 0;
  #nodes = 0;
  #rejected = 0;

  constructor(options: WindowPagingOptions<R>) {
    this.#o = options;
    if (options.startCursor !== null) this.#cursors.add(options.startCursor);
  }

  get pages(): number {
    return this.#pages;
  }

  #violation(rule: ContractRule, detail: string): ContractViolation {
    const resumed = this.#o.startCursor !== null ? ' after the checkpoint' : '';
    return new ContractViolation(rule, detail, `${this.#o.where}, page ${this.#pages}${resumed}`);
  }

  /** Validates one answer against the contract; `raw` is the page as read, or the shape violation's detail. */
  accept(raw: RawPage | string): ProcessedPage<R> {
    this.#pages += 1;
    if (typeof raw === 'string') throw this.#violation('shape', raw);
    if (raw.nodes.length >= MAX_PAGE_NODES) throw this.#violation('shape', `a page of ${raw.nodes.length} records, more than any page size asked for`);
    const { limits, window } = this.#o;

    const records: R[] = [];
    const rejected: RejectedRecord[] = [];
    let fresh = 0;
    const track = raw.hasNextPage;
    for (const node of raw.nodes) {
      const result = this.#o.validate(node);
      if (!result.ok) {
        const { raw: text, fingerprint } = rawOf(node);
        if (limits.onRejected === 'fail') {
          throw this.#violation('record-rejected', `a record was rejected (${result.reason}) and SYNC_REJECTED_RECORDS=fail: ${text.slice(0, 200)}`);
        }
        rejected.push({ fingerprint, raw: text, reason: result.reason });
        const key = `\u0002${fingerprint}`;
        if (!this.#seen.has(key)) {
          this.#seen.add(key);
          fresh += 1;
        }
        continue;
      }
      const record = result.record as Record<string, unknown>;
      if (window) {
        const at = record[window.cursorField] as IsoUtc;
        if (!(at >= window.from && at < window.to)) {
          throw this.#violation(
            'window',
            `a record's ${window.apiPath} ${at} lies outside the requested window [${window.from}, ${window.to})`,
          );
        }
      }
      // A key seen before in this window is not new. Records with equal keys on one page all go to the store, which
      // keeps the last (store/sinks.ts: the one de-duplication rule, for polled pages and webhook deliveries alike).
      // Keys only matter while more pages follow: the last page's are never compared with anything.
      if (track) {
        const key = keyOf(record, this.#o.keyFields);
        if (!this.#seen.has(key)) {
          this.#seen.add(key);
          fresh += 1;
        }
      }
      records.push(result.record);
    }

    this.#nodes += raw.nodes.length;
    this.#rejected += rejected.length;
    if (this.#rejected >= limits.minRejectedForShare && this.#rejected > limits.maxRejectedShare * this.#nodes) {
      throw this.#violation(
        'records-rejected',
        `${this.#rejected} of the window's ${this.#nodes} records so far break their declared types (first: ${rejected[0]?.reason ?? 'see earlier pages'}), ` +
          `more than SYNC_MAX_REJECTED_SHARE=${limits.maxRejectedShare}`,
      );
    }

    if (raw.hasNextPage) {
      const cursor = raw.endCursor!;
      if (this.#cursors.has(cursor)) {
        throw this.#violation('cursor-repeated', `endCursor ${JSON.stringify(cursor.slice(0, 80))} was already returned in this window; following it would read the same pages forever`);
      }
      this.#cursors.add(cursor);
      this.#withoutNew = fresh === 0 ? this.#withoutNew + 1 : 0;
      if (this.#withoutNew >= limits.maxPagesWithoutNew) {
        throw this.#violation('no-progress', `${this.#withoutNew} pages in a row brought no record not already seen in this window, yet hasNextPage is still true`);
      }
      if (this.#pages >= limits.maxPages) {
        throw this.#violation('page-limit', `the window needs more than SYNC_MAX_PAGES_PER_WINDOW=${limits.maxPages} pages`);
      }
    }
    return { records, rejected, nodes: raw.nodes.length, hasNextPage: raw.hasNextPage, endCursor: raw.endCursor, number: this.#pages };
  }
}

/** Where a flattened record keeps the element of the enclosing list it was found in (declarative definitions). */
export const PARENT_KEY = '$parent';

/**
 * Records nested in lists (`buildings[].floorSpaces[].readings`): walks each element of `list` along `each`, one
 * step per level, and returns the innermost elements, each a copy carrying its enclosing element (without the list it
 * was taken from) under `$parent`, so a record can map its floor space id from the parent. Returns the violation's
 * detail when a level is not a list of objects.
 */
export function flattenNested(list: unknown[], each: ReadonlyArray<readonly string[]>, where: string): unknown[] | string {
  let level: unknown[] = list;
  let at = where;
  for (const step of each) {
    const next: unknown[] = [];
    for (const parent of level) {
      if (!isObject(parent)) return `an element of ${at} is ${describe(parent)}, expected an object`;
      const found = follow(parent, step);
      if (typeof found === 'string') return `${at}[].${step.join('.')}: ${found.replace(/^data/, 'element')}`;
      if (!Array.isArray(found.value)) return `${at}[].${step.join('.')} is ${describe(found.value)}, expected a list`;
      const context: Record<string, unknown> = { ...parent };
      delete context[step[0]!];
      for (const child of found.value) next.push(isObject(child) ? { ...child, [PARENT_KEY]: context } : child);
    }
    level = next;
    at += `[].${step.join('.')}`;
  }
  return level;
}

/**
 * A page of an offset-paged list (`offset` paging): `offset` records were read before it, `limit` were asked for.
 * The cursor is the next offset, as text (it is checkpointed like a Relay cursor); a page shorter than the limit is
 * the last. With `each`, records are counted after flattening.
 */
export function readOffsetPage(
  data: unknown,
  path: readonly string[],
  each: ReadonlyArray<readonly string[]> | undefined,
  offset: number,
  limit: number,
): RawPage | string {
  const list = readListPage(data, path);
  if (typeof list === 'string') return list;
  const nodes = each?.length ? flattenNested(list.nodes, each, `data.${path.join('.')}`) : list.nodes;
  if (typeof nodes === 'string') return nodes;
  if (nodes.length > limit) return `a page of ${nodes.length} records, more than the limit of ${limit} asked for (does the limit count another level?)`;
  const hasNextPage = nodes.length === limit && limit > 0;
  return { nodes, hasNextPage, endCursor: hasNextPage ? String(offset + nodes.length) : null };
}

/** The offset a checkpointed `offset` cursor stands for; a cursor of another paging style is refused, not guessed. */
export function offsetOf(cursor: string | null): number {
  if (cursor === null) return 0;
  if (!/^\d{1,15}$/.test(cursor)) {
    throw new ContractViolation('shape', `the stored page cursor ${JSON.stringify(cursor.slice(0, 40))} is not an offset (was the stream's paging changed mid-window?)`, 'resuming a window');
  }
  return Number(cursor);
}
