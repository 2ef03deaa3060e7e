import { randomUUID } from 'node:crypto';
import { openRawSqlite, receiverFloorStatements } from './raw-writers.ts';
import { flags, report, required } from './child.ts';
import { freshDatabase } from '../test/support/databases.ts';
import { deliveryStream } from './receiver-load.ts';

/**
 * The receiver's storage floor, in its own process: what SQLite alone costs for the rows the receiver writes, with
 * no HTTP, no signature, no parsing. The same deliveries as the load test (one delivery row with its raw body plus
 * 10 occupancy upserts each), into the tables the migrations create, `--group` deliveries per transaction (what the
 * receiver's group commit reaches under that load), with two raw prepared better-sqlite3 statements and the store's
 * pragmas (WAL, synchronous NORMAL, 32 MiB page cache, the same WAL checkpoint threshold).
 *
 *   node --import tsx bench/receiver-floor.ts --deliveries 40000 --group 25 [--savepoints]
 *
 * `--savepoints` wraps each delivery in SAVEPOINT/RELEASE, as the first group commit did, to show what that costs.
 * Prints {"deliveries", "ms", "perSecond"}.
 */

export interface FloorResult {
  deliveries: number;
  ms: number;
  perSecond: number;
}

const args = flags();
const total = Number(required(args, 'deliveries'));
const group = Number(required(args, 'group'));
const savepoints = args.has('savepoints');
const fresh = await freshDatabase('sqlite', 'floor', { migrate: true });
try {
  const db = openRawSqlite(fresh.database.sqlitePath!);
  const { insertDelivery, items, savepoint, release } = receiverFloorStatements(db);
  const customerId = randomUUID();
  const next = deliveryStream(customerId);
  // Generated up front: the floor times SQLite only.
  const deliveries = Array.from({ length: total }, next);
  const writeGroup = db.transaction((from: number, to: number, receivedAt: string) => {
    for (let i = from; i < to; i++) {
      const d = deliveries[i]!;
      if (savepoints) savepoint.run();
      insertDelivery.get(customerId, d.id, 'Occupancy', d.created, d.created, receivedAt, d.body);
      items(customerId, receivedAt, d.created, d.id, d.items);
      if (savepoints) release.run();
    }
  });
  const started = performance.now();
  for (let i = 0; i < total; i += group) writeGroup(i, Math.min(total, i + group), new Date().toISOString());
  const ms = performance.now() - started;
  db.close();
  report({ deliveries: total, ms, perSecond: (total / ms) * 1000 } satisfies FloorResult);
} finally {
  await fresh.drop();
}
