/**
 * A fan-out stream against a stream that reads every space at once, over the same data: the sandbox's default variant
 * (one `occupancy` query for all spaces) and its `per-space` variant (docs/examples/api-per-space: one query per floor
 * space, each its own state), each synced from empty by the engine in-process into a fresh SQLite file, the API a
 * network away (a fixed latency per answer). Prints requests, pages, readings and seconds per run; writes nothing else.
 *
 *   node --import tsx bench/fanout.ts [--buildings 10] [--spaces 10] [--days 1] [--latency 20]
 */
import { loadDocument, parseDocumentSource } from '../src/api/documents.ts';
import { createApiClient } from '../src/api/client.ts';
import { engineSettings } from '../src/app/engine-settings.ts';
import { systemClock } from '../src/clock.ts';
import { silentLogger } from '../src/logger.ts';
import { startSandbox, type ApiVariant } from '../src/sandbox/index.ts';
import { mergeStreams } from '../src/sync/definition-partitions.ts';
import { loadDefinitionsFile } from '../src/sync/definitions.ts';
import { runSync } from '../src/sync/engine.ts';
import type { AnyStream } from '../src/sync/stream.ts';
import { streams as builtins } from '../jobs/index.ts';
import { migratedStore } from '../test/support/databases.ts';
import { ROOT } from '../test/support/process.ts';
import { syncSettings } from '../test/sync/helpers.ts';
import { formatNumber } from './stats.ts';

const arg = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? fallback : Number(process.argv[at + 1]);
};
const buildings = arg('buildings', 10);
const spaces = arg('spaces', 10);
const days = arg('days', 1);
const latencyMs = arg('latency', 20);
const DAY = 86_400_000;

async function run(variant: ApiVariant, streams: ReadonlyArray<AnyStream>, windowConcurrency: number) {
  const now = Math.floor(Date.now() / 300_000) * 300_000;
  const sandbox = await startSandbox({ apiVariant: variant, seed: 7, customers: 1, buildingsPerCustomer: buildings, floorSpacesPerBuilding: spaces, dataStart: now - days * DAY, lateArrivalMaxMs: 0 });
  sandbox.setFaults({ latencyMs });
  const db = await migratedStore('sqlite', `bench-fanout-${variant}`);
  const customer = sandbox.customers[0]!;
  const client = createApiClient({ baseUrl: sandbox.url, apiKey: customer.readKey.key, apiSecret: customer.readKey.secret, clock: systemClock, http: { timeoutMs: 30_000, maxAttempts: 3, backoffMinMs: 10, backoffMaxMs: 50 } });
  try {
    const before = sandbox.stats.queries;
    const started = performance.now();
    const report = await runSync({
      store: db.store,
      clock: systemClock,
      logger: silentLogger,
      settings: engineSettings({ sync: syncSettings({ initialHistoryMs: days * DAY + 3_600_000, stepMs: 3_600_000, pageSize: 1000, settleDelayMs: 1000, windowConcurrency }) }),
      streams,
      targets: [{ customerId: customer.id, client }],
      loadDocument,
    });
    const seconds = (performance.now() - started) / 1000;
    const readings = report.outcomes.filter((o) => o.stream === 'occupancy');
    const failed = report.outcomes.filter((o) => o.status !== 'succeeded');
    if (failed.length) throw new Error(`${variant}: ${failed.map((o) => `${o.stream} ${o.status}: ${String(o.error)}`).join('; ')}`);
    return {
      requests: sandbox.stats.queries - before,
      pages: readings.reduce((n, o) => n + o.pages, 0),
      records: readings.reduce((n, o) => n + o.records, 0),
      seconds,
    };
  } finally {
    await client.close();
    await db.drop();
    await sandbox.close();
  }
}

const perSpace = mergeStreams(builtins, loadDefinitionsFile(`${ROOT}/docs/examples/api-per-space/occupancy-sync.streams.yaml`, { under: builtins, parseDocument: parseDocumentSource }).streams);
const rows: string[][] = [];
for (const [label, variant, streams, concurrency] of [
  ['one query for every space (v1), 8 windows at once', 'v1', builtins, 8],
  ['one query per space (per-space, fan-out), 8 at once', 'per-space', perSpace, 8],
  ['one query per space (per-space, fan-out), 1 at a time', 'per-space', perSpace, 1],
] as const) {
  const r = await run(variant, streams, concurrency);
  rows.push([label, formatNumber(r.requests, 0), formatNumber(r.pages, 0), formatNumber(r.records, 0), `${formatNumber(r.seconds, 1)} s`, formatNumber(r.records / r.seconds, 0)]);
}
console.log(`${buildings * spaces} floor spaces, ${days} day(s) of 5-minute readings, ${latencyMs} ms per answer, page size 1000, 1-hour windows, SQLite:`);
const header = ['Run', 'Requests', 'Pages', 'Readings', 'Time', 'Readings/s'];
console.log(`| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|`);
for (const row of rows) console.log(`| ${row.join(' | ')} |`);
