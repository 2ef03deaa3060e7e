import { gzipSync } from 'node:zlib';
import { Kind, type OperationDefinitionNode } from 'graphql';

/**
 * Deliberate contract violations, one at a time: what a buggy release of the platform, a CDN or a proxy in between
 * might answer. Unlike the random faults (faults.ts), which a client must survive, these are answers a client must
 * refuse to store. They apply to v1's occupancy query unless said otherwise (so only with the v1 API variant; the
 * transport and auth ones with every variant); "later pages" are requests with an `after` cursor, so the first page
 * of each window is served correctly and the violation shows up mid-window.
 */
export type MisbehaviourKind =
  // The shape of a page (later pages).
  | 'pageInfoNull'
  | 'nodesNull'
  | 'hasNextPageString'
  | 'endCursorMissing'
  // Paging that does not progress.
  | 'ignoreAfter'
  | 'sameRecordsFreshCursor'
  /** Every page of a window repeats its first page's records, while hasNextPage and endCursor advance as usual. */
  | 'firstPageAgain'
  | 'cyclingCursor'
  | 'emptyPagesForever'
  // Records outside the requested [from, to): the server ignores `to` and reads an hour further.
  | 'outOfWindow'
  // The server reads the bounds as local time UTC+02:00 (their zone dropped): every window answers the readings of
  // the window two hours earlier, all of them outside the one asked for.
  | 'localTimeWindows'
  // Record types, on every node.
  | 'nullHeadcount'
  | 'nullFloorSpaceId'
  | 'nullStatus'
  | 'numericCreated'
  | 'zonelessCreated'
  // Record types, on the nodes of one floor space only: stray bad records among good ones.
  | 'strayNullHeadcount'
  /** The first records of a window's first page carry the values of HOSTILE_VALUES, one each. */
  | 'hostileItems'
  /** Any variant: the buildings listing silently stops at BUILDINGS_CAP records (a server capping an unpaged list). */
  | 'cappedBuildings'
  // Transport and proxies (every query).
  | 'dateYearBehind'
  | 'hugeGzip'
  | 'redirect'
  | 'brotliEncoding'
  | 'htmlLoginPage'
  // The auth endpoint refuses with a body that echoes the request, secret included (raw, or JSON-escaped with \/).
  | 'authEchoesSecret'
  | 'authEchoesSecretEscaped';

export const MISBEHAVIOUR_KINDS: readonly MisbehaviourKind[] = [
  'pageInfoNull', 'nodesNull', 'hasNextPageString', 'endCursorMissing',
  'ignoreAfter', 'sameRecordsFreshCursor', 'firstPageAgain', 'cyclingCursor', 'emptyPagesForever',
  'outOfWindow', 'localTimeWindows',
  'nullHeadcount', 'nullFloorSpaceId', 'nullStatus', 'numericCreated', 'zonelessCreated', 'strayNullHeadcount', 'hostileItems',
  'cappedBuildings', 'dateYearBehind', 'hugeGzip', 'redirect', 'brotliEncoding', 'htmlLoginPage',
  'authEchoesSecret', 'authEchoesSecretEscaped',
];

/** The misbehaviours that do not rewrite v1's occupancy query, and so apply whatever the API variant. */
export const ANY_VARIANT_KINDS: ReadonlySet<MisbehaviourKind> = new Set<MisbehaviourKind>([
  'cappedBuildings', 'dateYearBehind', 'hugeGzip', 'redirect', 'brotliEncoding', 'htmlLoginPage', 'authEchoesSecret', 'authEchoesSecretEscaped',
]);

/** cappedBuildings: the most buildings one answer holds; nothing in the answer says more exist. */
export const BUILDINGS_CAP = 2;
const FAKE = 'mb~';
const YEAR_MS = 365 * 86_400_000;
/** localTimeWindows: the server's zone, UTC+02:00. */
const LOCAL_OFFSET_MS = 2 * 3_600_000;
/** Inflates past the client's 64 MiB limit; a few dozen KiB on the wire. */
const HUGE_BYTES = 65 * 1024 * 1024;

type Json = Record<string, unknown>;

/**
 * Values no reading may carry, each on one field (`hostileItems`); tests send the same ones in webhook deliveries to
 * see both ways in come out alike.
 */
export const HOSTILE_VALUES: ReadonlyArray<{ field: 'headcount' | 'floorSpaceId' | 'occupancyStatus'; value: unknown }> = [
  { field: 'headcount', value: 3_000_000_000 },
  { field: 'headcount', value: -1 },
  { field: 'headcount', value: 2.5 },
  { field: 'headcount', value: '4' },
  { field: 'headcount', value: null },
  { field: 'floorSpaceId', value: '' },
  { field: 'floorSpaceId', value: 42 },
  { field: 'floorSpaceId', value: 'f\u0000' },
  { field: 'occupancyStatus', value: '' },
  { field: 'occupancyStatus', value: '\ud800' },
  { field: 'occupancyStatus', value: { nested: true } },
];

/** An answer that replaces the normal one. */
export interface Replacement {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

let hugeGzip: Buffer | undefined;

/**
 * The real cursor inside a fake one (`mb~<n>~<real>`), or the cursor itself. Applied whether or not a misbehaviour is
 * in force: a fake cursor committed as a checkpoint while the sandbox misbehaved still resumes once it behaves.
 */
export function realCursor(cursor: string): string | null {
  if (!cursor.startsWith(FAKE)) return cursor;
  return cursor.slice(cursor.indexOf('~', FAKE.length) + 1) || null;
}

export class Misbehaviour {
  readonly kind: MisbehaviourKind;
  /** Floor spaces whose records `strayNullHeadcount` spoils (one per customer). */
  readonly #stray: ReadonlySet<string>;
  #fresh = 0;
  /** The records of each window's first page served, by its bounds (firstPageAgain). */
  readonly #firstPages = new Map<string, Json[]>();
  /** endCursor -> the `after` of the request that produced it (cyclingCursor). */
  readonly #previous = new Map<string, string | null>();

  constructor(kind: MisbehaviourKind, strayFloorSpaceIds: ReadonlySet<string> = new Set()) {
    this.#stray = strayFloorSpaceIds;
    if (!MISBEHAVIOUR_KINDS.includes(kind)) {
      throw new RangeError(`sandbox misbehave: unknown kind ${JSON.stringify(kind)}; use one of ${MISBEHAVIOUR_KINDS.join(', ')}`);
    }
    this.kind = kind;
  }

  /** Whether the operation reads occupancy (the query these misbehaviours target). */
  static readsOccupancy(operation: OperationDefinitionNode): boolean {
    return operation.selectionSet.selections.some((s) => s.kind === Kind.FIELD && s.name.value === 'occupancy');
  }

  /** Rewrites the variables before execution; the fake cursors handed out earlier are turned back into real ones. */
  variables(input: Json): Json {
    const variables = { ...input };
    if (typeof variables.after === 'string') variables.after = realCursor(variables.after);
    if (this.kind === 'ignoreAfter' || this.kind === 'sameRecordsFreshCursor') variables.after = null;
    if (this.kind === 'outOfWindow' && typeof variables.to === 'string') {
      variables.to = new Date(Date.parse(variables.to) + 3_600_000).toISOString();
    }
    if (this.kind === 'localTimeWindows') {
      // "10:00Z" read as 10:00 at UTC+02:00 is 08:00Z. A bound that is no time is left for validation to refuse.
      for (const bound of ['from', 'to'] as const) {
        const ms = typeof variables[bound] === 'string' ? Date.parse(variables[bound] as string) : Number.NaN;
        if (Number.isFinite(ms)) variables[bound] = new Date(ms - LOCAL_OFFSET_MS).toISOString();
      }
    }
    return variables;
  }

  /** Rewrites an executed occupancy answer. `after` is the cursor the client sent. */
  result(result: { data?: Json | null }, sent: string | null, variables: Json = {}): void {
    const after = sent === null ? null : realCursor(sent);
    const connection = result.data?.occupancy as { nodes: Json[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } | undefined;
    if (!connection) return;
    const later = after !== null;
    const { pageInfo } = connection;
    switch (this.kind) {
      case 'pageInfoNull':
        if (later) (connection as Json).pageInfo = null;
        break;
      case 'nodesNull':
        if (later) (connection as Json).nodes = null;
        break;
      case 'hasNextPageString':
        if (later) (pageInfo as Json).hasNextPage = String(pageInfo.hasNextPage);
        break;
      case 'endCursorMissing':
        if (later) pageInfo.endCursor = null;
        break;
      case 'sameRecordsFreshCursor':
        if (pageInfo.hasNextPage) pageInfo.endCursor = `${FAKE}${++this.#fresh}~${pageInfo.endCursor}`;
        break;
      case 'firstPageAgain': {
        const window = `${String(variables.from)} ${String(variables.to)}`;
        if (later) connection.nodes = this.#firstPages.get(window) ?? connection.nodes;
        else this.#firstPages.set(window, connection.nodes);
        break;
      }
      case 'emptyPagesForever':
        if (later || pageInfo.hasNextPage) {
          if (later) connection.nodes = [];
          pageInfo.hasNextPage = true;
          pageInfo.endCursor = `${FAKE}${++this.#fresh}~${after ?? pageInfo.endCursor ?? ''}`;
        }
        break;
      case 'cyclingCursor': {
        if (pageInfo.endCursor !== null) {
          const previous = after === null ? undefined : this.#previous.get(after);
          if (!this.#previous.has(pageInfo.endCursor)) this.#previous.set(pageInfo.endCursor, after);
          // From the third page on, point back at the cursor of the page before last: A, B, A, B, ...
          if (previous !== undefined && previous !== null && pageInfo.hasNextPage) pageInfo.endCursor = previous;
        }
        break;
      }
      case 'nullHeadcount':
        for (const node of connection.nodes) node.headcount = null;
        break;
      case 'nullFloorSpaceId':
        for (const node of connection.nodes) node.floorSpaceId = null;
        break;
      case 'nullStatus':
        for (const node of connection.nodes) node.occupancyStatus = null;
        break;
      case 'numericCreated':
        for (const node of connection.nodes) node.created = Date.parse(node.created as string);
        break;
      case 'zonelessCreated':
        for (const node of connection.nodes) node.created = (node.created as string).replace(/Z$/, '');
        break;
      case 'hostileItems':
        if (!later) HOSTILE_VALUES.forEach((h, i) => { if (connection.nodes[i]) connection.nodes[i][h.field] = h.value; });
        break;
      case 'strayNullHeadcount':
        for (const node of connection.nodes) if (this.#stray.has(node.floorSpaceId as string)) node.headcount = null;
        break;
      default:
        break;
    }
  }

  /** Rewrites any executed query's answer: `cappedBuildings` cuts the `buildings` listing (under any alias), whatever the variant. */
  listing(operation: OperationDefinitionNode, result: { data?: Json | null }): void {
    if (this.kind !== 'cappedBuildings') return;
    for (const s of operation.selectionSet.selections) {
      if (s.kind !== Kind.FIELD || s.name.value !== 'buildings') continue;
      const list = result.data?.[s.alias?.value ?? s.name.value];
      if (Array.isArray(list)) list.length = Math.min(list.length, BUILDINGS_CAP);
    }
  }

  /** The value of the Date header, offset from the sandbox clock's `now`. */
  dateHeader(now: number): string {
    return new Date(this.kind === 'dateYearBehind' ? now - YEAR_MS : now).toUTCString();
  }

  /** An answer that replaces the whole HTTP response of a query, when the misbehaviour is one of those. */
  replacement(): Replacement | undefined {
    switch (this.kind) {
      case 'hugeGzip':
        hugeGzip ??= gzipSync(Buffer.alloc(HUGE_BYTES, 0x20), { level: 9 });
        return { status: 200, headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' }, body: hugeGzip };
      case 'redirect':
        return { status: 307, headers: { Location: 'https://api.example.net/api/external/query', 'Content-Type': 'text/plain' }, body: Buffer.from('moved') };
      case 'brotliEncoding':
        return { status: 200, headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'br' }, body: Buffer.from([0x1b, 0x03, 0x00, 0xf8]) };
      case 'htmlLoginPage':
        return { status: 200, headers: { 'Content-Type': 'text/html; charset=utf-8' }, body: Buffer.from('<!doctype html><title>Sign in</title><form>proxy login</form>') };
      default:
        return undefined;
    }
  }

  /** The auth endpoint's answer for the echo misbehaviours: 400 with a body quoting the request, secret and all. */
  authReplacement(request: Json): Replacement | undefined {
    if (this.kind !== 'authEchoesSecret' && this.kind !== 'authEchoesSecretEscaped') return undefined;
    // Padding puts the secret across the 200th character, where an excerpt used to be cut before it was scrubbed.
    const padding = 'x'.repeat(150);
    let text = JSON.stringify({ error: 'invalid request', detail: padding, received: request });
    if (this.kind === 'authEchoesSecretEscaped') text = text.replace(/\//g, '\\/');
    return { status: 400, headers: { 'Content-Type': 'application/json' }, body: Buffer.from(text) };
  }
}
