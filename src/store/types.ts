import type { Dialect } from '../config.ts';

/**
 * The dialect-neutral storage contract. The sync engine and the webhook receiver only ever see this interface;
 * `openStore(config.database)` picks SQLite or Postgres.
 *
 * Timestamps cross this boundary as canonical ISO 8601 UTC strings with milliseconds (`2026-01-01T00:00:00.000Z`),
 * produced by `toIsoUtc()`. SQLite stores exactly that text (fixed width, so it sorts and compares correctly);
 * Postgres stores timestamptz.
 */

export type IsoUtc = string;

/** Tables that streams write into. A new sink needs a migration and a line in the store's sink registry. */
export type SinkName = 'buildings' | 'occupancy';

export interface BuildingRecord {
  id: string;
  name: string;
}

export type OccupancySource = 'poll' | 'webhook';

export interface OccupancyRecord {
  floorSpaceId: string;
  observedAt: IsoUtc;
  occupancyStatus: string;
  headcount: number;
  /** The platform's observation id (poll) or the delivery Id (webhook). */
  eventId: string | null;
}

export interface SinkRecords {
  buildings: BuildingRecord;
  occupancy: OccupancyRecord;
}

export type RunMode = 'incremental' | 'backfill' | 'full';
export type RunStatus = 'running' | 'succeeded' | 'failed' | 'interrupted';

/**
 * Per customer and state key. The state key is the stream name for incremental state (`occupancy`), or a
 * distinct key for a backfill (`occupancy#backfill`) so a backfill never touches the incremental watermark.
 */
export interface SyncState {
  customerId: string;
  stream: string;
  /** Everything with cursor < watermark is stored. Only ever moves forward. */
  watermark: IsoUtc | null;
  /** The window being worked on, [windowStart, windowEnd), and the cursor of the last committed page in it. */
  windowStart: IsoUtc | null;
  windowEnd: IsoUtc | null;
  pageCursor: string | null;
  /** For backfills: the whole requested range. */
  rangeStart: IsoUtc | null;
  rangeEnd: IsoUtc | null;
  updatedAt: IsoUtc;
}

export type SyncStateUpdate = Omit<SyncState, 'updatedAt'>;

export interface RunRecord {
  id: number;
  customerId: string;
  stream: string;
  mode: RunMode;
  startedAt: IsoUtc;
  finishedAt: IsoUtc | null;
  status: RunStatus;
  pages: number;
  records: number;
  error: string | null;
}

export interface DeliveryRecord {
  id: string;
  customerId: string;
  type: string;
  createdAt: IsoUtc;
  sentAt: IsoUtc;
  receivedAt: IsoUtc;
  /** The raw (decompressed) body exactly as received. */
  body: string;
}

export interface PageWrite<S extends SinkName = SinkName> {
  customerId: string;
  sink: S;
  records: ReadonlyArray<SinkRecords[S]>;
  /** Rows written by this page are stamped with this time (ingested_at, last_seen_at). */
  at: IsoUtc;
  /** Saved in the same transaction as the records: a crash leaves either both or neither. */
  checkpoint: SyncStateUpdate;
  /** When given, the run's page and record counters are advanced in the same transaction. */
  runId?: number;
}

export interface Lock {
  release(): Promise<void>;
}

export interface Store {
  readonly dialect: Dialect;
  /**
   * Applies pending migrations (idempotent, safe to run concurrently from several processes). Resolves to the names
   * of the migrations this call applied (e.g. `['0000_tables']`), empty when the database was up to date.
   */
  migrate(): Promise<string[]>;
  close(): Promise<void>;

  /** Upserts a page of records and saves the checkpoint atomically. */
  commitPage<S extends SinkName>(page: PageWrite<S>): Promise<void>;
  getState(customerId: string, stream: string): Promise<SyncState | undefined>;
  /** Saves state on its own; refuses (StoreError) to move an existing watermark backwards. */
  saveState(state: SyncStateUpdate): Promise<void>;
  listStates(customerId?: string): Promise<SyncState[]>;

  /** Soft-deletes the customer's buildings not seen since `seenSince`; clears nothing (upsert clears on return). */
  markBuildingsDeleted(customerId: string, seenSince: IsoUtc, at: IsoUtc): Promise<number>;

  startRun(run: { customerId: string; stream: string; mode: RunMode; startedAt: IsoUtc }): Promise<number>;
  finishRun(id: number, outcome: { status: Exclude<RunStatus, 'running'>; finishedAt: IsoUtc; error?: string | null }): Promise<void>;
  /** The latest run of each (customer, stream), ordered by customer and stream. */
  lastRuns(customerId?: string): Promise<RunRecord[]>;

  /**
   * Stores a webhook delivery and its occupancy items in one transaction. A delivery whose id is already stored is
   * not stored again (its `attempts` counter goes up) and the call returns 'duplicate'.
   */
  storeDelivery(delivery: DeliveryRecord, occupancy: ReadonlyArray<OccupancyRecord>): Promise<'stored' | 'duplicate'>;

  /**
   * Non-blocking lock per customer and stream, held until released or until the process dies (kill -9 included:
   * Postgres advisory locks end with the session; SQLite locks check the holder's liveness).
   * Returns undefined when another holder has it.
   */
  tryLock(customerId: string, stream: string): Promise<Lock | undefined>;

  /** Read-only SQL for reports, status and tests. Parameters are positional ($1.. on both dialects). */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
}

/** Canonical timestamp form used across the store boundary. */
export function toIsoUtc(value: Date | number | string): IsoUtc {
  const date = value instanceof Date ? value : new Date(value);
  const ms = date.getTime();
  if (Number.isNaN(ms)) throw new RangeError(`not a valid timestamp: ${String(value)}`);
  return date.toISOString();
}
