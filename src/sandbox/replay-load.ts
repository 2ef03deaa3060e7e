import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { UsageError } from '../errors.ts';
import { jsonSyntaxProblem, parseJsonText } from '../strict-json.ts';
import {
  EXCHANGES_DIR,
  META_FILE,
  RECORDING_FORMAT,
  RECORDING_VERSION,
  type RecordedExchange,
  type RecordingMeta,
} from './replay-format.ts';

/** A recording read from its directory and checked: every exchange in arrival order. */
export interface Recording {
  dir: string;
  meta: RecordingMeta;
  exchanges: RecordedExchange[];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function readJson(path: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(`${path}: cannot read ${what} (${(error as NodeJS.ErrnoException).code ?? 'error'}). Fix: give --replay the directory \`occupancy-sync record --out\` wrote`, {
      cause: error,
    });
  }
  // No cause: V8's SyntaxError quotes the text around the error, and a recording holds what the platform answered.
  const read = parseJsonText(text);
  if ('syntaxAt' in read) throw new UsageError(`${path}: ${what} is ${jsonSyntaxProblem(read.syntaxAt)}. Fix: use the file as the recorder wrote it`);
  return read.value;
}

/** The first problem of an exchange's shape, or undefined. Only what a replay relies on is checked. */
function exchangeProblem(x: unknown): string | undefined {
  if (!isObject(x)) return 'not a JSON object';
  if (!Number.isSafeInteger(x.seq) || (x.seq as number) < 1) return '"seq" must be a positive whole number';
  if (x.endpoint !== 'auth' && x.endpoint !== 'query' && x.endpoint !== 'other') return '"endpoint" must be auth, query or other';
  if (x.key !== null && typeof x.key !== 'string') return '"key" must be a string or null';
  if (!isObject(x.request) || typeof x.request.path !== 'string') return '"request.path" is missing';
  if (x.response !== undefined) {
    const r = x.response;
    if (!isObject(r) || !Number.isSafeInteger(r.status) || (r.status as number) < 100 || (r.status as number) > 599) return '"response.status" must be an HTTP status';
    if (!isObject(r.headers) || Object.values(r.headers).some((v) => typeof v !== 'string')) return '"response.headers" must map names to strings';
    if (r.bodyText !== undefined && typeof r.bodyText !== 'string') return '"response.bodyText" must be a string';
  }
  if (x.failure !== undefined) {
    const f = x.failure;
    if (!isObject(f) || (f.stage !== 'no-answer' && f.stage !== 'body' && f.stage !== 'client-gone')) return '"failure.stage" must be no-answer, body or client-gone';
  }
  if (x.response === undefined && x.failure === undefined) return 'has neither "response" nor "failure"';
  if (x.token !== undefined && (!isObject(x.token) || !isObject(x.token.claims))) return '"token.claims" must be an object';
  return undefined;
}

/**
 * Reads a recording. Every problem is one line naming the file, what is wrong and the fix; a recording of another
 * format version is refused rather than half understood.
 */
export function readRecording(dir: string): Recording {
  let isDir = false;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {
    isDir = false;
  }
  if (!isDir) throw new UsageError(`--replay ${JSON.stringify(dir)}: no such directory. Fix: give the directory \`occupancy-sync record --out\` wrote`);
  const metaPath = join(dir, META_FILE);
  const meta = readJson(metaPath, 'the recording\'s description');
  if (!isObject(meta) || meta.format !== RECORDING_FORMAT) {
    throw new UsageError(`${metaPath}: not an occupancy-sync recording (no "format": "${RECORDING_FORMAT}"). Fix: give --replay the directory \`occupancy-sync record --out\` wrote`);
  }
  if (meta.version !== RECORDING_VERSION) {
    throw new UsageError(`${metaPath}: recording format version ${JSON.stringify(meta.version)}, this occupancy-sync reads version ${RECORDING_VERSION}. Fix: replay it with the occupancy-sync version that recorded it`);
  }
  if (!isObject(meta.clock) || !Number.isSafeInteger(meta.clock.epochMs)) {
    throw new UsageError(`${metaPath}: "clock.epochMs" is missing or not a whole number. Fix: use the file as the recorder wrote it`);
  }
  if (!Array.isArray(meta.keys) || meta.keys.some((k) => !isObject(k) || typeof k.key !== 'string')) {
    throw new UsageError(`${metaPath}: "keys" must list the recorded API keys ({"key": "recorded-key-1", ...}). Fix: use the file as the recorder wrote it`);
  }
  const exchangesDir = join(dir, EXCHANGES_DIR);
  let files: string[];
  try {
    files = readdirSync(exchangesDir).filter((f) => f.endsWith('.json')).sort();
  } catch (error) {
    throw new UsageError(`${exchangesDir}: cannot list the exchanges (${(error as NodeJS.ErrnoException).code ?? 'error'}). Fix: give --replay the whole recording directory`, { cause: error });
  }
  const exchanges: RecordedExchange[] = [];
  const seen = new Map<number, string>();
  for (const file of files) {
    const path = join(exchangesDir, file);
    const exchange = readJson(path, 'an exchange');
    const problem = exchangeProblem(exchange);
    if (problem) throw new UsageError(`${path}: ${problem}. Fix: use the file as the recorder wrote it, or remove it`);
    const x = exchange as unknown as RecordedExchange;
    const twin = seen.get(x.seq);
    if (twin) throw new UsageError(`${path}: "seq" ${x.seq} is also the number of ${twin}. Fix: remove one of them`);
    seen.set(x.seq, file);
    exchanges.push(x);
  }
  exchanges.sort((a, b) => a.seq - b.seq);
  return { dir, meta: meta as unknown as RecordingMeta, exchanges };
}
