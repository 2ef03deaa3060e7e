import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { execute, GraphQLError, Kind, parse, validate, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import type { Clock } from '../clock.ts';
import type { Logger } from '../logger.ts';
import type { DataModel } from './data.ts';
import type { DeliveryEngine } from './deliveries.ts';
import type { FaultDraw, FaultKind, FaultPlan } from './faults.ts';
import { Misbehaviour, realCursor, type Replacement } from './misbehave.ts';
import type { ResolverContext } from './graphql.ts';
import type { SandboxStats } from './interfaces.ts';
import { BodyTooLarge, errorBody, isJsonContentType, readBody, sendJson, sendTruncatedGzip } from './respond.ts';
import type { TokenService } from './tokens.ts';
import type { WebhookRegistry } from './webhook-registry.ts';

export const AUTH_PATH = '/api/v1/auth';
export const QUERY_PATH = '/api/external/query';
const MAX_BODY_BYTES = 1024 * 1024;

export interface HandlerDeps {
  model: DataModel;
  tokens: TokenService;
  schema: GraphQLSchema;
  /** The root resolvers of the API variant served (variants/registry.ts). */
  rootValue: object;
  registry: WebhookRegistry;
  engine: DeliveryEngine;
  clock: Clock;
  stats: SandboxStats;
  logger: Logger;
  faults: () => FaultPlan;
  /** The deliberate contract violation in force, if any (misbehave.ts). */
  misbehave: () => Misbehaviour | undefined;
  /** Aborted on close, so slow-fault timers do not hold the process. */
  closing: AbortSignal;
}

/** A request answered early with an HTTP error; thrown inside the pipeline, turned into a response at its edge. */
class HttpFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

const SERVER_ERROR_STATUSES = [500, 502, 503] as const;

export function createHandler(deps: HandlerDeps): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const started = Date.now();
    const path = (req.url ?? '/').split('?')[0];
    const route = path === AUTH_PATH ? handleAuth : path === QUERY_PATH ? handleQuery : undefined;
    // A request is answered under the faults in force when it arrived: one still in its latency when setFaults
    // replaces them (a request a stopped run left behind) takes no request number of the new ones.
    const faults = deps.faults();
    const arrived: HandlerDeps = { ...deps, faults: () => faults };
    const latencyMs = faults.options.latencyMs ?? 0;
    const run = route
      ? req.method === 'POST'
        ? latencyMs > 0
          ? // Real time: a platform far away (or a slow one) answers every request this much later.
            sleep(latencyMs, undefined, { signal: deps.closing })
              .catch(() => undefined)
              .then(() => route(arrived, req, res))
          : route(arrived, req, res)
        : Promise.reject(new HttpFailure(405, 'METHOD_NOT_ALLOWED', `${path} accepts POST only`, { Allow: 'POST' }))
      : Promise.reject(new HttpFailure(404, 'NOT_FOUND', `no endpoint ${path}; use POST ${AUTH_PATH} or POST ${QUERY_PATH}`));
    run
      .catch((error: unknown) => {
        if (res.headersSent || res.destroyed) return;
        if (error instanceof HttpFailure) {
          sendJson(req, res, error.status, errorBody(error.code, error.message), error.headers);
        } else if (error instanceof BodyTooLarge) {
          sendJson(req, res, 413, errorBody('PAYLOAD_TOO_LARGE', error.message));
        } else if (!deps.closing.aborted) {
          deps.logger.error({ err: error, path }, 'sandbox request failed');
          sendJson(req, res, 500, errorBody('INTERNAL_SERVER_ERROR', 'sandbox internal error'));
        }
      })
      .finally(() => deps.logger.debug({ method: req.method, path, status: res.statusCode, ms: Date.now() - started }, 'sandbox request'));
  };
}

/** Applies the faults that answer (or drop) a request before any processing; returns true when it was answered. */
async function applyEarlyFault(deps: HandlerDeps, draw: FaultDraw | undefined, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
  const plan = deps.faults();
  const count = (kind: FaultKind) => (deps.stats.faults[kind] = (deps.stats.faults[kind] ?? 0) + 1);
  const fault = draw?.kind;
  switch (fault) {
    case 'connectionReset':
      count(fault);
      req.socket.destroy();
      return true;
    case 'serverError': {
      const n = count(fault);
      const status = SERVER_ERROR_STATUSES[(n - 1) % SERVER_ERROR_STATUSES.length]!;
      sendJson(req, res, status, errorBody('SERVICE_UNAVAILABLE', `sandbox injected fault: HTTP ${status}`));
      return true;
    }
    case 'rateLimit':
      count(fault);
      sendJson(req, res, 429, errorBody('RATE_LIMITED', 'sandbox injected fault: too many requests'), {
        'Retry-After': String(plan.retryAfterSeconds),
      });
      return true;
    case 'slow':
      count(fault);
      // Real time on purpose: the point is to outlast the client's own (real) timeout.
      await sleep(draw?.slowMs ?? plan.slowMs, undefined, { signal: deps.closing }).catch(() => undefined);
      return res.destroyed || deps.closing.aborted;
    default:
      return false;
  }
}

function parseJsonObject(req: IncomingMessage, raw: Buffer): Record<string, unknown> {
  if (!isJsonContentType(req.headers['content-type'])) {
    throw new HttpFailure(415, 'UNSUPPORTED_MEDIA_TYPE', `send Content-Type: application/json (got ${JSON.stringify(req.headers['content-type'] ?? null)})`);
  }
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch (error) {
    throw new HttpFailure(400, 'BAD_REQUEST', `request body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new HttpFailure(400, 'BAD_REQUEST', 'request body must be a JSON object');
  }
  return body as Record<string, unknown>;
}

async function handleAuth(deps: HandlerDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  deps.stats.authCalls++;
  // The whole request is read first, so a fault answers (or drops) a complete request, as a server would.
  const raw = await readBody(req, MAX_BODY_BYTES);
  const plan = deps.faults();
  if (plan.options.applyToAuth) {
    const draw = plan.next();
    const fault = draw?.kind;
    if (fault !== 'truncatedGzip' && fault !== 'revokeToken' && fault !== 'graphqlError') {
      if (await applyEarlyFault(deps, draw, req, res)) return;
    }
  }
  const body = parseJsonObject(req, raw);
  const echo = deps.misbehave()?.authReplacement(body);
  if (echo) return sendRaw(res, echo);
  for (const field of ['ApiKey', 'ApiSecret'] as const) {
    if (typeof body[field] !== 'string' || body[field] === '') {
      throw new HttpFailure(400, 'BAD_REQUEST', `${field} is required and must be a non-empty string`);
    }
  }
  const issued = deps.tokens.issue(body.ApiKey as string, body.ApiSecret as string);
  if (!issued) throw new HttpFailure(401, 'INVALID_CREDENTIALS', 'unknown API key or wrong secret');
  sendJson(req, res, 200, issued);
}

function selectOperation(document: DocumentNode, operationName: string | undefined): OperationDefinitionNode {
  const operations = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  if (operations.length === 0) throw new HttpFailure(400, 'BAD_REQUEST', 'the document contains no operation');
  if (operationName !== undefined) {
    const op = operations.find((o) => o.name?.value === operationName);
    if (!op) throw new HttpFailure(400, 'BAD_REQUEST', `operationName ${JSON.stringify(operationName)} names no operation in the document`);
    return op;
  }
  const named = operations.find((o) => o.name);
  if (named) {
    throw new HttpFailure(400, 'BAD_REQUEST', `operationName is required when the document contains a named operation (send "operationName": ${JSON.stringify(named.name!.value)})`);
  }
  if (operations.length > 1) throw new HttpFailure(400, 'BAD_REQUEST', 'the document contains several operations; name them and send operationName');
  return operations[0]!;
}

type TokenCheck = Extract<ReturnType<HandlerDeps['tokens']['check']>, { ok: true }>;

/** The request's bearer token checked (401 when it is not valid, or when the injected fault revokes it). */
function authenticate(deps: HandlerDeps, req: IncomingMessage, fault: FaultKind | undefined): TokenCheck {
  const check = deps.tokens.check(req.headers.authorization);
  const unauthorized = (reason: string) =>
    new HttpFailure(401, 'UNAUTHENTICATED', `bearer token ${reason}; authenticate again at ${AUTH_PATH}`, {
      'WWW-Authenticate': `Bearer error="invalid_token", error_description="${reason}"`,
    });
  if (!check.ok) throw unauthorized(check.reason);
  if (fault === 'revokeToken') {
    deps.stats.faults.revokeToken = (deps.stats.faults.revokeToken ?? 0) + 1;
    deps.tokens.revoke(check.claims.jti);
    throw unauthorized('revoked');
  }
  return check;
}

/** The GraphQL request body's fields, each checked for its type (400 naming the field). */
function readQueryBody(req: IncomingMessage, raw: Buffer): { query: string; variables: unknown; operationName: string | undefined } {
  const body = parseJsonObject(req, raw);
  if (typeof body.query !== 'string' || body.query.trim() === '') {
    throw new HttpFailure(400, 'BAD_REQUEST', 'query is required and must be a GraphQL document string');
  }
  const variables = body.variables ?? undefined;
  if (variables !== undefined && (typeof variables !== 'object' || Array.isArray(variables))) {
    throw new HttpFailure(400, 'BAD_REQUEST', `variables must be a JSON object, got ${Array.isArray(variables) ? 'an array' : `a ${typeof variables}`}`);
  }
  const operationName = body.operationName ?? undefined;
  if (operationName !== undefined && typeof operationName !== 'string') {
    throw new HttpFailure(400, 'BAD_REQUEST', 'operationName must be a string');
  }
  return { query: body.query, variables, operationName };
}

/** The operation allowed by the API key's scopes and its owner's permission (403), subscriptions refused (400). */
function authorize(operation: OperationDefinitionNode, claims: TokenCheck['claims']): void {
  const scopes = claims.scopes;
  if (operation.operation === 'query' && !scopes.includes('ReadPublicApi')) {
    throw new HttpFailure(403, 'FORBIDDEN', 'queries need the ReadPublicApi scope on the API key');
  }
  if (operation.operation === 'mutation') {
    if (!scopes.includes('WritePublicApi')) throw new HttpFailure(403, 'FORBIDDEN', 'mutations need the WritePublicApi scope on the API key');
    if (!claims.write) throw new HttpFailure(403, 'FORBIDDEN', 'mutations need write permission on the user who owns the API key');
  }
  if (operation.operation === 'subscription') throw new HttpFailure(400, 'BAD_REQUEST', 'subscriptions are not supported');
}

async function handleQuery(deps: HandlerDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  deps.stats.queries++;
  const raw = await readBody(req, MAX_BODY_BYTES);
  const draw = deps.faults().next();
  const fault = draw?.kind;
  if (await applyEarlyFault(deps, draw, req, res)) return;

  const check = authenticate(deps, req, fault);
  const { query, variables, operationName } = readQueryBody(req, raw);

  let document: DocumentNode;
  try {
    document = parse(query);
  } catch (error) {
    sendJson(req, res, 400, { errors: [graphqlErrorJson(error as GraphQLError, 'GRAPHQL_PARSE_FAILED')] });
    return;
  }
  const operation = selectOperation(document, operationName);
  authorize(operation, check.claims);

  const validationErrors = validate(deps.schema, document);
  if (validationErrors.length > 0) {
    sendJson(req, res, 400, { errors: validationErrors.map((e) => graphqlErrorJson(e, 'GRAPHQL_VALIDATION_FAILED')) });
    return;
  }
  // Answered without executing, so an injected error never hides a mutation that did happen.
  if (fault === 'graphqlError') {
    deps.stats.faults.graphqlError = (deps.stats.faults.graphqlError ?? 0) + 1;
    sendJson(req, res, 200, {
      errors: [{ message: 'sandbox injected fault: internal error while resolving', extensions: { code: 'INTERNAL_SERVER_ERROR' } }],
      data: null,
    });
    return;
  }
  const misbehave = deps.misbehave();
  const replacement = operation.operation === 'query' ? misbehave?.replacement() : undefined;
  if (replacement) return sendRaw(res, replacement);
  const occupancy = misbehave && Misbehaviour.readsOccupancy(operation) ? misbehave : undefined;
  const sentAfter = typeof (variables as Record<string, unknown> | undefined)?.after === 'string' ? ((variables as Record<string, unknown>).after as string) : null;
  const contextValue: ResolverContext = { customer: check.customer, model: deps.model, registry: deps.registry, engine: deps.engine, clock: deps.clock };
  const result = await execute({
    schema: deps.schema,
    document,
    rootValue: deps.rootValue,
    contextValue,
    variableValues: occupancy ? occupancy.variables((variables ?? {}) as Record<string, unknown>) : withRealCursor(variables as Record<string, unknown> | undefined),
    operationName,
  });
  occupancy?.result(result as { data?: Record<string, unknown> | null }, sentAfter, variables as Record<string, unknown> | undefined);
  if (operation.operation === 'query') misbehave?.listing(operation, result as { data?: Record<string, unknown> | null });
  if (fault === 'truncatedGzip') {
    deps.stats.faults.truncatedGzip = (deps.stats.faults.truncatedGzip ?? 0) + 1;
    sendTruncatedGzip(res, result);
    return;
  }
  // No data at all means the request failed before execution (variable coercion): a request error, 400.
  sendJson(req, res, 'data' in result ? 200 : 400, result);
}

function withRealCursor(variables: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  return typeof variables?.after === 'string' ? { ...variables, after: realCursor(variables.after) } : variables;
}

function sendRaw(res: ServerResponse, answer: Replacement): void {
  res.writeHead(answer.status, { ...answer.headers, 'Content-Length': String(answer.body.length) });
  res.end(answer.body);
}

function graphqlErrorJson(error: GraphQLError, code: string): Record<string, unknown> {
  const json = error.toJSON();
  return { ...json, extensions: { ...json.extensions, code } };
}
