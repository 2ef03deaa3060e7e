import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from '../clock.ts';
import { parseDuration } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { Metrics } from '../metrics.ts';
import type { Store } from '../store/types.ts';
import { listenError } from '../webhooks/receiver.ts';
import { checkHealth, readSyncHealth, type HealthOptions } from './health.ts';

/**
 * The operations endpoints, `/healthz` and `/metrics`, on their own port (SERVE_HOST:SERVE_PORT): they stay on the
 * private network while the webhook receiver's port faces the platform.
 */

export interface OpsServerOptions {
  host: string;
  port: number;
  store: Store;
  metrics: Metrics;
  logger: Logger;
  clock: Clock;
  /** Current health settings (customers, stopping flag); read per request. */
  health(): Omit<HealthOptions, 'now'>;
}

export interface OpsServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

function json(res: ServerResponse, status: number, body: unknown, head = false): void {
  const text = `${JSON.stringify(body, null, 2)}\n`;
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text), 'Cache-Control': 'no-store' });
  res.end(head ? undefined : text);
}

export async function startOpsServer(options: OpsServerOptions): Promise<OpsServer> {
  const { store, metrics, logger } = options;

  async function refreshLag(): Promise<void> {
    try {
      metrics.observeSyncHealth(await readSyncHealth(store));
    } catch (error) {
      // /metrics must still answer when the database does not: the process metrics are what tells you why.
      logger.warn({ err: error }, 'could not read sync lag for /metrics');
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const head = req.method === 'HEAD';
    if (req.method !== 'GET' && !head) {
      res.setHeader('Allow', 'GET, HEAD');
      return json(res, 405, { error: 'method not allowed' });
    }
    if (url.pathname === '/healthz') {
      const settings = options.health();
      const raw = url.searchParams.get('max_lag');
      let maxLagSeconds = settings.maxLagSeconds;
      if (raw !== null) {
        const ms = parseDuration(raw);
        if (ms === undefined) return json(res, 400, { error: `max_lag=${JSON.stringify(raw)}: not a duration; use e.g. 900s, 15m or 2h` });
        maxLagSeconds = ms / 1000;
      }
      const report = await checkHealth(store, { ...settings, maxLagSeconds, now: options.clock.now() });
      return json(res, report.status === 'ok' || report.status === 'degraded' ? 200 : 503, report, head);
    }
    if (url.pathname === '/metrics') {
      await refreshLag();
      const text = await metrics.text();
      res.writeHead(200, { 'Content-Type': metrics.contentType, 'Content-Length': Buffer.byteLength(text) });
      res.end(head ? undefined : text);
      return;
    }
    return json(res, 404, { error: 'not found', endpoints: ['/healthz', '/metrics'] });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      logger.error({ err: error }, 'operations endpoint failed');
      if (!res.headersSent) json(res, 500, { error: 'internal error' });
      else res.destroy();
    });
  });
  server.requestTimeout = 15_000;
  server.headersTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) => reject(listenError(error, `SERVE_HOST=${JSON.stringify(options.host)}, SERVE_PORT=${options.port}`));
    server.once('error', failed);
    server.listen(options.port, options.host, () => {
      server.off('error', failed);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const shownHost = options.host === '0.0.0.0' || options.host === '::' ? '127.0.0.1' : options.host.includes(':') ? `[${options.host}]` : options.host;
  const url = `http://${shownHost}:${port}`;
  logger.info({ url }, 'health and metrics listening (/healthz, /metrics)');

  return {
    url,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Scrapes and probes are short; idle keep-alive connections must not hold the shutdown open.
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 5_000).unref();
      }),
  };
}
