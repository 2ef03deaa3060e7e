/**
 * The recording format: what `occupancy-sync record` writes (src/app/record*.ts) and `sandbox --replay` reads
 * (replay-load.ts). A recording is a directory:
 *
 *   meta.json             RecordingMeta: the command, its frozen clock, the API keys (as pseudonyms), what was removed
 *   README.txt            the same for people, and how to replay
 *   exchanges/NNNNNN-*.json  one RecordedExchange per request, numbered in arrival order, bodies decompressed
 *   stdout.txt, stderr.txt   what the command printed
 *
 * The format lives here, at the bottom, so the replay needs nothing above the core; the recorder imports it.
 */

export const RECORDING_FORMAT = 'occupancy-sync-recording';
export const RECORDING_VERSION = 1;
export const META_FILE = 'meta.json';
export const README_FILE = 'README.txt';
export const EXCHANGES_DIR = 'exchanges';

export const AUTH_PATH = '/api/v1/auth';
export const QUERY_PATH = '/api/external/query';

/** Stands for an API key everywhere in a recording; a replay takes it as the key (`recorded-key-1`, ...). */
export const KEY_PSEUDONYM_PREFIX = 'recorded-key-';

export type Endpoint = 'auth' | 'query' | 'other';

/** One API key of the recorded run, by its pseudonym, and the customer it was configured for. */
export interface RecordedKey {
  key: string;
  customerId: string | null;
}

/** A sync state row as the recorded command found it (sync and backfill plan their windows from it). */
export interface RecordedState {
  customerId: string;
  stream: string;
  watermark: string | null;
  windowStart: string | null;
  windowEnd: string | null;
  pageCursor: string | null;
  rangeStart: string | null;
  rangeEnd: string | null;
}

export interface Removal {
  what: string;
  how: string;
  /** How many values were replaced in this recording. */
  count: number;
}

export interface RecordingMeta {
  format: typeof RECORDING_FORMAT;
  version: typeof RECORDING_VERSION;
  /** The recorded command's arguments, e.g. ["sync", "--stream", "occupancy"]. */
  command: string[];
  /** API_BASE_URL of the recorded run (no credentials). */
  upstream: string;
  /** The command's clock stood still at this instant for the whole run (its windows depend on it). */
  clock: { frozenAt: string; epochMs: number };
  /** Real time, from the recorder's clock. */
  startedAt: string;
  finishedAt: string | null;
  /** The command's exit code; null while it runs or when the recorder could not tell. */
  exitCode: number | null;
  exchanges: number;
  keys: RecordedKey[];
  /**
   * The recorded command's settings that shape its questions (SYNC_*, HTTP_*, BUILDINGS_NAME_LIKE, ...), as set in
   * its environment; unset ones had their defaults. A replay runs with the same.
   */
  settings: Record<string, string>;
  /** Undefined when the command reads no sync state (check) or the database could not be read. */
  stateAtStart?: RecordedState[];
  stateNote?: string;
  removed: Removal[];
}

/** Response headers a replay sends back as recorded (the rest are either recomputed or of no use to a client). */
export const REPLAYED_RESPONSE_HEADERS = ['date', 'content-type', 'retry-after', 'www-authenticate', 'vary', 'cache-control'];

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** The JSON body, when it parsed; else bodyText (UTF-8) or nothing. */
  body?: unknown;
  bodyText?: string;
}

export interface RecordedResponse {
  status: number;
  headers: Record<string, string>;
  body?: unknown;
  bodyText?: string;
  /** Bytes on the wire (compressed when contentEncoding says so). */
  wireBytes: number;
  contentEncoding: string;
}

/** How an exchange ended without a whole answer. */
export type FailureStage =
  /** No answer at all (connection refused or reset before the status line). */
  | 'no-answer'
  /** The status and headers came, the body was cut off or corrupt. */
  | 'body'
  /** The command gave up (its timeout, or it stopped) before the answer was complete. */
  | 'client-gone';

export interface RecordedExchange {
  seq: number;
  endpoint: Endpoint;
  /** Pseudonym of the API key whose credentials or token the request carried; null when none was recognised. */
  key: string | null;
  startedAt: string;
  durationMs: number;
  request: RecordedRequest;
  response?: RecordedResponse;
  /** Auth answers: the token's claims a client reads (customer, scopes, lifetime); the others were dropped. */
  token?: { claims: Record<string, unknown>; removedClaims: string[] };
  failure?: { stage: FailureStage; message: string };
}

/** `000012-query-Occupancy.json`: sorts in arrival order, and says what it holds. */
export function exchangeFileName(exchange: Pick<RecordedExchange, 'seq' | 'endpoint' | 'request'>): string {
  const op = exchange.endpoint === 'query' ? operationOf(exchange.request.body) : undefined;
  const label = [exchange.endpoint, op].filter(Boolean).join('-').replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 60);
  return `${String(exchange.seq).padStart(6, '0')}-${label}.json`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The operation a GraphQL body names ('' for an anonymous one). */
export function operationOf(body: unknown): string {
  return isObject(body) && typeof body.operationName === 'string' ? body.operationName : '';
}

/** A GraphQL body's variables; absent and null are the same empty object, as on the platform. */
export function variablesOf(body: unknown): unknown {
  return isObject(body) && body.variables !== undefined && body.variables !== null ? body.variables : {};
}

/** JSON with sorted keys at every level: the same variables always give the same text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/**
 * Fields whose values are secrets wherever they appear in a body (request variables, answers): the platform's auth
 * body, tokens, and a webhook's signature secret. `additionalHeaders` values are shared secrets too (a receiver
 * compares them), handled by `redactSecretFields`.
 */
export const SECRET_FIELDS: Readonly<Record<string, string>> = {
  ApiSecret: 'API secret',
  apiSecret: 'API secret',
  idToken: 'token',
  accessToken: 'token',
  refreshToken: 'token',
  signatureSecret: 'webhook signature secret',
  clientSecret: 'client secret',
  password: 'password',
};

export const removedText = (what: string): string => `[removed: ${what}]`;
/** Already replaced (by the recorder, in a recording read back): not a secret to find again. */
const isRemoved = (value: string): boolean => /^\[removed: [^\]]*\]$/.test(value);

/**
 * A copy of `value` with every secret field replaced by `[removed: <what>]`; `found` hears each removed value, so
 * the recorder can also remove it wherever else it appears. The replay applies the same function to a request's
 * variables before looking them up, so a recorded mutation that carried a secret is found again.
 */
export function redactSecretFields(value: unknown, found: (secret: string, what: string) => void = () => {}): unknown {
  if (Array.isArray(value)) return value.map((v) => redactSecretFields(v, found));
  if (!isObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const what = SECRET_FIELDS[k];
    if (what !== undefined && typeof v === 'string' && v !== '' && !isRemoved(v)) {
      found(v, what);
      out[k] = removedText(what);
    } else if (k === 'additionalHeaders' && Array.isArray(v)) {
      out[k] = v.map((h) => {
        if (!isObject(h) || typeof h.value !== 'string' || h.value === '' || isRemoved(h.value)) return redactSecretFields(h, found);
        found(h.value, 'webhook header value');
        return { ...(redactSecretFields(h, found) as Record<string, unknown>), value: removedText('webhook header value') };
      });
    } else {
      out[k] = redactSecretFields(v, found);
    }
  }
  return out;
}
