import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Config, CustomerConfig } from '../config.ts';
import { ConfigError } from '../errors.ts';
import { silentLogger } from '../logger.ts';
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
  /** How long `close()` waits for in-flight requests before cutting connections. Default 10 s. */
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
): Omit<ReceiverOptions, 'store' | 'logger' | 'clock' | 'onOutcome'> {
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
  return (
    config.customers.length > 0 &&
    (config.webhook.acceptUnsigned || config.customers.some((c) => c.webhookSecrets.length > 0 || Object.keys(c.webhookHeaders).length > 0))
  );
}

export interface Receiver {
  /** The full delivery URL, e.g. http://127.0.0.1:41234/webhook. */
  url: string;
  port: number;
  handler: WebhookHandler;
  /** Stops accepting, lets in-flight requests finish (at most `closeGraceMs`), then closes every connection. */
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
  const server: Server = tls
    ? createHttpsServer(
        {
          ...httpOptions,
          cert: readPem('WEBHOOK_TLS_CERT', options.tlsCert!),
          key: readPem('WEBHOOK_TLS_KEY', options.tlsKey!),
          // A TLS handshake is bounded like the headers it comes before (node's default is 120 s).
          handshakeTimeout: headersTimeout,
        },
        listener,
      )
    : createHttpServer(httpOptions, listener);
  server.maxConnections = options.maxConnections ?? 1024;

  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const url = `${tls ? 'https' : 'http'}://${shownHost}:${port}${options.path ?? '/webhook'}`;
  logger.info({ url, tls: !!tls }, 'webhook receiver listening');

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      let stoppedFlag = false;
      const stopped = new Promise<void>((resolve) => server.close(() => resolve())).then(() => {
        stoppedFlag = true;
      });
      const deadline = Date.now() + (options.closeGraceMs ?? 10_000);
      // In-flight requests finish; each connection is closed once its response is out (closeIdleConnections only
      // touches connections with no request running), so no answer is cut off and keep-alive cannot hold us open.
      while (!stoppedFlag && Date.now() < deadline) {
        server.closeIdleConnections();
        await Promise.race([stopped, new Promise((resolve) => setTimeout(resolve, 20))]);
      }
      if (!stoppedFlag) {
        logger.warn({ inFlight: handler.inFlight }, 'webhook receiver closed with requests still running');
        server.closeAllConnections();
        await stopped;
      }
      handler.close();
      logger.info({ url }, 'webhook receiver stopped');
    })();
    return closing;
  };
  return { url, port, handler, close };
}
