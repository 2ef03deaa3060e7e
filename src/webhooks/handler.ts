import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CustomerConfig } from '../config.ts';
import { systemClock, type Clock } from '../clock.ts';
import { silentLogger, type Logger } from '../logger.ts';
import type { DeliveryRule, Store } from '../store/types.ts';
import { toIsoUtc } from '../time.ts';
import { DEFAULT_SIGNATURE_TOLERANCE_MS } from './signature.ts';
import { checkDeclaredLength, contentEncodingOf, decompressed, PendingBudget, readBody, type BodyLimits, type ContentEncoding } from './body.ts';
import { CustomerAuthenticator } from './authenticate.ts';
import { checkFraming } from './framing.ts';
import { InflateQueue } from './inflate.ts';
import { DEFAULT_LINGER_MS, LINGER_BODY_MULTIPLE, lingerAfterAnswer, type LingerLimits } from './linger.ts';
import { parseDelivery, type ParsedDelivery } from './delivery.ts';
import { InFlight, StopGate } from './stop-gate.ts';
import { tracer } from '../tracing.ts';
import { Refusal } from './refusal.ts';
import { RefusalLog } from './refusal-log.ts';
import { storageRefusal } from './store-failure.ts';

export const DEFAULT_WEBHOOK_PATH = '/webhook';
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
export const DEFAULT_MAX_DECOMPRESSED_BYTES = 16 * 1024 * 1024;
export const DEFAULT_MAX_PENDING_BYTES = 32 * 1024 * 1024;

export interface WebhookOutcome {
  /** The HTTP status answered. */
  status: number;
  /** `stored`, `duplicate`, or the refusal reason code (see docs/webhooks.md). */
  reason: string;
  customerId?: string;
  deliveryId?: string;
}

export interface WebhookHandlerOptions {
  store: Store;
  /** Customers whose deliveries are accepted, with their webhook secrets and custom headers. */
  customers: readonly CustomerConfig[];
  /**
   * How the items of each event type are read: the rules compiled from the streams' declarations
   * (src/sync/deliveries.ts, `deliveryRules`); a type without a rule is stored as a delivery with no items read.
   */
  deliveries: ReadonlyMap<string, DeliveryRule>;
  /** Default `/webhook`. */
  path?: string;
  /** Default 1 MiB on the wire. */
  maxBodyBytes?: number;
  /** Default 16 MiB after decompression. */
  maxDecompressedBytes?: number;
  /** Signature timestamp tolerance in either direction. Default 300 000 ms. */
  toleranceMs?: number;
  /**
   * Bytes all requests not yet authenticated may hold at once (their wire bytes and inflaters); beyond it they are
   * refused with 503. Default 32 MiB.
   */
  maxPendingBytes?: number;
  /** Accept deliveries of customers with neither secrets nor custom headers. Default false: closed. */
  acceptUnsigned?: boolean;
  /**
   * How long a connection answered before its body ended may go on reading (and dropping) the body, so that the
   * sender can read the answer (linger.ts); at most 4 x maxBodyBytes are read. Default 5 s.
   */
  lingerMs?: number;
  /** Refusals of a reason after the first are summed up in one log line per this interval. Default 10 s. */
  refusalLogIntervalMs?: number;
  clock?: Clock;
  logger?: Logger;
  /** Called once per request with its outcome, for metrics. Must not throw. */
  onOutcome?(outcome: WebhookOutcome): void;
}

export interface WebhookHandler {
  (req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** Resolves when no request is being handled: for graceful shutdown after the server stopped accepting. */
  idle(): Promise<void>;
  /** Requests being handled right now. */
  readonly inFlight: number;
  /** Bytes held by requests not yet authenticated. */
  readonly pendingBytes: number;
  /** gzip bodies whose wire bytes received so far are not all inflated yet. */
  readonly inflating: number;
  /** Connections answered before their body ended that still read (and drop) the rest of it (linger.ts). */
  readonly lingering: number;
  /** What the requests in flight are waiting for: their body, or the database. */
  readonly waiting: { body: number; database: number };
  /**
   * Answers every request still waiting (for its body or the database) with 503 `stopping` at once, and any later
   * one too, so a receiver can stop whatever the database does: the platform sends the deliveries again, and one
   * whose write completed anyway is then acknowledged as a duplicate. Nothing is acknowledged that is not stored.
   */
  stop(): void;
  /** Logs what the refusal log still counts; call when the server stops. */
  close(): void;
}

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/**
 * Connections answered with `Connection: close`. node:http still parses what was pipelined behind such a request and
 * hands it to the handler, though it never sends its answer: a request hidden behind a refused one would be stored
 * unanswered. RFC 9112 9.6: after sending `close`, the server MUST NOT process further requests on that connection.
 */
const closing = new WeakSet<object>();

interface Linger extends LingerLimits {
  /** Connections lingering now. */
  open: number;
}

function send(req: IncomingMessage, res: ServerResponse, status: number, body: Record<string, unknown>, linger: Linger): void {
  if (res.headersSent) return;
  const text = JSON.stringify(body);
  // When the body was not read to its end (refused early, or too large), close the connection instead of letting
  // node:http drain whatever the sender still wants to upload; first read and drop a bounded rest of it, so that a
  // sender still writing can read the answer (linger.ts).
  if (!req.complete) {
    res.setHeader('Connection', 'close');
    closing.add(req.socket);
    if (lingerAfterAnswer(req, linger, () => (linger.open -= 1))) linger.open += 1;
  }
  if (status === 405) res.setHeader('Allow', 'POST');
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

type Ids = { customerId?: string; deliveryId?: string };

/**
 * One request's checks, in order, and its storage, with what all requests share (limits, authenticator, budgets,
 * the stop gate). Each `handle` ends in exactly one answer and returns its outcome.
 */
class DeliveryReception {
  readonly path: string;
  readonly limits: BodyLimits;
  readonly toleranceMs: number;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly auth: CustomerAuthenticator;
  readonly budget: PendingBudget;
  readonly inflate = new InflateQueue();
  readonly linger: Linger;
  readonly refusals: RefusalLog;
  readonly gate = new StopGate();

  constructor(private readonly options: WebhookHandlerOptions) {
    this.path = options.path ?? DEFAULT_WEBHOOK_PATH;
    this.limits = {
      maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
      maxDecompressedBytes: options.maxDecompressedBytes ?? DEFAULT_MAX_DECOMPRESSED_BYTES,
    };
    this.toleranceMs = options.toleranceMs ?? DEFAULT_SIGNATURE_TOLERANCE_MS;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.auth = new CustomerAuthenticator(options.customers, { acceptUnsigned: options.acceptUnsigned });
    this.budget = new PendingBudget(options.maxPendingBytes ?? DEFAULT_MAX_PENDING_BYTES);
    this.linger = { open: 0, maxBytes: LINGER_BODY_MULTIPLE * this.limits.maxBodyBytes, maxMs: options.lingerMs ?? DEFAULT_LINGER_MS };
    this.refusals = new RefusalLog(this.logger, options.refusalLogIntervalMs);
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<WebhookOutcome> {
    const ids: Ids = {};
    try {
      const encoding = this.checkHead(req);
      // Headers and signature header first: a request no customer could accept is refused before its body is read.
      const prepared = this.auth.prepare(req.headers, this.clock.now(), this.toleranceMs);
      const wire = await this.gate.until(readBody(req, encoding, this.limits, this.budget, this.inflate, (chunk) => prepared.update(chunk)), 'body');
      const authenticated = this.auth.finish(prepared, this.clock.now());
      const body = decompressed(wire, encoding, this.limits);
      const parsed = parseDelivery(body, this.options.deliveries, { nowMs: this.clock.now(), skewMs: this.toleranceMs });
      ids.deliveryId = parsed.delivery.id;
      const customerId = this.auth.customerOf(authenticated, parsed.delivery.customerId);
      ids.customerId = customerId;
      this.gate.check();
      const result = await this.store(parsed, customerId);
      send(req, res, 200, { status: result }, this.linger);
      this.logStored(result, parsed, customerId, {
        wireBytes: wire.wireBytes,
        bytes: body.length,
        gzip: encoding === 'gzip',
        secretIndex: authenticated.secretIndex.get(customerId),
      });
      return { status: 200, reason: result, ...ids };
    } catch (error) {
      return this.answerFailure(req, res, error, ids);
    }
  }

  /** Everything checked before a byte of the body is read but the customer's headers; the body's encoding. */
  private checkHead(req: IncomingMessage): ContentEncoding {
    checkFraming(req, this.auth.headerNames);
    this.gate.check();
    const pathname = (req.url ?? '/').split('?')[0];
    if (pathname !== this.path) throw new Refusal(404, 'not_found');
    if (req.method !== 'POST') throw new Refusal(405, 'method_not_allowed', { method: String(req.method).slice(0, 16) });
    const encoding = contentEncodingOf(req);
    checkDeclaredLength(req, this.limits);
    const contentType = req.headers['content-type'] ?? '';
    if (!JSON_TYPE.test(contentType)) {
      throw new Refusal(415, 'unsupported_media_type', { contentType: contentType.slice(0, 64) });
    }
    return encoding;
  }

  private async store(parsed: ParsedDelivery, customerId: string): Promise<'stored' | 'duplicate'> {
    try {
      return await this.gate.until(
        this.options.store.storeDelivery({ ...parsed.delivery, customerId, receivedAt: toIsoUtc(this.clock.now()) }, parsed.occupancy, parsed.rejected),
        'database',
      );
    } catch (error) {
      throw error instanceof Refusal ? error : storageRefusal(error);
    }
  }

  private logStored(result: 'stored' | 'duplicate', parsed: ParsedDelivery, customerId: string, sizes: Record<string, unknown>): void {
    const { logger } = this;
    (parsed.rejected ? logger.warn : logger.info).call(
      logger,
      {
        outcome: result,
        customerId,
        deliveryId: parsed.delivery.id,
        type: parsed.delivery.type,
        items: parsed.occupancy.length,
        ...(parsed.rejected && { quarantined: parsed.rejected.records.length, firstReason: parsed.rejected.records[0]!.reason }),
        ...sizes,
      },
      result === 'stored'
        ? parsed.rejected
          ? `webhook delivery stored; ${parsed.rejected.records.length} item(s) broke their declared types and were quarantined (table quarantined_records)`
          : 'webhook delivery stored'
        : 'webhook delivery already stored (retry acknowledged)',
    );
  }

  /** The answer to a request refused (its status and reason) or failed unexpectedly (500), logged. */
  private answerFailure(req: IncomingMessage, res: ServerResponse, error: unknown, ids: Ids): WebhookOutcome {
    const { logger } = this;
    if (!(error instanceof Refusal)) {
      logger.error({ err: error, ...ids }, 'webhook handler failed unexpectedly');
      send(req, res, 500, { error: 'internal_error' }, this.linger);
      return { status: 500, reason: 'internal_error', ...ids };
    }
    if (error.status === 503) res.setHeader('Retry-After', '5');
    if (error.reason === 'stopping') {
      res.setHeader('Connection', 'close');
      closing.add(req.socket);
    }
    send(req, res, error.status, { error: error.reason }, this.linger);
    const fields = { status: error.status, reason: error.reason, ...ids, ...error.details };
    if (error.reason === 'storage_failed' || error.reason === 'unstorable') {
      // The cause is the store's error; its message names the failure, never a secret or the body.
      const what = error.status === 503 ? 'answered 503 so the platform retries' : 'the database refused its content (a retry cannot fix it)';
      logger.error({ ...fields, err: error.cause }, `webhook delivery not stored; ${what}`);
    } else {
      // Scanners probe every open port: 404 and 405 stay out of the warning channel. An attacker cannot flood
      // the log: per reason, one line in full per interval, then a count.
      const level = error.status === 404 || error.status === 405 ? 'info' : 'warn';
      this.refusals.record(level, fields, 'webhook request refused');
    }
    return { status: error.status, reason: error.reason, ...ids };
  }
}

/** Warns at start of what the configuration leaves open (unsigned deliveries) or closed (customers with no secret). */
function warnAboutProtection(options: WebhookHandlerOptions, auth: CustomerAuthenticator, logger: Logger): void {
  if (options.acceptUnsigned) {
    logger.warn(
      { customers: options.customers.map((c) => c.id) },
      'webhook receiver accepts UNSIGNED deliveries (WEBHOOK_ACCEPT_UNSIGNED=true) for customers without a secret or custom header: anyone who can reach it can write their data',
    );
  }
  for (const id of auth.unprotected) {
    logger.warn({ customerId: id }, 'customer has no webhook secret and no custom header: its deliveries will be refused');
  }
}

/**
 * The webhook request handler, usable in any node:http or node:https server (`webhook serve` and the daemon mount
 * the same one). Checks, in order: one reading of the request (framing.ts, 400); path (404) and method (405);
 * Content-Encoding (415) and the declared length (413); Content-Type (415); custom headers and signature header
 * (401); the body, counted while it streams, on the wire and inflated as it arrives (413; corrupt gzip 400); the
 * signature (401); JSON and the delivery shape (400); the body's CustomerId against the customer that
 * authenticated (401); storage (503 when it failed, so the platform retries); 200. `stop()` answers what is still
 * waiting with 503 (docs/webhooks.md, Stopping).
 */
export function createWebhookHandler(options: WebhookHandlerOptions): WebhookHandler {
  const reception = new DeliveryReception(options);
  const { logger, gate } = reception;
  const inFlight = new InFlight();
  const report = (outcome: WebhookOutcome) => {
    try {
      options.onOutcome?.(outcome);
    } catch (error) {
      logger.warn({ err: error }, 'webhook onOutcome callback threw; ignored');
    }
  };

  const handler = (async (req: IncomingMessage, res: ServerResponse) => {
    // Pipelined behind a request answered with `close`: never processed, never answered (the connection is closing).
    if (closing.has(req.socket)) return;
    inFlight.enter();
    const span = tracer().start('webhook.delivery', { 'http.request.method': String(req.method).slice(0, 16) });
    try {
      const outcome = await span.run(() => reception.handle(req, res));
      span.setAttributes({ 'http.response.status_code': outcome.status, 'webhook.outcome': outcome.reason, 'customer.id': outcome.customerId, 'webhook.delivery_id': outcome.deliveryId });
      report(outcome);
    } finally {
      span.end();
      inFlight.leave();
    }
  }) as WebhookHandler;
  handler.idle = () => inFlight.idle();
  handler.close = () => reception.refusals.close();
  handler.stop = () => gate.stop();
  Object.defineProperty(handler, 'waiting', { get: () => gate.waiting });
  Object.defineProperty(handler, 'inFlight', { get: () => inFlight.count });
  Object.defineProperty(handler, 'pendingBytes', { get: () => reception.budget.used });
  Object.defineProperty(handler, 'inflating', { get: () => reception.inflate.size });
  Object.defineProperty(handler, 'lingering', { get: () => reception.linger.open });

  warnAboutProtection(options, reception.auth, logger);
  return handler;
}
