import { afterEach } from 'vitest';
import type { Config, Dialect } from '../../src/config.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { loadMigrations } from '../../src/store/migrations.ts';
import { FakeClock } from '../../src/clock.ts';
import { freshDatabase, type TestDatabase } from '../support/databases.ts';
import { spawnTs, type Child } from '../support/process.ts';

export { DIALECTS } from '../support/databases.ts';

export interface Fresh {
  database: Config['database'];
  clock: FakeClock;
  /** A migrated store; closed after the test. */
  store: Store;
  /** Opens another store on the same database (closed after the test). */
  another(): Promise<Store>;
}

const cleanups: Array<() => Promise<unknown> | void> = [];

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/**
 * A fresh database dropped after the test. The SQLite file is in a directory that does not exist yet: opening a
 * store creates it.
 */
export async function trackedDatabase(dialect: Dialect, label: string): Promise<TestDatabase> {
  const db = await freshDatabase(dialect, label, { file: 'nested/store.db' });
  cleanups.push(() => db.drop());
  return db;
}

/**
 * `deliveryRefreshMs`: the store's own refresh of what deliveries made stale runs on the system's timers, a second
 * after the first delivery (delivery-refresh.ts); a test that counts what is pending after its deliveries sets it far
 * beyond its own length, so a slow machine cannot run that refresh in the middle of it.
 */
export async function fresh(dialect: Dialect, label = 'store', migrate = true, options: { deliveryRefreshMs?: number } = {}): Promise<Fresh> {
  const { database } = await trackedDatabase(dialect, label);
  const clock = new FakeClock('2026-03-01T12:00:00.000Z');
  const open = async () => {
    const store = await openStore(database, { clock, ...options });
    cleanups.push(() => store.close());
    return store;
  };
  const store = await open();
  if (migrate) await store.migrate();
  return { database, clock, store, another: open };
}

/** A separate node process running fixtures/store-child.ts against the same database; killed after the test. */
export function storeChild(url: string, ...args: string[]): Child {
  const child = spawnTs('test/store/fixtures/store-child.ts', [url, ...args], { stderr: 'inherit' });
  cleanups.push(() => child.kill('SIGKILL'));
  return child;
}

/** Names of every committed migration of a dialect, in order (the list grows as migrations are added). */
export const migrationNames = (dialect: Dialect): string[] => loadMigrations(dialect).map((m) => m.name);

/** A page of occupancy readings for one floor space, one minute apart. */
export function readings(count: number, start = '2026-03-01T10:00:00.000Z', floorSpaceId = 'fs-1') {
  const t0 = Date.parse(start);
  return Array.from({ length: count }, (_, i) => ({
    floorSpaceId,
    observedAt: new Date(t0 + i * 60_000).toISOString(),
    occupancyStatus: i % 2 === 0 ? 'OCCUPIED' : 'UNOCCUPIED',
    headcount: i % 5,
    eventId: `obs-${floorSpaceId}-${i}`,
  }));
}

export function checkpoint(customerId: string, watermark: string | null, pageCursor: string | null = null) {
  return { customerId, stateKey: 'occupancy', watermark, windowStart: null, windowEnd: null, pageCursor, rangeStart: null, rangeEnd: null };
}
