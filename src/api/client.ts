import { systemClock, type Clock } from '../clock.ts';
import { validateApiBaseUrl, type Config } from '../config.ts';
import { AuthError, GraphQLResponseError, RateLimitError, type GraphQLErrorEntry } from '../errors.ts';
import { globalSecrets, silentLogger, type Logger, type SecretRegistry } from '../logger.ts';
import { abortError, defaultSleep } from './abort.ts';
import { ADMIN_CONSOLE_KEYS, QUERY_PATH, createAuthenticator, notTheApi, statusError } from './auth.ts';
import type { LoadedDocument } from './documents.ts';
import { ApiTransportError } from './failure.ts';
import { classifyFailure, retryDelay } from './retry.ts';
import { jwtCustomer } from './jwt.ts';
import { FileTokenStore } from './token-cache.ts';
import { TokenProvider } from './token.ts';
import { isGraphQLResponse, readJsonAnswer } from './answer.ts';
import { KeyBudget } from './budget/key-budget.ts';
import { MemoryKeyStore } from './budget/memory-store.ts';
import { DEFAULT_BUDGET, type ApiBudget, type BudgetSettings, type Outcome, type Permit } from './budget/types.ts';
import { permanentReason } from './graphql-errors.ts';
import { createTransport, type HttpResponse } from './transport.ts';
import { inSpan, tracer } from '../tracing.ts';

export interface ApiClientOptions {
  /** https:// (or http:// on a loopback host, for the sandbox). */
  baseUrl: string;
  apiKey: string;
  apiSecret: string;
  clock?: Clock;
  logger?: Logger;
  /** Timeout per attempt, attempts per request and backoff bounds; defaults match the config defaults. */
  http?: Partial<Config['http']>;
  /** Replace the token when less than this remains (capped at half its lifetime). Default 5 minutes. */
  refreshMarginMs?: number;
  /** Keep tokens between processes in this file (mode 0600). Default: no cache. */
  tokenCacheFile?: string;
  /** Uniform in [0, 1), for backoff jitter. */
  random?: () => number;
  /**
   * Retry answers carrying GraphQL `errors` (queries only). Off by default because most GraphQL errors are
   * permanent (a bad argument, a missing field); turn it on where the platform is known to produce transient
   * page-level errors, as the sandbox's `graphqlError` fault does.
   */
  retryGraphQLErrors?: boolean;
  /** A Retry-After longer than this is not waited for; the RateLimitError surfaces. Default 120 s. */
  maxRetryAfterMs?: number;
  secrets?: SecretRegistry;
  /** Waits between retries; tests inject one that records the delays and returns at once. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /**
   * The key's API budget: how many queries may be in flight and start per second, adapted to the platform's answers
   * (src/api/budget/). Pass the one the key shares with other clients and processes (src/app/clients.ts); default:
   * one held by this client alone, adaptive, with the settings of `budgetSettings`.
   */
  budget?: ApiBudget;
  budgetSettings?: Partial<BudgetSettings>;
}

export interface ApiStats {
  /** Calls of request(). */
  requests: number;
  /** POSTs to the auth endpoint, successful or not. */
  authCalls: number;
  /** New tokens that replaced an earlier one. */
  tokenRefreshes: number;
  /** 401s from the query endpoint that made us drop the token and authenticate again. */
  reauthsOn401: number;
  /** Waits before another attempt, by any reason. */
  retries: number;
  retriesByReason: Record<string, number>;
  /** Queries sent to the query endpoint: every attempt, a resend after a 401 included. */
  queriesSent: number;
  /** Answers 429 (Too Many Requests) to this client's queries. */
  rateLimited: number;
  /** The key's in-flight limit now (adaptive by default; every process using the key together with a shared budget). */
  inFlightLimit: number;
  /** The most queries of the key this process had in flight at once. */
  maxInFlight: number;
  /** Times an answer paused every query of the key for its Retry-After (a refusal at a load the key had sustained). */
  keyPauses: number;
}

export interface RequestOptions {
  signal?: AbortSignal;
  /** Override: may this request be repeated after an ambiguous failure? Default: queries yes, mutations no. */
  idempotent?: boolean;
}

export interface ApiClient {
  /** Sends the document and resolves to its `data`. */
  request<T = unknown>(doc: LoadedDocument, variables?: Record<string, unknown>, options?: RequestOptions): Promise<T>;
  /** A valid token (authenticating if needed), with its expiry and decoded JWT claims. */
  token(options?: { signal?: AbortSignal }): Promise<{ token: string; expiresAt: number; claims: Record<string, unknown> | undefined }>;
  readonly stats: ApiStats;
  /**
   * The platform's time: the `Date` header of the latest successful query answer, in epoch ms (whole seconds, as
   * the header carries them), or undefined before any such answer or when the platform sends no valid `Date`. The
   * sync engine caps its watermark with it, so a local clock running ahead cannot move the watermark past data the
   * platform has not produced yet.
   */
  serverTime(): number | undefined;
  /**
   * The customer the key belongs to, from its token's claims (undefined when the token names none). Asked once per
   * client; a failure is not remembered.
   */
  customerOf(options?: { signal?: AbortSignal }): Promise<string | undefined>;
  close(): Promise<void>;
}

export const HTTP_DEFAULTS: Config['http'] = { timeoutMs: 30_000, maxAttempts: 6, backoffMinMs: 500, backoffMaxMs: 30_000 };
export const DEFAULT_REFRESH_MARGIN_MS = 5 * 60_000;
const DEFAULT_MAX_RETRY_AFTER_MS = 120_000;

/**
 * An attempt's exchange with the budget: the leave it sends under (taken right before sending, once the token is
 * ready, so the load it was let go at is the load the platform sees) and how long the exchange took.
 */
interface Exchange {
  permit?: Permit;
  latencyMs?: number;
}

/** How an attempt's failure reads to the budget: a refusal, an overload, a timeout, or nothing it learns from. */
function outcomeOf(error: unknown): Outcome {
  if (error instanceof RateLimitError) return { kind: 'rate_limited', ...(error.retryAfterMs !== undefined && { retryAfterMs: error.retryAfterMs }) };
  if (error instanceof ApiTransportError) {
    if (error.status === 503) return { kind: 'overloaded', ...(error.retryAfterMs !== undefined && { retryAfterMs: error.retryAfterMs }) };
    if (error.reason === 'timeout') return { kind: 'timeout' };
  }
  return { kind: 'neutral' };
}

/** An HTTP `Date` header in epoch ms, floored to the second; undefined when absent or unparsable. */
export function parseDateHeader(value: string | string[] | undefined): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return undefined;
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? Math.floor(ms / 1000) * 1000 : undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Creates the client for one API key. It holds one token, replaced proactively, and sends every request through
 * the retry policy in retry.ts (see docs/api-client.md for the table).
 *
 * @example
 * const client = createApiClient({ baseUrl: config.apiBaseUrl, apiKey: c.apiKey, apiSecret: c.apiSecret, logger });
 * const data = await client.request<{ buildings: Building[] }>(loadDocument('jobs/buildings.graphql'), { nameLike: null });
 */
export function createApiClient(options: ApiClientOptions): ApiClient {
  const baseUrl = validateApiBaseUrl(options.baseUrl, 'baseUrl');
  const http = { ...HTTP_DEFAULTS, ...options.http };
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const secrets = options.secrets ?? globalSecrets;
  const random = options.random ?? Math.random;
  const sleep = options.sleep ?? defaultSleep;
  const maxRetryAfterMs = options.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS;
  secrets.add(options.apiSecret);

  const transport = createTransport({ baseUrl, timeoutMs: http.timeoutMs });
  let serverTime: number | undefined;
  const counters = { requests: 0, authCalls: 0, reauthsOn401: 0, retries: 0, retriesByReason: {} as Record<string, number>, queriesSent: 0, rateLimited: 0 };
  const budget =
    options.budget ??
    (() => {
      const settings = { ...DEFAULT_BUDGET, ...options.budgetSettings };
      return new KeyBudget(new MemoryKeyStore(settings, clock.now()), settings, { clock, sleep, logger, label: options.apiKey, maxPauseMs: maxRetryAfterMs });
    })();
  const tokens = new TokenProvider({
    fetchToken: createAuthenticator({
      transport,
      baseUrl,
      apiKey: options.apiKey,
      apiSecret: options.apiSecret,
      secrets,
      clock,
      onCall: () => void counters.authCalls++,
    }),
    clock,
    refreshMarginMs: options.refreshMarginMs ?? DEFAULT_REFRESH_MARGIN_MS,
    secrets,
    logger,
    ...(options.tokenCacheFile && { store: new FileTokenStore(options.tokenCacheFile, baseUrl, options.apiKey, logger) }),
  });
  const stats: ApiStats = {
    get requests() { return counters.requests; },
    get authCalls() { return counters.authCalls; },
    get tokenRefreshes() { return tokens.refreshes; },
    get reauthsOn401() { return counters.reauthsOn401; },
    get retries() { return counters.retries; },
    get retriesByReason() { return { ...counters.retriesByReason }; },
    get queriesSent() { return counters.queriesSent; },
    get rateLimited() { return counters.rateLimited; },
    get inFlightLimit() { return budget.stats().limit; },
    get maxInFlight() { return budget.stats().maxInFlight; },
    get keyPauses() { return budget.stats().pauses; },
  };

  /**
   * Runs `attempt` under the retry policy: non-retryable errors stop at once, others wait and go again. A query's
   * attempt sends under a leave of the key's budget (attemptQuery takes it), given back here with how the answer went;
   * a refusal that paused the whole key is waited out by the budget, once for every query of the key, not here.
   */
  async function withRetries<T>(
    what: string,
    idempotent: boolean,
    signal: AbortSignal | undefined,
    attempt: (exchange: Exchange) => Promise<T>,
    gate?: { operation: string; query: boolean },
  ): Promise<T> {
    // GraphQL errors are retried for queries only: a mutation answered with errors may have been partly applied,
    // even one marked idempotent for transport failures.
    const policy = { idempotent, retryGraphQLErrors: (gate?.query ?? false) && (options.retryGraphQLErrors ?? false) };
    // The attempts are counted here; retry.ts decides, and the injected sleep waits, so Retry-After and fake clocks apply.
    for (let attemptNumber = 1; ; attemptNumber++) {
      signal?.throwIfAborted();
      const exchange: Exchange = {};
      let error: unknown;
      try {
        const result = await attempt(exchange);
        exchange.permit?.release({ kind: 'clean', latencyMs: exchange.latencyMs ?? 0, operation: gate!.operation }).then(budgetTook, (e: unknown) => budgetFailed(e));
        signal?.throwIfAborted();
        return result;
      } catch (caught) {
        error = caught;
      }
      const released = exchange.permit ? await exchange.permit.release(outcomeOf(error)).then(budgetTook, (e: unknown) => budgetFailed(e)) : undefined;
      if (signal?.aborted) throw abortError(signal);
      // A 429 answer (the budget's own refusal to wait out a long pause is no answer).
      if (error instanceof RateLimitError && exchange.permit) counters.rateLimited++;
      const decision = classifyFailure(error, policy);
      const retriesLeft = http.maxAttempts - attemptNumber;
      if (!decision.retry || retriesLeft <= 0) throw error;
      const delayMs = retryDelay(decision, attemptNumber, { minMs: http.backoffMinMs, maxMs: http.backoffMaxMs, random, maxRetryAfterMs });
      if (delayMs === undefined) {
        if (decision.retryAfterMs !== undefined) {
          logger.warn({ what, retryAfterMs: decision.retryAfterMs, maxRetryAfterMs }, `not retrying ${what}: the platform asked to wait longer than we block for`);
        }
        throw error;
      }
      counters.retries++;
      counters.retriesByReason[decision.reason] = (counters.retriesByReason[decision.reason] ?? 0) + 1;
      tracer().event('retry', { 'retry.reason': decision.reason, 'retry.attempt': attemptNumber, 'retry.delay_ms': delayMs, 'http.response.status_code': (error as ApiTransportError).status });
      const keyWide = released?.paused === true && decision.retryAfterMs !== undefined;
      logger.warn(
        { what, reason: decision.reason, attempt: attemptNumber, retriesLeft, delayMs, status: (error as ApiTransportError).status, retryAfterMs: decision.retryAfterMs, keyWide },
        `retrying ${what} in ${delayMs} ms (${decision.reason}${keyWide ? ', every query of the key waits' : ''}): ${(error as Error).message}`,
      );
      if (!keyWide) await sleep(delayMs, signal);
    }
  }

  // One cause (the budget's connection dropped) fails every permit in flight: it is logged once, and again only
  // after a release went through or the cause changed.
  let budgetCause: string | undefined;
  function budgetFailed(error: unknown): { paused: boolean } {
    const message = (error as Error)?.message ?? String(error);
    if (message !== budgetCause) {
      budgetCause = message;
      logger.warn({ err: error }, `the API budget could not take an answer in: ${message}`);
    }
    return { paused: false };
  }
  function budgetTook<T>(released: T): T {
    budgetCause = undefined;
    return released;
  }

  async function attemptQuery(doc: LoadedDocument, body: unknown, signal: AbortSignal | undefined, exchange: Exchange): Promise<unknown> {
    const label = doc.operationName ?? '(anonymous)';
    for (let reauthed = false; ; reauthed = true) {
      const info = await tokens.get(signal);
      // A resend after a 401 goes under a fresh leave: the refused exchange taught the budget nothing.
      void exchange.permit?.release({ kind: 'neutral' }).catch((e: unknown) => budgetFailed(e));
      exchange.permit = await budget.acquire(signal);
      counters.queriesSent++;
      const sentAt = performance.now();
      const response = await transport.post(
        QUERY_PATH,
        body,
        { authorization: `Bearer ${info.token}`, accept: 'application/json', 'accept-encoding': 'gzip' },
        signal,
      );
      exchange.latencyMs = performance.now() - sentAt;
      if (response.status === 401) {
        if (reauthed) {
          throw new AuthError(
            `the platform refused a freshly obtained token for API key ${JSON.stringify(options.apiKey)} (HTTP 401 twice on ${label}). ` +
              'Check that the key is still active and not revoked, that API_BASE_URL is the environment that issued the key, and that this host\'s clock is correct',
            { status: 401 },
          );
        }
        // Token expired early or was revoked: drop it (once for all requests that used it) and try once more.
        if (tokens.invalidate(info.token)) {
          counters.reauthsOn401++;
          logger.warn({ operationName: label }, 'the platform refused the token (HTTP 401); authenticating again');
        }
        continue;
      }
      if (response.status === 403) {
        const mutation = doc.operationType === 'mutation';
        throw new AuthError(
          `API key ${JSON.stringify(options.apiKey)} may not run ${doc.operationType} ${label} (HTTP 403). ` +
            (mutation
              ? 'Mutations need scope WritePublicApi on the key and write permission on the user who created it'
              : 'Queries need scope ReadPublicApi on the key') +
            `: grant it in ${ADMIN_CONSOLE_KEYS} (a partner opens the customer first with Open as Customer)`,
          { status: 403 },
        );
      }
      if (response.status === 400 || (response.status >= 200 && response.status < 300)) {
        const json = response.status === 400 ? safeJson(response) : readAnswer(response);
        if (isPlainObject(json) && Array.isArray(json.errors) && json.errors.length > 0) {
          const errors = json.errors as GraphQLErrorEntry[];
          const permanent = permanentReason(errors, { status: response.status, hasData: 'data' in json, document: doc.document });
          throw new GraphQLResponseError(doc.operationName, errors, permanent ? { permanent } : undefined);
        }
        if (response.status === 200 && isPlainObject(json) && 'data' in json && json.data !== null) {
          // The latest answer wins (not the largest): if the platform's clock is stepped back, we follow it.
          const date = parseDateHeader(response.headers.date);
          if (date !== undefined) serverTime = date;
          return json.data;
        }
        if (response.status !== 400) {
          throw new ApiTransportError('client_error', `POST ${QUERY_PATH}: the answer to ${label} has neither data nor errors`, {
            status: response.status,
            retryable: false,
          });
        }
      }
      if (response.status === 404 || response.status === 405) throw notTheApi(response.status, baseUrl, QUERY_PATH);
      throw statusError(response, QUERY_PATH, clock, secrets);
    }
  }

  let mislabelWarned = false;
  /** The answer's JSON whatever its label; a mislabel is said once per client (it is the platform's, not the page's). */
  function readAnswer(response: HttpResponse): unknown {
    const answer = readJsonAnswer(response, QUERY_PATH, isGraphQLResponse, secrets);
    if (answer.mislabelled && !mislabelWarned) {
      mislabelWarned = true;
      logger.warn(
        { contentType: answer.mislabelled },
        `the platform labels its GraphQL answers Content-Type ${answer.mislabelled} instead of application/json; ` +
          'they are read as JSON anyway (said once per client)',
      );
    }
    return answer.json;
  }

  function safeJson(response: HttpResponse): unknown {
    try {
      return readAnswer(response);
    } catch {
      return undefined;
    }
  }

  let customer: Promise<string | undefined> | undefined;
  const client: ApiClient = {
    stats,
    async request<T>(doc: LoadedDocument, variables: Record<string, unknown> = {}, requestOptions: RequestOptions = {}): Promise<T> {
      // The platform rejects a string (or array) here; catch the mistake before it costs a round trip.
      if (!isPlainObject(variables)) {
        throw new TypeError(`variables for ${doc.operationName ?? doc.file} must be an object, got ${Array.isArray(variables) ? 'an array' : typeof variables}`);
      }
      counters.requests++;
      const body = { query: doc.source, variables, ...(doc.operationName !== undefined && { operationName: doc.operationName }) };
      const idempotent = requestOptions.idempotent ?? doc.operationType === 'query';
      const what = `${doc.operationType} ${doc.operationName ?? '(anonymous)'}`;
      const gate = { operation: doc.operationName ?? '(anonymous)', query: doc.operationType === 'query' };
      // One span per request, its retries and token refreshes as events on it (src/tracing.ts; a no-op unless on).
      return inSpan('api.request', { 'graphql.operation.name': gate.operation, 'graphql.operation.type': doc.operationType }, () =>
        withRetries(what, idempotent, requestOptions.signal, (exchange) => attemptQuery(doc, body, requestOptions.signal, exchange), gate),
      ) as Promise<T>;
    },
    async token(tokenOptions = {}) {
      const info = await withRetries('authentication', true, tokenOptions.signal, () => tokens.get(tokenOptions.signal));
      return { token: info.token, expiresAt: info.expiresAt, claims: info.claims };
    },
    serverTime: () => serverTime,
    customerOf(customerOptions = {}) {
      customer ??= client.token(customerOptions).then(
        (info) => jwtCustomer(info.claims),
        (error: unknown) => {
          customer = undefined;
          throw error;
        },
      );
      return customer;
    },
    close: () => transport.close(),
  };
  return client;
}
