/**
 * A webhook receiver in its own process, for measuring what requests cost it: prints `{"url":...}` once listening.
 * On each stdin line:
 * - `state`: prints `{"pending":...,"inFlight":...,"inflating":...,"lingering":...}` (nothing run first, so it costs the receiver
 *   almost nothing: waits poll it);
 * - `mem`: runs a full GC and prints `{"rss":...,"peakRss":...,"heap":...,"external":...,"pending":...}` (peakRss: the
 *   highest RSS since the last `reset-peak`, Linux's VmHWM; elsewhere the process's highest, from getrusage);
 * - `reset-peak`: starts a new peak (Linux: /proc/self/clear_refs), prints `{"reset":true}`;
 * - `stored`: prints `{"stored":N}`, the deliveries in its database;
 * - `outcomes`: prints `{"outcomes":[...]}`, the reason of every request answered so far, in order.
 * Run with --expose-gc. Argument 1: the SQLite file; argument 2 (optional): JSON of receiver options over the defaults
 * (`{"maxBodyBytes":65536,"lingerMs":1000}`).
 */
import { DELIVERIES } from '../support/deliveries.ts';
import { readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { openStore } from '../../src/store/index.ts';
import { startReceiver, type ReceiverOptions } from '../../src/webhooks/receiver.ts';
import { CUSTOMER_A, SECRET_A, customer } from '../webhooks/helpers.ts';

const path = process.argv[2]!;
const outcomes: string[] = [];
const overrides = JSON.parse(process.argv[3] ?? '{}') as Partial<ReceiverOptions>;
const store = await openStore({ url: `file:${path}`, dialect: 'sqlite', sqlitePath: path });
await store.migrate();
const receiver = await startReceiver({ deliveries: DELIVERIES, store, customers: [customer(CUSTOMER_A, { webhookSecrets: [SECRET_A] })], requestTimeoutMs: 120_000, onOutcome: (o) => outcomes.push(o.reason), ...overrides });
const { handler } = receiver;
const linux = process.platform === 'linux';
const peakRss = (): number => {
  const hwm = linux ? /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8')) : null;
  return (hwm ? Number(hwm[1]) : process.resourceUsage().maxRSS) * 1024;
};
process.stdout.write(`${JSON.stringify({ url: receiver.url })}\n`);
createInterface({ input: process.stdin }).on('line', (line) => {
  const command = line.trim();
  if (command === 'stored') {
    void store.query<{ n: unknown }>('SELECT count(*) AS n FROM webhook_deliveries').then(([row]) => process.stdout.write(`${JSON.stringify({ stored: Number(row!.n) })}\n`));
  } else if (command === 'outcomes') {
    process.stdout.write(`${JSON.stringify({ outcomes })}\n`);
  } else if (command === 'state') {
    process.stdout.write(`${JSON.stringify({ pending: handler.pendingBytes, inFlight: handler.inFlight, inflating: handler.inflating, lingering: handler.lingering })}\n`);
  } else if (command === 'reset-peak') {
    if (linux) writeFileSync('/proc/self/clear_refs', '5');
    process.stdout.write(`${JSON.stringify({ reset: true })}\n`);
  } else if (command === 'mem') {
    (globalThis as { gc?: () => void }).gc?.();
    const m = process.memoryUsage();
    process.stdout.write(`${JSON.stringify({ rss: m.rss, peakRss: peakRss(), heap: m.heapUsed, external: m.external + m.arrayBuffers, pending: handler.pendingBytes })}\n`);
  }
});
process.stdin.on('end', async () => {
  await receiver.close();
  await store.close();
  process.exit(0);
});
