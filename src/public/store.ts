/**
 * `occupancy-sync/store`: open the SQLite or Postgres database occupancy-sync writes, with the same migrations, locks
 * and write rules as the CLI (README, "SQL schema").
 */
import { openStore as openStoreImpl } from '../store/index.ts';

export type { OpenStoreOptions } from '../store/index.ts';
export type {
  Store,
  IsoUtc,
  SinkName,
  BuildingRecord,
  FloorRecord,
  FloorSpaceRecord,
  OccupancyRecord,
  OccupancySource,
  SinkRecords,
  RunMode,
  RunStatus,
  SyncState,
  SyncStateUpdate,
  RunRecord,
  DeliveryRecord,
  PageWrite,
  Lock,
} from '../store/types.ts';
export { canonicalTimestamp } from '../store/timestamps.ts';

/**
 * Opens the database named by `database` (from `resolveConfig(env).database`): SQLite (WAL) for `file:` URLs,
 * Postgres for `postgres://` URLs (optionally `?schema=NAME`). Only the driver of that dialect is loaded. Does not
 * migrate: call `store.migrate()` (safe from several processes at once). Close it when done.
 *
 * @example
 * import { resolveConfig } from 'occupancy-sync';
 * import { openStore } from 'occupancy-sync/store';
 *
 * const { database } = resolveConfig({ DATABASE_URL: 'file:./data/occupancy.db' });
 * const store = await openStore(database);
 * try {
 *   await store.migrate();
 *   for (const state of await store.listStates()) console.log(state.customerId, state.stream, state.watermark);
 * } finally {
 *   await store.close();
 * }
 */
export const openStore: typeof openStoreImpl = openStoreImpl;
