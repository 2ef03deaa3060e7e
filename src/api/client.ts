import { systemClock, type Clock } from '../clock.ts';
import { validateApiBaseUrl, type Config } from '../config.ts';
import { globalSecrets, silentLogger, type Logger, type SecretRegistry } from '../logger.ts';
import { defaultSleep } from './abort.ts';
import { createAuthenticator } from './auth.ts';
import type { LoadedDocument } from './documents.ts';
import { jwtCustomer } from './jwt.ts';
import { FileTokenStore } from './token-cache.ts';
import { TokenProvider } from './token.ts';
import { KeyBudget } from './budget/key-budget.ts';
import { MemoryKeyStore } from './budget/memory-store.ts';
import { DEFAULT_BUDGET, type ApiBudget, type BudgetSettings } from './budget/types.ts';
import { BudgetUse } from './budget-use.ts';
import { withRetries, type ClientCounters, type RetryContext } from './query-retry.ts';
import { AnswerReader, attemptQuery, isPlainObject, type QueryContext } from './query-send.ts';
import { createTransport, type Transport } from './transport.ts';
import { inSpan } from '../tracing.ts';

export { parseDateHeader } from './query-send.ts';

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



/** A budget held by this client alone, when none is shared: adaptive, with the settings of `budgetSettings`. */
function ownBudget(
  options: ApiClientOptions,
  deps: { clock: Clock; sleep: (ms: number, signal?: AbortSignal) => Promise<void>; logger: Logger; maxRetryAfterMs: number },
): ApiBudget {
  const settings = { ...DEFAULT_BUDGET, ...options.budgetSettings };
  const { clock, sleep, logger, maxRetryAfterMs } = deps;
  return new KeyBudget(new MemoryKeyStore(settings, clock.now()), settings, { clock, sleep, logger, label: options.apiKey, maxPauseMs: maxRetryAfterMs });
}

/** The key's one token, obtained from the auth endpoint, replaced ahead of its expiry, cached in a file if asked. */
function tokenProvider(
  options: ApiClientOptions,
  deps: { transport: Transport; baseUrl: string; clock: Clock; secrets: SecretRegistry; logger: Logger; onAuthCall: () => void },
): TokenProvider {
  const { transport, baseUrl, clock, secrets, logger } = deps;
  return new TokenProvider({
    fetchToken: createAuthenticator({
      transport,
      baseUrl,
      apiKey: options.apiKey,
      apiSecret: options.apiSecret,
      secrets,
      clock,
      onCall: deps.onAuthCall,
    }),
    clock,
    refreshMarginMs: options.refreshMarginMs ?? DEFAULT_REFRESH_MARGIN_MS,
    secrets,
    logger,
    ...(options.tokenCacheFile && { store: new FileTokenStore(options.tokenCacheFile, baseUrl, options.apiKey, logger) }),
  });
}

/** The client's figures, read live from its counters, token provider and budget. */
function statsOf(counters: ClientCounters, tokens: TokenProvider, budget: ApiBudget): ApiStats {
  return {
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
  const counters: ClientCounters = { requests: 0, authCalls: 0, reauthsOn401: 0, retries: 0, retriesByReason: {}, queriesSent: 0, rateLimited: 0 };
  const budget = options.budget ?? ownBudget(options, { clock, sleep, logger, maxRetryAfterMs });
  const tokens = tokenProvider(options, { transport, baseUrl, clock, secrets, logger, onAuthCall: () => void counters.authCalls++ });
  const stats = statsOf(counters, tokens, budget);
  const budgetUse = new BudgetUse(logger);
  const retry: RetryContext = { http, retryGraphQLErrors: options.retryGraphQLErrors ?? false, random, sleep, maxRetryAfterMs, logger, counters, budgetUse };
  const query: QueryContext = {
    apiKey: options.apiKey,
    baseUrl,
    clock,
    secrets,
    logger,
    transport,
    tokens,
    budget,
    budgetUse,
    counters,
    answers: new AnswerReader(logger, secrets),
    answered: false,
    onServerTime: (date) => void (serverTime = date),
  };

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
        withRetries(retry, what, idempotent, requestOptions.signal, (exchange) => attemptQuery(query, doc, body, requestOptions.signal, exchange), gate),
      ) as Promise<T>;
    },
    async token(tokenOptions = {}) {
      const info = await withRetries(retry, 'authentication', true, tokenOptions.signal, () => tokens.get(tokenOptions.signal));
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
