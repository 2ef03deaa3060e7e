import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import { silentLogger, type Logger } from '../logger.ts';
import { listen } from './server.ts';
import { acceptsGzip, BodyTooLarge, errorBody, readBody, sendJson } from './respond.ts';
import {
  AUTH_PATH,
  canonicalJson,
  operationOf,
  QUERY_PATH,
  redactSecretFields,
  REPLAYED_RESPONSE_HEADERS,
  variablesOf,
  type RecordedExchange,
  type RecordedKey,
} from './replay-format.ts';
import type { Recording } from './replay-load.ts';
import { explainMiss } from './replay-miss.ts';
import { ReplayTokens } from './replay-token.ts';

/**
 * `sandbox --replay`: the platform as it answered one recorded run. The auth endpoint issues a replay token carrying
 * the recorded token's claims; each GraphQL request gets the recorded answer to the same key, operation and variables,
 * repeats in recorded order (a 500 then the retry's 200, a 401 then the answer after re-authenticating), with the
 * recorded status, Date header and failures (a connection dropped, a body cut off). A request the recording does not
 * hold gets HTTP 400 and a GraphQL error saying why, with the fix for that cause (replay-miss.ts: most often the
 * recorded clock is missing), and a log line: the replayed command asked something the recorded one did not, which is
 * what the person replaying needs to know first.
 */

export interface ReplayOptions {
  recording: Recording;
  host?: string;
  /** 0 (default) picks a free port. */
  port?: number;
  logger?: Logger;
}

export interface ReplayStats {
  /** Recorded exchanges answered. */
  served: number;
  /** Requests the recording does not hold. */
  notInRecording: number;
  /** The first of those, described (operation, variables, key). */
  missed: string[];
}

export interface Replay {
  url: string;
  port: number;
  recording: Recording;
  /** The keys a replayed command authenticates with (any secret is accepted: nothing real is behind them). */
  keys: RecordedKey[];
  stats: ReplayStats;
  /** Recorded exchanges no request asked for yet. */
  unserved(): RecordedExchange[];
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 16 * 1024 * 1024;
const MAX_MISSED_KEPT = 20;

const queryKey = (key: string, operation: string, variables: unknown) => `${key}\n${operation}\n${canonicalJson(redactSecretFields(variables))}`;
const otherKey = (method: string, path: string, body: unknown) => `${method} ${path}\n${canonicalJson(body ?? null)}`;

/**
 * Recorded exchanges by what a request must match, each sequence in recorded order. A sequence used up starts over,
 * so the command can be replayed again and again against one replay, and each run sees what the recorded run saw
 * (a 500, then the retry's answer).
 */
class Answers {
  readonly #sequences = new Map<string, { items: RecordedExchange[]; next: number }>();
  readonly #all: RecordedExchange[] = [];
  readonly #served = new Set<RecordedExchange>();

  add(lookup: string, exchange: RecordedExchange): void {
    const sequence = this.#sequences.get(lookup);
    if (sequence) sequence.items.push(exchange);
    else this.#sequences.set(lookup, { items: [exchange], next: 0 });
    this.#all.push(exchange);
  }

  next(lookup: string): RecordedExchange | undefined {
    const sequence = this.#sequences.get(lookup);
    if (!sequence) return undefined;
    const exchange = sequence.items[sequence.next % sequence.items.length]!;
    sequence.next += 1;
    this.#served.add(exchange);
    return exchange;
  }

  unserved(): RecordedExchange[] {
    return this.#all.filter((x) => !this.#served.has(x));
  }
}

function parseJson(buffer: Buffer): unknown {
  try {
    return JSON.parse(buffer.toString('utf8'));
  } catch {
    return undefined;
  }
}

export async function startReplay(options: ReplayOptions): Promise<Replay> {
  const { recording } = options;
  const logger = options.logger ?? silentLogger;
  const tokens = new ReplayTokens();
  const answers = new Answers();
  const keys = recording.meta.keys.map((k) => ({ key: k.key, customerId: k.customerId ?? null }));
  const knownKeys = new Set(keys.map((k) => k.key));
  const sent = indexRecording(recording, answers);
  const stats: ReplayStats = { served: 0, notInRecording: 0, missed: [] };

  const miss = (description: string) => {
    stats.notInRecording += 1;
    if (stats.missed.length < MAX_MISSED_KEPT) stats.missed.push(description);
    logger.warn({ request: description }, `replay: not in the recording: ${description}`);
  };

  /** Counts and logs a recorded answer, then writes it. */
  const serve = (req: IncomingMessage, res: ServerResponse, x: RecordedExchange): void => {
    stats.served += 1;
    logger.debug({ seq: x.seq, endpoint: x.endpoint, status: x.response?.status, failure: x.failure?.stage }, 'replay: recorded answer');
    writeRecorded(req, res, x, tokens);
  };
  const context: ReplayContext = { recording, tokens, answers, sent, knownKeys, miss, serve };
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    readBody(req, MAX_BODY_BYTES)
      .then((buffer) => {
        const body = parseJson(buffer);
        if (req.method === 'POST' && path === AUTH_PATH) return handleAuth(context, req, res, body);
        if (req.method === 'POST' && path === QUERY_PATH) return handleQuery(context, req, res, body);
        const x = answers.next(otherKey(req.method ?? 'GET', path, body ?? (buffer.length ? buffer.toString('utf8') : undefined)));
        if (x) return serve(req, res, x);
        miss(`${req.method} ${path}`);
        sendJson(req, res, 404, errorBody('NOT_IN_RECORDING', `not in the recording: ${req.method} ${path}; use POST ${AUTH_PATH} or POST ${QUERY_PATH}`));
      })
      .catch((error: unknown) => {
        if (res.headersSent || res.destroyed) return;
        if (error instanceof BodyTooLarge) sendJson(req, res, 413, errorBody('PAYLOAD_TOO_LARGE', error.message));
        else {
          logger.error({ err: error, path }, 'replay: request failed');
          sendJson(req, res, 500, errorBody('INTERNAL_SERVER_ERROR', 'replay internal error'));
        }
      });
  });
  const { url, port } = await listen(server, options);
  logger.info({ url, exchanges: recording.exchanges.length }, 'replay listening');

  let closed: Promise<void> | undefined;
  return {
    url,
    port,
    recording,
    keys,
    stats,
    unserved: () => answers.unserved(),
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}

/** Answers as recorded: the failure, or the status, the headers that matter and the body (a new token in place). */
function writeRecorded(req: IncomingMessage, res: ServerResponse, x: RecordedExchange, tokens: ReplayTokens): void {
  const response = x.response;
  if (!response || x.failure?.stage === 'no-answer' || x.failure?.stage === 'client-gone') {
    res.socket?.destroy();
    return;
  }
  const headers: Record<string, string> = {};
  for (const name of REPLAYED_RESPONSE_HEADERS) {
    const value = response.headers[name];
    if (value !== undefined) headers[name] = value;
  }
  res.sendDate = false;
  if (x.failure?.stage === 'body') {
    // Announce a body and drop the connection inside it, as the platform did: the first bytes of a gzip stream.
    const gzip = /gzip/i.test(response.contentEncoding);
    res.writeHead(response.status, { ...headers, 'content-length': String(Math.max(3, response.wireBytes)), ...(gzip && { 'content-encoding': 'gzip' }) });
    res.write(Buffer.from([0x1f, 0x8b]), () => res.socket?.destroy());
    return;
  }
  let body = response.body;
  if (x.token && typeof body === 'object' && body !== null && !Array.isArray(body) && 'idToken' in body) {
    body = { ...body, idToken: tokens.issue(x.key ?? '', x.token.claims) };
  }
  const raw = Buffer.from(body !== undefined ? JSON.stringify(body) : (response.bodyText ?? ''), 'utf8');
  const gzip = /gzip/i.test(response.contentEncoding) && acceptsGzip(req.headers['accept-encoding']);
  const payload = gzip ? gzipSync(raw) : raw;
  res.writeHead(response.status, { ...headers, 'content-length': String(payload.length), ...(gzip && { 'content-encoding': 'gzip' }) });
  res.end(payload);
}

/** What the replay's handlers share: the recording, its answers by request, the tokens it issued, and how it answers or misses. */
interface ReplayContext {
  recording: Recording;
  tokens: ReplayTokens;
  answers: Answers;
  /** The variables the recorded run sent, by key and operation: what a miss is compared with. */
  sent: Map<string, unknown[]>;
  knownKeys: Set<string>;
  miss: (description: string) => void;
  serve: (req: IncomingMessage, res: ServerResponse, x: RecordedExchange) => void;
}

/** Files each recorded exchange under the request it answers; the variables the recorded run sent, by key and operation. */
function indexRecording(recording: Recording, answers: Answers): Map<string, unknown[]> {
  const sent = new Map<string, unknown[]>();
  for (const x of recording.exchanges) {
    if (x.endpoint === 'auth') answers.add(`auth\n${x.key ?? ''}`, x);
    else if (x.endpoint === 'query') {
      const operation = operationOf(x.request.body);
      const variables = variablesOf(x.request.body);
      answers.add(queryKey(x.key ?? '', operation, variables), x);
      const of = `${x.key ?? ''}\n${operation}`;
      sent.set(of, [...(sent.get(of) ?? []), redactSecretFields(variables)]);
    }
    else answers.add(otherKey(x.request.method, x.request.path, x.request.body ?? x.request.bodyText), x);
  }
  return sent;
}

function handleAuth(context: ReplayContext, req: IncomingMessage, res: ServerResponse, body: unknown): void {
  const key = typeof body === 'object' && body !== null ? (body as { ApiKey?: unknown }).ApiKey : undefined;
  if (typeof key !== 'string' || !context.knownKeys.has(key)) {
    context.miss(`authentication with API key ${JSON.stringify(typeof key === 'string' ? key.slice(0, 80) : key ?? null)}`);
    sendJson(req, res, 401, errorBody(
      'INVALID_CREDENTIALS',
      `this replay knows the API keys ${[...context.knownKeys].join(', ') || '(none)'}; authenticate with one of them (any secret): the recorded keys were removed`,
    ));
    return;
  }
  const x = context.answers.next(`auth\n${key}`);
  if (!x) {
    context.miss(`authentication with ${key}`);
    sendJson(req, res, 400, errorBody('NOT_IN_RECORDING', `not in the recording: the recorded run never authenticated with ${key}`));
    return;
  }
  context.serve(req, res, x);
}

function handleQuery(context: ReplayContext, req: IncomingMessage, res: ServerResponse, body: unknown): void {
  const bearer = /^Bearer\s+(\S+)$/i.exec(String(req.headers.authorization ?? ''))?.[1];
  const key = bearer === undefined ? undefined : context.tokens.keyOf(bearer);
  if (key === undefined) {
    context.miss(`a query without a token of this replay (${bearer === undefined ? 'no bearer token' : 'an unknown token'})`);
    sendJson(req, res, 401, errorBody('UNAUTHENTICATED', `${bearer === undefined ? 'no bearer token' : 'not a token this replay issued'}: authenticate at ${AUTH_PATH} of this replay first`), {
      'WWW-Authenticate': 'Bearer error="invalid_token"',
    });
    return;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    context.miss(`a query whose body is not a JSON object (${key})`);
    sendJson(req, res, 400, errorBody('BAD_REQUEST', 'the body must be a JSON object {query, variables, operationName}'));
    return;
  }
  const operation = operationOf(body);
  const variables = variablesOf(body);
  const x = context.answers.next(queryKey(key, operation, variables));
  if (x) {
    context.serve(req, res, x);
    return;
  }
  const shown = canonicalJson(redactSecretFields(variables));
  context.miss(`${operation || '(anonymous operation)'} with variables ${shown.length > 500 ? `${shown.slice(0, 500)}…` : shown} (${key})`);
  // 400: the same request gets the same answer, so a client does not retry it (GraphQL over HTTP: a request that
  // cannot be executed); the message says why, with the fix for that cause.
  const message = explainMiss({
    operation: operation || 'anonymous operation',
    key,
    asked: redactSecretFields(variables),
    recorded: context.sent.get(`${key}\n${operation}`) ?? [],
    clock: context.recording.meta.clock,
    now: Date.now(),
  });
  sendJson(req, res, 400, {
    errors: [{ message, extensions: { code: 'NOT_IN_RECORDING', operationName: operation || null, variables, key } }],
  });
}
