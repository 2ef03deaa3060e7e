/**
 * `occupancy-sync/webhooks`: the webhook receiver as a request handler for your own node:http(s) server, or as a
 * ready server. Deliveries are checked (size, gzip, custom headers, signature, shape) and stored idempotently.
 */
import { createWebhookHandler as createWebhookHandlerImpl, startReceiver as startReceiverImpl } from '../webhooks/receiver.ts';
import type { ReceiverOptions, WebhookHandlerOptions } from '../webhooks/receiver.ts';
import { deliveryRules } from '../sync/deliveries.ts';
import { streams } from '../../jobs/index.ts';

/** The built-in streams' rules for delivered items (the documented Occupancy shape), unless the caller gives its own. */
const withRules = <T extends { deliveries?: WebhookHandlerOptions['deliveries'] }>(options: T) => ({ ...options, deliveries: options.deliveries ?? deliveryRules(streams) });

export {
  DEFAULT_WEBHOOK_PATH,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_DECOMPRESSED_BYTES,
  type Receiver,
  type ReceiverOptions,
  type WebhookHandler,
  type WebhookHandlerOptions,
  type WebhookOutcome,
} from '../webhooks/receiver.ts';
export type { RefusalReason } from '../webhooks/refusal.ts';

/**
 * The request handler `occupancy-sync serve` mounts, for any node:http or node:https server. It answers every request
 * itself (200 stored or duplicate; 401 bad signature or headers; 400, 404, 405, 413, 415; 503 when storing failed, so
 * the platform retries). Customers come with their webhook secrets from `resolveConfig(env).customers`.
 *
 * @example
 * import { createServer } from 'node:http';
 * import { resolveConfig } from 'occupancy-sync';
 * import { openStore } from 'occupancy-sync/store';
 * import { createWebhookHandler } from 'occupancy-sync/webhooks';
 *
 * const config = resolveConfig(process.env); // WEBHOOK_SECRET, CUSTOMER_ID, DATABASE_URL, ...
 * const store = await openStore(config.database);
 * await store.migrate();
 * const handler = createWebhookHandler({ store, customers: config.customers, path: '/webhook' });
 * const server = createServer((req, res) => void handler(req, res)).listen(8080);
 * // shutdown: stop accepting, let the requests in flight finish, then close the store
 * server.close();
 * await handler.idle();
 * await store.close();
 */
export function createWebhookHandler(options: Omit<WebhookHandlerOptions, 'deliveries'> & Partial<Pick<WebhookHandlerOptions, 'deliveries'>>): ReturnType<typeof createWebhookHandlerImpl> {
  return createWebhookHandlerImpl(withRules(options));
}

/**
 * Starts a receiver: plain HTTP (behind a TLS-terminating proxy) or HTTPS with `tlsCert` and `tlsKey`. Port 0 picks
 * a free port (see `receiver.port`). `close()` lets in-flight deliveries finish.
 *
 * @example
 * import { startReceiver } from 'occupancy-sync/webhooks';
 * const receiver = await startReceiver({ store, customers: config.customers, host: '0.0.0.0', port: 8080 });
 * console.log(`deliveries to ${receiver.url}`);
 * process.once('SIGTERM', () => void receiver.close().then(() => store.close()));
 */
export function startReceiver(options: Omit<ReceiverOptions, 'deliveries'> & Partial<Pick<ReceiverOptions, 'deliveries'>>): ReturnType<typeof startReceiverImpl> {
  return startReceiverImpl(withRules(options));
}
