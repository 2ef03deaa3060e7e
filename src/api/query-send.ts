import type { Clock } from '../clock.ts';
import { AuthError, GraphQLResponseError, type GraphQLErrorEntry } from '../errors.ts';
import type { Logger, SecretRegistry } from '../logger.ts';
import { isGraphQLResponse, readJsonAnswer } from './answer.ts';
import { ADMIN_CONSOLE_KEYS, QUERY_PATH, notTheApi, statusError } from './auth.ts';
import type { ApiBudget } from './budget/types.ts';
import type { BudgetUse, Exchange } from './budget-use.ts';
import type { LoadedDocument } from './documents.ts';
import { ApiTransportError } from './failure.ts';
import { permanentReason } from './graphql-errors.ts';
import type { ClientCounters } from './query-retry.ts';
import type { TokenProvider } from './token.ts';
import type { HttpResponse, Transport } from './transport.ts';

/** An HTTP `Date` header in epoch ms, floored to the second; undefined when absent or unparsable. */
export function parseDateHeader(value: string | string[] | undefined): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return undefined;
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? Math.floor(ms / 1000) * 1000 : undefined;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Reads a query's answer as JSON whatever its label; a mislabel is said once per client (it is the platform's, not the page's). */
export class AnswerReader {
  private mislabelWarned = false;

  constructor(
    private readonly logger: Logger,
    private readonly secrets: SecretRegistry,
  ) {}

  read(response: HttpResponse): unknown {
    const answer = readJsonAnswer(response, QUERY_PATH, isGraphQLResponse, this.secrets);
    if (answer.mislabelled && !this.mislabelWarned) {
      this.mislabelWarned = true;
      this.logger.warn(
        { contentType: answer.mislabelled },
        `the platform labels its GraphQL answers Content-Type ${answer.mislabelled} instead of application/json; ` +
          'they are read as JSON anyway (said once per client)',
      );
    }
    return answer.json;
  }

  readOrUndefined(response: HttpResponse): unknown {
    try {
      return this.read(response);
    } catch {
      return undefined;
    }
  }
}

/** What sending one query needs of its client: the key, its token, its budget and where to send. */
export interface QueryContext {
  apiKey: string;
  baseUrl: string;
  clock: Clock;
  secrets: SecretRegistry;
  logger: Logger;
  transport: Transport;
  tokens: TokenProvider;
  budget: ApiBudget;
  budgetUse: BudgetUse;
  counters: ClientCounters;
  answers: AnswerReader;
  /** Whether the query endpoint has answered a GraphQL response to this client: a 404 after that is not API_BASE_URL's. */
  answered: boolean;
  /** The latest successful answer's `Date` (the latest wins, not the largest: a clock stepped back is followed). */
  onServerTime(date: number): void;
}

/** One attempt of a query: under a leave of the key's budget, with one fresh token after a 401; resolves to `data`. */
export async function attemptQuery(ctx: QueryContext, doc: LoadedDocument, body: unknown, signal: AbortSignal | undefined, exchange: Exchange): Promise<unknown> {
  const label = doc.operationName ?? '(anonymous)';
  for (let reauthed = false; ; reauthed = true) {
    const info = await ctx.tokens.get(signal);
    ctx.budgetUse.resend(exchange);
    exchange.permit = await ctx.budget.acquire(signal);
    ctx.counters.queriesSent++;
    const sentAt = performance.now();
    const response = await ctx.transport.post(
      QUERY_PATH,
      body,
      { authorization: `Bearer ${info.token}`, accept: 'application/json', 'accept-encoding': 'gzip' },
      signal,
    );
    exchange.latencyMs = performance.now() - sentAt;
    if (response.status === 401) {
      if (reauthed) {
        throw new AuthError(
          `the platform refused a freshly obtained token for API key ${JSON.stringify(ctx.apiKey)} (HTTP 401 twice on ${label}). ` +
            'Check that the key is still active and not revoked, that API_BASE_URL is the environment that issued the key, and that this host\'s clock is correct',
          { status: 401 },
        );
      }
      // Token expired early or was revoked: drop it (once for all requests that used it) and try once more.
      if (ctx.tokens.invalidate(info.token)) {
        ctx.counters.reauthsOn401++;
        ctx.logger.warn({ operationName: label }, 'the platform refused the token (HTTP 401); authenticating again');
      }
      continue;
    }
    if (response.status === 403) {
      const mutation = doc.operationType === 'mutation';
      throw new AuthError(
        `API key ${JSON.stringify(ctx.apiKey)} may not run ${doc.operationType} ${label} (HTTP 403). ` +
          (mutation
            ? 'Mutations need scope WritePublicApi on the key and write permission on the user who created it'
            : 'Queries need scope ReadPublicApi on the key') +
          `: grant it in ${ADMIN_CONSOLE_KEYS} (a partner opens the customer first with Open as Customer)`,
        { status: 403 },
      );
    }
    if (response.status === 400 || (response.status >= 200 && response.status < 300)) {
      const json = response.status === 400 ? ctx.answers.readOrUndefined(response) : ctx.answers.read(response);
      if (isGraphQLResponse(json)) ctx.answered = true;
      if (isPlainObject(json) && Array.isArray(json.errors) && json.errors.length > 0) {
        const errors = json.errors as GraphQLErrorEntry[];
        const permanent = permanentReason(errors, { status: response.status, hasData: 'data' in json, document: doc.document });
        throw new GraphQLResponseError(doc.operationName, errors, permanent ? { permanent } : undefined);
      }
      if (response.status === 200 && isPlainObject(json) && 'data' in json && json.data !== null) {
        // The latest answer wins (not the largest): if the platform's clock is stepped back, we follow it.
        const date = parseDateHeader(response.headers.date);
        if (date !== undefined) ctx.onServerTime(date);
        return json.data;
      }
      if (response.status !== 400) {
        throw new ApiTransportError('client_error', `POST ${QUERY_PATH}: the answer to ${label} has neither data nor errors`, {
          status: response.status,
          retryable: false,
        });
      }
    }
    if (response.status === 404 || response.status === 405) throw notTheApi(response.status, ctx.baseUrl, QUERY_PATH, ctx.answered);
    throw statusError(response, QUERY_PATH, ctx.clock, ctx.secrets);
  }
}
