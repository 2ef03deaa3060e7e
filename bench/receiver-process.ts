import { DELIVERIES } from '../test/support/deliveries.ts';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { silentLogger } from '../src/logger.ts';
import { openStore } from '../src/store/index.ts';
import { startReceiver } from '../src/webhooks/receiver.ts';
import { closeOnSignal, flags, report, required } from './child.ts';

/**
 * A webhook server in its own process, for the receiver benchmark:
 *   --kind real --db <sqlite path> --customer <uuid> --secret <secret>: startReceiver with a real SQLite store
 *   (BENCH_AGGREGATES=off: without the aggregates);
 *   --kind bare: node:http answering 204 to everything once the body is read, doing nothing else.
 * Prints {"url": "..."}; stops on SIGTERM.
 */

const args = flags();
const kind = required(args, 'kind');

if (kind === 'bare') {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(204);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closeOnSignal(() => new Promise((resolve) => server.close(() => resolve())));
  const port = (server.address() as AddressInfo).port;
  report({ url: `http://127.0.0.1:${port}/webhook` });
} else if (kind === 'real') {
  const path = required(args, 'db');
  // BENCH_AGGREGATES=off: the store keeps no aggregates, to measure what keeping them costs the receiver.
  const store = await openStore({ url: `file:${path}`, dialect: 'sqlite', sqlitePath: path }, { maintainAggregates: process.env.BENCH_AGGREGATES !== 'off' });
  await store.migrate();
  const receiver = await startReceiver({ deliveries: DELIVERIES, 
    store,
    customers: [{ id: required(args, 'customer'), apiKey: 'bench', apiSecret: 'bench', webhookSecrets: [required(args, 'secret')], webhookHeaders: {} }],
    logger: silentLogger,
    closeGraceMs: 1000,
  });
  closeOnSignal(async () => {
    await receiver.close();
    await store.close();
  });
  report({ url: receiver.url });
} else {
  throw new Error(`--kind must be real or bare, got ${kind}`);
}
