import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Config, CustomerConfig } from '../config.ts';
import { ConfigError } from '../errors.ts';
import { silentLogger, type Logger } from '../logger.ts';
import { createWebhookHandler, type WebhookHandler, type WebhookHandlerOptions } from './handler.ts';

export {
  createWebhookHandler,
  DEFAULT_WEBHOOK_PATH,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_DECOMPRESSED_BYTES,
  type WebhookHandler,
  type WebhookHandlerOptions,
  type WebhookOutcome,
} from './handler.ts';

export interface ReceiverOptions extends WebhookHandlerOptions {
  /** Default 127.0.0.1; use 0.0.0.0 to listen on every interface. */
  host?: string;
  /** Default 0 (a free port, see the returned `port`). */
  port?: number;
  /** PEM certificate and key file paths: when both are given the receiver speaks HTTPS itself. */
  tlsCert?: string;
  tlsKey?: string;
  /** How long `close()` lets in-flight deliveries finish before answering them 503. Default 5 s. */
  closeGraceMs?: number;
  /** Open connections at most (the server refuses more). Default 1,024. */
  maxConnections?: number;
  /** Time a request may take to arrive whole; a stalled upload is cut after it. Default 15 s. */
  requestTimeoutMs?: number;
}

/**
 * The receiver's options from the configuration, the one place they are read (`serve` and `webhook serve`);
 * `overrides` are command-line flags.
 */
export function receiverOptions(
  config: { customers: readonly CustomerConfig[]; webhook: Config['webhook'] },
  overrides: { host?: string; port?: number; path?: string } = {},
): Omit<ReceiverOptions, 'store' | 'logger' | 'clock' | 'onOutcome' | 'deliveries'> {
  const w = config.webhook;
  return {
    customers: config.customers,
    host: overrides.host ?? w.host,
    port: overrides.port ?? w.port,
    path: overrides.path ?? w.path,
    maxBodyBytes: w.maxBodyBytes,
    maxDecompressedBytes: w.maxDecompressedBytes,
    maxPendingBytes: w.maxPendingBytes,
    toleranceMs: w.toleranceMs,
    acceptUnsigned: w.acceptUnsigned,
    maxConnections: w.maxConnections,
    requestTimeoutMs: w.requestTimeoutMs,
    tlsCert: w.tlsCert,
    tlsKey: w.tlsKey,
  };
}

/** Whether any configured customer can have deliveries accepted (a secret or custom headers, or unsigned allowed). */
export function receiverConfigured(config: { customers: readonly CustomerConfig[]; webhook: Config['webhook'] }): boolean {
  return receiverProblem(config) === undefined;
}

/**
 * Why the receiver would accept no delivery, as a configuration error naming what is missing and the fix; undefined
 * when some customer can have deliveries accepted. A receiver needs a customer (to file deliveries under) with a
 * webhook secret or custom headers; it never needs an API key.
 */
export function receiverProblem(config: { customers: readonly CustomerConfig[]; webhook: Config['webhook'] }): ConfigError | undefined {
  if (config.customers.length === 0) {
    return new ConfigError(
      'CUSTOMER_ID=(unset): the receiver files each delivery under a configured customer, and none is configured. ' +
        'Fix: set CUSTOMER_ID and WEBHOOK_SECRET (or WEBHOOK_SECRET_FILE) to the webhook\'s customer and signature secret, ' +
        'or CUSTOMERS_FILE for several customers; receiving needs no API key',
    );
  }
  if (config.webhook.acceptUnsigned || config.customers.some((c) => c.webhookSecrets.length > 0 || Object.keys(c.webhookHeaders).length > 0)) {
    return undefined;
  }
  const ids = config.customers.map((c) => c.id).join(', ');
  return new ConfigError(
    `WEBHOOK_SECRET=(unset): no customer has a webhook secret or custom header (${ids}), so the receiver would accept no delivery. ` +
      'Fix: set WEBHOOK_SECRET (or WEBHOOK_SECRET_FILE) to the signature secret set on the webhook, or WEBHOOK_REQUIRED_HEADERS ' +
      '(with CUSTOMERS_FILE: webhookSecretEnv, webhookSecretFile or webhookHeaders in the entry); ' +
      'WEBHOOK_ACCEPT_UNSIGNED=true accepts unsigned deliveries (a development machine only)',
  );
}

export interface Receiver {
  /** The full delivery URL, e.g. http://127.0.0.1:41234/webhook. */
  url: string;
  port: number;
  handler: WebhookHandler;
  /**
   * Stops accepting, lets in-flight deliveries finish for at most `closeGraceMs`, answers those still waiting (for the
   * database, or their body) 503 so the platform sends them again, then closes every connection.
   */
  close(): Promise<void>;
}

function readPem(variable: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError(`${variable}=${JSON.stringify(path)}: cannot read the file (${code}). Fix: point it at a readable PEM file`, {
      cause: error,
    });
  }
}

/** How long deliveries in flight at a stop may take to finish before they are answered 503. */
export const DEFAULT_CLOSE_GRACE_MS = 5_000;
/** After the 503s: how long their connections may take to take them in before they are cut. */
const ANSWER_FLUSH_MS = 1_000;

function describeWaiting(waiting: { body: number; database: number }): string {
  const parts = [
    ...(waiting.database > 0 ? [`${waiting.database} deliver${waiting.database === 1 ? 'y' : 'ies'} still waiting for the database`] : []),
    ...(waiting.body > 0 ? [`${waiting.body} still receiving ${waiting.body === 1 ? 'its body' : 'their bodies'}`] : []),
  ];
  return parts.length > 0 ? parts.join(', ') : 'requests still running';
}

/** An HTTPS server, or a ConfigError naming the PEM files when they do not hold a usable certificate and key. */
function httpsServer(certPath: string, keyPath: string, options: object, listener: Parameters<typeof createHttpServer>[1]): Server {
  const cert = readPem('WEBHOOK_TLS_CERT', certPath);
  const key = readPem('WEBHOOK_TLS_KEY', keyPath);
  try {
    return createHttpsServer({ ...options, cert, key }, listener);
  } catch (error) {
    throw new ConfigError(
      `WEBHOOK_TLS_CERT=${JSON.stringify(certPath)}, WEBHOOK_TLS_KEY=${JSON.stringify(keyPath)}: not a usable certificate and private key ` +
        `(${(error as Error).message}). Fix: point them at the PEM certificate (chain) and the PEM private key that belongs to it`,
      { cause: error },
    );
  }
}

const LISTEN_PROBLEMS: Record<string, string> = {
  EADDRINUSE: 'another process already listens there. Fix: stop it (another instance?), or choose another port',
  EACCES: 'this user may not listen on that port (below 1024 needs privileges). Fix: use a port from 1024 up, e.g. 8080, behind the TLS proxy',
  EADDRNOTAVAIL: 'no network interface of this machine has that address. Fix: use one of its addresses, 127.0.0.1, or 0.0.0.0 for all',
  ENOTFOUND: 'the host name does not resolve. Fix: use an address of this machine, 127.0.0.1, or 0.0.0.0 for all',
  EAI_AGAIN: 'the host name could not be resolved now. Fix: use an IP address, or 0.0.0.0 for all interfaces',
};

/**
 * Why a server cannot listen, naming its settings (`settings`: e.g. `SERVE_HOST="::", SERVE_PORT=9464`) and the fix;
 * another error as it is.
 */
export function listenError(error: NodeJS.ErrnoException, settings: string): Error {
  const problem = error.code ? LISTEN_PROBLEMS[error.code] : undefined;
  if (!problem) return error;
  return new ConfigError(`${settings}: cannot listen, ${problem} (${error.code})`, { cause: error });
}

/**
 * Starts a webhook receiver: plain HTTP (meant to sit behind a TLS-terminating proxy) or, with `tlsCert` and
 * `tlsKey`, HTTPS directly.
 */
export async function startReceiver(options: ReceiverOptions): Promise<Receiver> {
  const logger = options.logger ?? silentLogger;
  const handler = createWebhookHandler(options);
  const tls = options.tlsCert && options.tlsKey;
  if (!!options.tlsCert !== !!options.tlsKey) {
    throw new ConfigError('WEBHOOK_TLS_CERT and WEBHOOK_TLS_KEY go together. Fix: set both, or neither');
  }
  const listener = (req: Parameters<WebhookHandler>[0], res: Parameters<WebhookHandler>[1]) => void handler(req, res);
  // A slow sender cannot hold a connection (and its buffered body) for long, nor can many of them: the whole request,
  // a body trickled a byte at a time included, must arrive within requestTimeout. node checks that deadline every
  // connectionsCheckingInterval (30 s unless set), so it is checked every second here.
  const requestTimeout = options.requestTimeoutMs ?? 15_000;
  const headersTimeout = Math.min(requestTimeout, 10_000);
  const httpOptions = {
    requestTimeout,
    headersTimeout,
    connectionsCheckingInterval: Math.min(1000, requestTimeout),
    // The strict parser, whatever a process-wide --insecure-http-parser (NODE_OPTIONS) says: the lenient one takes a
    // bare LF as a line end, obs-fold, and Content-Length beside Transfer-Encoding, the ambiguities request smuggling
    // is made of (framing.ts checks what the strict parser lets through). Every value here is node's default,
    // pinned so that neither a flag nor a future default can loosen the receiver.
    insecureHTTPParser: false,
    requireHostHeader: true,
    joinDuplicateHeaders: false,
    maxHeaderSize: 16 * 1024,
  };
  const server: Server = tls ? httpsServer(options.tlsCert!, options.tlsKey!, { ...httpOptions, handshakeTimeout: headersTimeout }, listener) : createHttpServer(httpOptions, listener);
  server.maxConnections = options.maxConnections ?? 1024;

  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) => reject(listenError(error, `WEBHOOK_HOST=${JSON.stringify(host)}, WEBHOOK_PORT=${options.port ?? 0} (or --host, --port)`));
    server.once('error', failed);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', failed);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const url = `${tls ? 'https' : 'http'}://${shownHost}:${port}${options.path ?? '/webhook'}`;
  logger.info({ url, tls: !!tls }, 'webhook receiver listening');

  let closing: Promise<void> | undefined;
  const close = () => (closing ??= stopReceiver(server, handler, logger, url, options.closeGraceMs ?? DEFAULT_CLOSE_GRACE_MS));
  return { url, port, handler, close };
}

/**
 * Stops a receiver: no new connection; deliveries in flight may finish within `graceMs`, then what still waits is
 * answered 503 (the platform sends it again); every connection closes once its answer is out.
 */
async function stopReceiver(server: Server, handler: WebhookHandler, logger: Logger, url: string, graceMs: number): Promise<void> {
  let stoppedFlag = false;
  const stopped = new Promise<void>((resolve) => server.close(() => resolve())).then(() => {
    stoppedFlag = true;
  });
  if (handler.inFlight > 0) {
    logger.info({ inFlight: handler.inFlight, waiting: handler.waiting, graceMs }, 'webhook receiver stopping: deliveries in flight may finish, then the rest are answered 503');
  }
  // In-flight requests finish; each connection is closed once its response is out (closeIdleConnections only
  // touches connections with no request running), so no answer is cut off and keep-alive cannot hold us open.
  const drain = async (until: number) => {
    while (!stoppedFlag && Date.now() < until) {
      server.closeIdleConnections();
      await Promise.race([stopped, new Promise((resolve) => setTimeout(resolve, 20))]);
    }
  };
  await drain(Date.now() + graceMs);
  if (!stoppedFlag && handler.inFlight > 0) {
    // A database that does not answer (a black-holed network path, a lock held elsewhere) must not hold the stop:
    // what still waits is answered 503, so the platform sends it again.
    logger.warn(
      { inFlight: handler.inFlight, waiting: handler.waiting, graceMs },
      `webhook receiver stopping: ${describeWaiting(handler.waiting)} after ${graceMs} ms; answered 503 so the platform sends them again`,
    );
    handler.stop();
    await drain(Date.now() + ANSWER_FLUSH_MS);
  }
  if (!stoppedFlag) {
    server.closeAllConnections();
    await stopped;
  }
  handler.stop();
  handler.close();
  logger.info({ url }, 'webhook receiver stopped');
}
