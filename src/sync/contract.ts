import { createHash } from 'node:crypto';
import { ContractViolation, type ContractRule } from '../errors.ts';
import type { QuarantinedRecord } from '../store/types.ts';
import { parseIsoInstant, toIsoUtc, type IsoUtc } from '../time.ts';
import type { PageRead, PagingStyle } from './paging/index.ts';
import type { RecordValidator } from './records.ts';
import { SeenKeys } from './seen-keys.ts';

/**
 * The page contract (docs/sync.md, "The page contract"): what every answer must satisfy before anything of it is
 * committed. Pure: no I/O, no clock. Checked per page, in the order pages are read; the paging style (src/sync/paging/)
 * reads the answer and says what progress means for it:
 *
 * - shape: the answer has the style's shape (the style's `read` names what is wrong);
 * - records: each node is validated against the stream's declaration; a node that breaks it is rejected (quarantined)
 *   unless the rejections are wholesale (the API changed) or the operator asked to fail on any;
 * - window: every valid record's cursor field lies inside the requested window [from, to) (with an inclusive end, a
 *   record at the end bound belongs to the next window and is left to it);
 * - truncated: a single page holding the API's declared maximum may have been cut, and nothing can ask for more;
 * - progress: a cursor the platform handed out is never handed out again in a window; a page after the first that
 *   holds records brings at least one not seen before in the window (a cursor that does not move shows at once);
 *   empty pages do not go on; at most `maxPages` pages per window. No window can page forever.
 */

export interface ProcessedPage<R> {
  /** Valid records of the window, equal keys collapsed to the last one (an upsert cannot touch one row twice). */
  records: R[];
  rejected: QuarantinedRecord[];
  /** Nodes in the answer. */
  nodes: number;
  /** The checkpoint of the next page; null when the window (or listing) is complete. */
  next: string | null;
  /** Page number within this window in this run (1 = the first page read). */
  number: number;
  /** The latest cursor-field instant among the page's records (epoch ms), when it has any. */
  newest: number | undefined;
}

export interface PagingLimits {
  /** Empty pages in a row (while more are announced) before the window fails. */
  maxEmptyPages: number;
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
  maxEmptyPages: 3,
  maxPages: 10_000,
  maxRejectedShare: 0.5,
  minRejectedForShare: 10,
  onRejected: 'quarantine',
};

const MAX_RAW_CHARS = 16_384;
/** More than any page holds (our settings cap pages far below). */
const MAX_PAGE_NODES = 1 << 20;

/** A node that broke its declaration as the quarantine keeps it (polled pages and webhook deliveries alike). */
export function quarantinedRecord(node: unknown, reason: string): QuarantinedRecord {
  return { ...rawOf(node), reason };
}

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

/** The window being read, in canonical text (records' cursor values are canonical text: compared as text). */
export interface ContractWindow {
  from: IsoUtc;
  to: IsoUtc;
  /** With an inclusive end bound the API also answers records in [to, to + endSlackMs): they belong to the next window. */
  endSlackMs: number;
  cursorField: string;
  /** The API field the cursor field is read from, for messages. */
  apiPath: string;
}

export interface PageContractOptions<R> {
  /** The window (or listing) for messages; the caller's message names customer and stream. */
  where: string;
  style: PagingStyle;
  validate: RecordValidator<R>;
  keyFields: ReadonlyArray<string>;
  /** The window being read; absent for a full stream's listing. */
  window?: ContractWindow;
  /** The checkpoint the window resumes at, if any: it counts as seen. */
  startCursor: string | null;
  limits: PagingLimits;
}

/** One page's nodes, sorted by the contract. */
interface Sorted<R> {
  records: R[];
  rejected: QuarantinedRecord[];
  /** Records (and rejected records) not seen before in this window. */
  fresh: number;
  /** The latest cursor value of the records inside the window. */
  newest: IsoUtc | undefined;
  outside: { earliest: IsoUtc; latest: IsoUtc; count: number } | undefined;
}

/**
 * The page contract of one window, or of one full listing (no window): the cursors and record keys seen so far and the
 * running counts. `accept` processes one answer and returns its records, or throws ContractViolation.
 */
export class PageContract<R> {
  readonly #o: PageContractOptions<R>;
  readonly #cursors = new Set<string>();
  /** Record keys (and rejected records' fingerprints) seen in this window: a page with none new makes no progress. */
  readonly #seen: SeenKeys;
  readonly #endSlack: IsoUtc | undefined;
  #pages = 0;
  #emptyInARow = 0;
  #nodes = 0;
  #rejected = 0;

  constructor(options: PageContractOptions<R>) {
    this.#o = options;
    this.#seen = new SeenKeys(options.keyFields);
    if (options.startCursor !== null) this.#cursors.add(options.startCursor);
    const w = options.window;
    if (w && w.endSlackMs > 0) this.#endSlack = toIsoUtc(parseIsoInstant(w.to)! + w.endSlackMs);
  }

  get pages(): number {
    return this.#pages;
  }

  #violation(rule: ContractRule, detail: string, options?: ConstructorParameters<typeof ContractViolation>[3]): ContractViolation {
    const resumed = this.#o.startCursor !== null ? ' after the checkpoint' : '';
    return new ContractViolation(rule, detail, `${this.#o.where}, page ${this.#pages}${resumed}`, options);
  }

  /** Validates one answer against the contract; `read` is the page as the style read it, or its shape violation. */
  accept(read: PageRead | string, pageSize: number): ProcessedPage<R> {
    this.#pages += 1;
    if (typeof read === 'string') throw this.#violation('shape', read);
    const nodes = read.nodes;
    if (nodes.length >= MAX_PAGE_NODES) throw this.#violation('shape', `a page of ${nodes.length} records, more than any page size asked for`);
    const sorted = this.#sort(nodes, read.next !== null);
    if (sorted.outside) throw this.#outsideWindow(sorted.outside);
    this.#countRejected(nodes.length, sorted.rejected);
    this.#checkPaging(read, sorted.fresh, pageSize);
    return {
      records: sorted.records,
      rejected: sorted.rejected,
      nodes: nodes.length,
      next: read.next,
      number: this.#pages,
      newest: sorted.newest === undefined ? undefined : parseIsoInstant(sorted.newest),
    };
  }

  /**
   * Validates each node: records kept, records rejected (quarantined, or the page fails with SYNC_REJECTED_RECORDS=fail),
   * how many were new in this window, the newest cursor value, and the records outside the window. `more`: more pages
   * follow this one.
   */
  #sort(nodes: readonly unknown[], more: boolean): Sorted<R> {
    const { window } = this.#o;
    const sorted: Sorted<R> = { records: [], rejected: [], fresh: 0, newest: undefined, outside: undefined };
    const later = this.#pages > 1;
    for (const node of nodes) {
      const result = this.#o.validate(node);
      if (!result.ok) {
        this.#reject(node, result.reason, more, sorted);
        continue;
      }
      const record = result.record as Record<string, unknown>;
      let keep = true;
      if (window) {
        const at = record[window.cursorField] as IsoUtc;
        if (!(at >= window.from && at < window.to)) {
          if (this.#endSlack !== undefined && at >= window.to && at < this.#endSlack) keep = false;
          else {
            const o = sorted.outside;
            sorted.outside = o
              ? { earliest: at < o.earliest ? at : o.earliest, latest: at > o.latest ? at : o.latest, count: o.count + 1 }
              : { earliest: at, latest: at, count: 1 };
            continue;
          }
        } else if (sorted.newest === undefined || at > sorted.newest) sorted.newest = at;
      }
      // A key seen before in this window is not new. Records with equal keys on one page all go to the store, which
      // keeps the last (the one de-duplication rule, for polled pages and webhook deliveries alike). Keys are only
      // kept while more pages follow, and a last page only has to show one new record: a window of one page (a
      // steady cron run) builds none.
      if ((more || (later && sorted.fresh === 0)) && this.#seen.record(record, more)) sorted.fresh += 1;
      if (keep) sorted.records.push(result.record);
    }
    return sorted;
  }

  /** A node that broke its declaration: quarantined (its fingerprint counts as a key), or the page fails. */
  #reject(node: unknown, reason: string, more: boolean, sorted: Sorted<R>): void {
    const { raw: text, fingerprint } = rawOf(node);
    if (this.#o.limits.onRejected === 'fail') {
      throw this.#violation('record-rejected', `a record was rejected (${reason}) and SYNC_REJECTED_RECORDS=fail: ${text.slice(0, 200)}`);
    }
    sorted.rejected.push({ fingerprint, raw: text, reason });
    if (this.#seen.rejected(fingerprint, more)) sorted.fresh += 1;
  }

  #outsideWindow(outside: NonNullable<Sorted<R>['outside']>): ContractViolation {
    const window = this.#o.window!;
    const earliest = parseIsoInstant(outside.earliest)!;
    const latest = parseIsoInstant(outside.latest)!;
    const inclusiveHint =
      latest >= parseIsoInstant(window.to)! && this.#endSlack === undefined
        ? ' If the API includes records at the end bound, declare `window: { end: inclusive }` for the stream'
        : '';
    return this.#violation(
      'window',
      `${outside.count} record(s) lie outside the requested window [${window.from}, ${window.to}): ${window.apiPath} from ${outside.earliest} to ${outside.latest}`,
      {
        outside: { earliest, latest },
        fix:
          'check how the API reads the window bounds the stream sends (their format, time zone and whether the end is inclusive: docs/api-assumptions.md, "Window bounds"), and report the answer to the platform if it ignores them.' +
          inclusiveHint,
      },
    );
  }

  /** Adds the page's records to the window's counts; most of them rejected means the API changed. */
  #countRejected(nodes: number, rejected: readonly QuarantinedRecord[]): void {
    const { limits } = this.#o;
    this.#nodes += nodes;
    this.#rejected += rejected.length;
    if (this.#rejected >= limits.minRejectedForShare && this.#rejected > limits.maxRejectedShare * this.#nodes) {
      throw this.#violation(
        'records-rejected',
        `${this.#rejected} of the window's ${this.#nodes} records so far break their declared types (first: ${rejected[0]?.reason ?? 'see earlier pages'}), ` +
          `more than SYNC_MAX_REJECTED_SHARE=${limits.maxRejectedShare}`,
      );
    }
  }

  /** The checks of progress and limits: a cut single page, a cursor handed out twice, no new record, too many pages. */
  #checkPaging(read: PageRead, fresh: number, pageSize: number): void {
    const { limits, window, style } = this.#o;
    const nodes = read.nodes;
    if (!style.canAskForMore && style.maxPageSize !== undefined && nodes.length >= style.maxPageSize) {
      throw this.#violation(
        'truncated',
        `the answer holds ${nodes.length} records, the most the API answers (maxPageSize ${style.maxPageSize}), and a single page cannot ask for more: records may be missing`,
        {
          fix: window
            ? 'give the stream a smaller window (`window: { step: ... }`) so each answer holds fewer, or a paging style if the API pages (docs/api-assumptions.md)'
            : "page the listing with the API's paging style, or correct `paging.maxPageSize` if the API's documented limit is higher (docs/api-assumptions.md); nothing was soft-deleted",
        },
      );
    }
    if (read.next !== null && style.serverCursors) {
      if (this.#cursors.has(read.next)) {
        throw this.#violation('cursor-repeated', `the cursor ${JSON.stringify(read.next.slice(0, 80))} was already returned in this window; following it would read the same pages forever`);
      }
      this.#cursors.add(read.next);
    }
    // A page after the first that holds records, none of them new, means the cursor did not move: following it further
    // would only read the same records again (an overlap of one record per page is fine: the rest are new). A last
    // page holding one record already seen is such an overlap.
    if (this.#pages > 1 && nodes.length > 0 && fresh === 0 && !(read.next === null && nodes.length === 1)) {
      throw this.#violation(
        'no-progress',
        `page ${this.#pages} of the window brought ${nodes.length} record(s), none of them new in this window: the API did not move on to the next page (does it ignore the ${this.#pagingVariables()}?)`,
      );
    }
    if (read.next !== null) {
      this.#emptyInARow = nodes.length === 0 ? this.#emptyInARow + 1 : 0;
      if (this.#emptyInARow >= limits.maxEmptyPages) {
        throw this.#violation('no-progress', `${this.#emptyInARow} empty pages in a row, yet the API still announces more`);
      }
      if (this.#pages >= limits.maxPages) {
        throw this.#violation('page-limit', `the window needs more than SYNC_MAX_PAGES_PER_WINDOW=${limits.maxPages} pages (of ${pageSize} records)`);
      }
    }
  }

  #pagingVariables(): string {
    const names = Object.values(this.#o.style.variableNames).filter((n) => n !== undefined);
    return names.length ? `paging variables ${names.map((n) => `$${n}`).join(', ')}` : 'paging';
  }
}
