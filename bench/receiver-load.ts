import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { signatureHeader } from '../src/webhooks/signature.ts';
import { openStore } from '../src/store/index.ts';
import { tempDir } from '../test/support/tmp.ts';
import { spawnBench } from './child.ts';

/**
 * Receiver throughput: autocannon (in this process) drives a server in a child process with signed Occupancy
 * deliveries, 10 items each, every one with a fresh Id, at 50 connections. The same generator, settings and bodies
 * go to the real receiver (SQLite store) and to a bare node:http server that answers 204 without work.
 */

export interface LoadResult {
  /** 2xx answers per second: accepted deliveries for the receiver. */
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  /** Anything but 2xx, plus connection errors: must be 0 for the figure to count. */
  failures: number;
  /**
   * The real receiver: from the load's end until no aggregates are pending (the store refreshes what deliveries made
   * stale a second after the first of them): how far the views trail the last delivery. 0 with BENCH_AGGREGATES=off.
   */
  currentAfterMs?: number;
}

export interface LoadSettings {
  connections: number;
  durationSeconds: number;
}

const ITEMS = 10;

/** The deliveries of the benchmark: every item is a new occupancy row, as real deliveries are. */
export interface BenchDelivery {
  id: string;
  created: string;
  items: Array<{ FloorSpaceId: string; OccupancyStatus: string; Headcount: number }>;
  body: string;
}

export function deliveryStream(customerId: string): () => BenchDelivery {
  const floorSpaces = Array.from({ length: ITEMS }, () => randomUUID());
  let tick = Date.parse('2026-06-01T00:00:00.000Z');
  return () => {
    // Distinct Created per delivery, so no item overwrites an earlier one.
    const created = new Date((tick += 1000)).toISOString();
    const id = randomUUID();
    const items = floorSpaces.map((FloorSpaceId, i) => ({ FloorSpaceId, OccupancyStatus: i % 3 ? 'CurrentlyOccupied' : 'Unoccupied', Headcount: i % 5 }));
    const body = JSON.stringify({ Id: id, Type: 'Occupancy', CustomerId: customerId, Created: created, Sent: created, Data: items });
    return { id, created, items, body };
  };
}

function deliveryFactory(customerId: string, secret: string) {
  const next = deliveryStream(customerId);
  return (): { body: string; signature: string } => {
    const { body } = next();
    return { body, signature: signatureHeader(secret, body, Math.floor(Date.now() / 1000)) };
  };
}

async function load(url: string, settings: LoadSettings, next: () => { body: string; signature: string }): Promise<LoadResult> {
  const result = await autocannon({
    url,
    connections: settings.connections,
    duration: settings.durationSeconds,
    pipelining: 1,
    timeout: 30,
    requests: [
      {
        method: 'POST',
        setupRequest(request) {
          const { body, signature } = next();
          return {
            ...request,
            body,
            headers: { 'content-type': 'application/json; charset=utf-8', 'x-service-signature': signature },
          };
        },
      },
    ],
  });
  return {
    perSecond: result['2xx'] / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requests: result.requests.total,
    failures: result.non2xx + result.errors + result.timeouts,
  };
}

export async function measureReceiver(kind: 'real' | 'bare', settings: LoadSettings, nodeFlags: string[] = []): Promise<LoadResult> {
  const customerId = randomUUID();
  const secret = randomBytes(48).toString('hex');
  const dir = tempDir('occupancy-bench-receiver-');
  const server = spawnBench<{ url: string }>('receiver-process.ts', [
    '--kind', kind, '--db', join(dir.dir, 'receiver.db'), '--customer', customerId, '--secret', secret,
  ], { nodeFlags });
  try {
    const { url } = await server.message;
    const result = await load(url, settings, deliveryFactory(customerId, secret));
    return kind === 'real' ? { ...result, currentAfterMs: await untilCurrent(join(dir.dir, 'receiver.db')) } : result;
  } finally {
    await server.stop();
    dir.remove();
  }
}

/** Milliseconds until the receiver's database has no aggregates pending, read by a second connection every 10 ms. */
async function untilCurrent(path: string): Promise<number> {
  const started = performance.now();
  const reader = await openStore({ url: `file:${path}`, dialect: 'sqlite', sqlitePath: path }, { readonly: true });
  try {
    for (;;) {
      if ((await reader.pendingAggregates()).length === 0) return performance.now() - started;
      if (performance.now() - started > 120_000) throw new Error('the receiver left aggregates pending for 120 s after the load');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  } finally {
    await reader.close();
  }
}
