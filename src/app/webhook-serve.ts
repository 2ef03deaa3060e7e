import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { Store } from '../store/types.ts';
import { ConfigError } from '../errors.ts';
import { receiverConfigured, receiverOptions, startReceiver, type Receiver, type WebhookOutcome } from '../webhooks/receiver.ts';
import { openForWriting } from './database.ts';

export interface ServeWebhooksOptions {
  config: Config;
  logger: Logger;
  /** The receiver runs until this aborts, then closes gracefully. */
  signal: AbortSignal;
  /** Overrides of config.webhook (command-line flags). */
  host?: string;
  port?: number;
  path?: string;
  clock?: Clock;
  onOutcome?(outcome: WebhookOutcome): void;
  /** Called once listening (tests and the CLI print the URL). */
  onListening?(receiver: Receiver): void;
  /** Use this store instead of opening config.database (it is then not closed here). */
  store?: Store;
}

/**
 * `webhook serve`: opens the database, applies pending migrations, receives deliveries until `signal` aborts, then
 * stops accepting, lets in-flight deliveries finish and closes the database.
 */
export async function serveWebhooks(options: ServeWebhooksOptions): Promise<void> {
  const { config, logger, signal } = options;
  if (!receiverConfigured(config)) {
    throw new ConfigError(
      'no customer has a webhook secret or custom header, so the receiver would accept no delivery. Fix: set WEBHOOK_SECRET ' +
        '(or WEBHOOK_REQUIRED_HEADERS, or the customers file entries), or WEBHOOK_ACCEPT_UNSIGNED=true to accept unsigned deliveries',
    );
  }
  const ownStore = !options.store;
  const store = options.store ?? (await openForWriting(config.database, logger));
  let receiver: Receiver | undefined;
  try {
    if (signal.aborted) return;
    receiver = await startReceiver({
      ...receiverOptions(config, { host: options.host, port: options.port, path: options.path }),
      store,
      logger,
      ...(options.clock && { clock: options.clock }),
      ...(options.onOutcome && { onOutcome: options.onOutcome }),
    });
    options.onListening?.(receiver);
    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      else signal.addEventListener('abort', () => resolve(), { once: true });
    });
    logger.info('stopping the webhook receiver: no new connections, finishing deliveries in flight');
  } finally {
    await receiver?.close();
    if (ownStore) await store.close();
  }
}
