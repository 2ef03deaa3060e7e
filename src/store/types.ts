import type { Dialect } from '../config.ts';
import type { IsoUtc } from '../time.ts';

export type { IsoUtc };

/**
 * The dialect-neutral storage contract. The sync engine and the webhook receiver only ever see this interface;
 * `openStore(config.database)` picks SQLite or Postgres.
 *
 * Timestamps cross this boundary as canonical ISO 8601 UTC strings with milliseconds (`2026-01-01T00:00:00.000Z`),
 * produced by `toIsoUtc()` (src/time.ts). SQLite stores exactly that text (fixed width, so it sorts and compares correctly);
 * Postgres stores timestamptz.
 */


/** Tables that streams write into. A new sink needs a Drizzle table, a migration and an entry in store/sinks.ts. */
export type SinkName = 'buildings' | 'floors' | 'floorSpaces' | 'occupancy';

/**
 * The sink of a stream that writes a table its definitions declare (`sink: table`, docs/tables.md): its stream carries
 * the DeclaredTable, and the store creates and evolves the table from it (Store.declareTables).
 */
export const TABLE_SINK = 'table';
/** Every sink a stream may name: the built-in ones, or a declared table. */
export type StreamSink = SinkName | typeof TABLE_SINK;

/** How a declared table stores a column: the record type's store type (docs/tables.md, "Types"). */
export type TableColumnType = 'text' | 'integer' | 'bigint' | 'double' | 'boolean' | 'timestamp';

/** One column of a declared table: a field of its stream's record. */
export interface DeclaredColumn {
  /** The record field, as the definitions name it (`floorSpaceId`). */
  field: string;
  /** Its SQL column: the field in snake case (`floor_space_id`). */
  column: string;
  type: TableColumnType;
}

/**
 * A table a definitions file declares for a stream (`sink: table`): the stream's record fields are its columns, with
 * the customer and the key fields its primary key. Store.declareTables creates it as `api_<name>` and evolves it.
 */
export interface DeclaredTable {
  /** The name in the definitions (`desks`); the SQL table is `api_desks` (declaredTableName). */
  name: string;
  /** The record fields that, with the customer, identify a row. */
  key: readonly string[];
  /** The record's fields, in the declaration's order. */
  columns: readonly DeclaredColumn[];
  /** The stream that declares it, and whether it reads windows (its state must go for a rebuilt table to be read whole). */
  stream?: { name: string; incremental: boolean };
}

/** Where a stream's rows are: a built-in sink, or a declared table. */
export type SinkTarget = SinkName | DeclaredTable;

/** A record of a declared table: its fields by name. */
export type TableRecord = Readonly<Record<string, unknown>>;

/** A step a declaration made to its table (Store.declareTables): created it, or added columns. */
export interface TableStep {
  /** The SQL table, e.g. `api_desks`. */
  table: string;
  step: number;
  /** What it did, e.g. `created api_desks (id, name, capacity)` or `added column seats`. */
  change: string;
}

/**
 * A record carries the columns of its sink's table that vary per record; the page supplies the rest (customer,
 * source, times). Written out so the package's types need no Drizzle types; store/sinks.ts checks at compile time
 * that each is exactly the table's insert type for those fields (db/schema/pg.ts stays the one definition).
 */
export interface BuildingRecord {
  id: string;
  name: string;
  /** An IANA time zone name (`Europe/London`), or null when the platform does not say; the store refuses any other. */
  timeZone?: string | null;
}

/** A floor of a building (table `floors`). Unknown values are null (or left out), never invented. */
export interface FloorRecord {
  id: string;
  buildingId?: string | null;
  name?: string | null;
  /** The storey as the platform numbers it (0 ground, negative below). */
  level?: number | null;
}

/**
 * A floor space as the platform lists it (table `floor_spaces`, column `floor_space_id` for `id`: the name the
 * `occupancy` view gives it). A listing overwrites what an earlier one said (a renamed or moved space keeps its id and
 * its readings, and shows its new name and place in every report, past readings included).
 */
export interface FloorSpaceRecord {
  id: string;
  floorId?: string | null;
  buildingId?: string | null;
  name?: string | null;
  /** How many people the space is meant for: a whole number from 0, or null when the platform does not say. */
  capacity?: number | null;
  /** The platform's word for the kind of space (`meeting_room`, `desk`), as it spells it. */
  spaceType?: string | null;
}

export type OccupancySource = 'poll' | 'webhook';

export interface OccupancyRecord {
  floorSpaceId: string;
  observedAt: IsoUtc;
  occupancyStatus: string;
  /** People counted, from 0; null when the sensor sends none (presence-only sensors): never 0 in its place. */
  headcount: number | null;
  /** The platform's observation id (poll) or the delivery Id (webhook). */
  eventId: string | null;
}

export interface SinkRecords {
  buildings: BuildingRecord;
  floors: FloorRecord;
  floorSpaces: FloorSpaceRecord;
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
  /** The state key (column `stream`): the stream's name, or `occupancy#backfill` for a backfill. */
  stateKey: string;
  /** Everything with cursor < watermark is stored. Only ever moves forward. */
  watermark: IsoUtc | null;
  /** The window being worked on, [windowStart, windowEnd), and the cursor of the last committed page in it. */
  windowStart: IsoUtc | null;
  windowEnd: IsoUtc | null;
  pageCursor: string | null;
  /** For backfills: the whole requested range. */
  rangeStart: IsoUtc | null;
  rangeEnd: IsoUtc | null;
  /**
   * Windows after [windowStart, windowEnd) read at the same time, with their progress: those started (a cursor) or
   * complete. Absent when there are none. The watermark (a backfill's progress) covers none of them yet.
   */
  windows?: ReadonlyArray<WindowCheckpoint>;
  updatedAt: IsoUtc;
}

/** A window read ahead of the first incomplete one: its bounds, the cursor of its last committed page, complete or not. */
export interface WindowCheckpoint {
  from: IsoUtc;
  to: IsoUtc;
  cursor: string | null;
  done: boolean;
}

export type SyncStateUpdate = Omit<SyncState, 'updatedAt'>;

export interface RunRecord {
  id: number;
  customerId: string;
  /** The state key (column `stream`): the stream's name, or `occupancy#backfill` for a backfill. */
  stateKey: string;
  mode: RunMode;
  startedAt: IsoUtc;
  finishedAt: IsoUtc | null;
  status: RunStatus;
  pages: number;
  records: number;
  /** Records of the run that went to quarantine instead of the sink. */
  rejected: number;
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

/**
 * How the webhook receiver reads the items of one event type (src/webhooks/delivery.ts): built by the engine from the
 * declaration of the stream whose records they are (src/sync/deliveries.ts), handed over by the wiring. Here because
 * both sides use it and neither may import the other (docs/architecture.md, layers).
 */
export interface DeliveryRule {
  /** The stream whose records the items are (its quarantine takes the rejected ones). */
  stream: string;
  /** One item, with its delivery's envelope: the record, or the item as the quarantine keeps it, with the reason. */
  read(item: unknown, envelope: Record<string, unknown>): { ok: true; record: OccupancyRecord } | { ok: false; rejected: QuarantinedRecord };
}

/** The records each sink a stream may name takes. */
export type StreamRecords = SinkRecords & { table: TableRecord };

export interface PageWrite<S extends StreamSink = StreamSink> {
  customerId: string;
  sink: S;
  /** The declared table of sink `table` (declared before, Store.declareTables). */
  table?: DeclaredTable;
  records: ReadonlyArray<StreamRecords[S]>;
  /** Rows written by this page are stamped with this time (ingested_at, last_seen_at). */
  at: IsoUtc;
  /** Saved in the same transaction as the records: a crash leaves either both or neither. */
  checkpoint: SyncStateUpdate;
  /** When given, the run's page, record and rejected counters are advanced in the same transaction. */
  runId?: number;
  /** Records of this page that broke their declared types: kept in quarantined_records, in the same transaction. */
  quarantine?: QuarantineWrite;
}

/**
 * A record that broke its stream's declaration, as quarantined_records keeps it: a polled node
 * (src/sync/contract.ts) or a delivered item (src/webhooks/delivery.ts) alike.
 */
export interface QuarantinedRecord {
  /** Stable id of the raw record (SHA-256 of its JSON), so the same raw record read again is one row. */
  fingerprint: string;
  /** The record as received, as JSON (cut at a maximum length). */
  raw: string;
  reason: string;
}

export interface QuarantineWrite {
  /** The stream's name (not the state key): `occupancy`, `buildings`. */
  stream: string;
  /** The window the records were read for, when the stream is windowed. */
  window: { from: IsoUtc; to: IsoUtc } | null;
  records: ReadonlyArray<QuarantinedRecord>;
}

/**
 * A change to sync state that moves it backwards, recorded in `sync_state_changes`: by an operator (`occupancy-sync
 * state rewind|reset`) or by the engine when an answer proves committed windows incomplete. The only way a watermark
 * or a backfill's progress moves backwards.
 * `rewind` with `to`: the watermark goes back to `to` and any in-flight window is dropped, so the next runs re-read
 * from there; `rewind` with `progress`: a backfill's next window goes back to `progress` (the windows read ahead are
 * dropped), so the next run of that backfill reads again from there;
 * `reset`: the state row is removed (an incremental stream starts over from SYNC_INITIAL_HISTORY, a backfill from
 * its --from).
 */
export type StateChange = { customerId: string; stateKey: string; actor: string; at: IsoUtc } & (
  | { action: 'rewind'; to: IsoUtc }
  | { action: 'rewind'; progress: { windowStart: IsoUtc; windowEnd: IsoUtc } }
  | { action: 'reset' }
);

export interface StateChangeRecord {
  id: number;
  customerId: string;
  /** The state key (column `stream`): the stream's name, or `occupancy#backfill` for a backfill. */
  stateKey: string;
  action: 'rewind' | 'reset';
  actor: string;
  changedAt: IsoUtc;
  oldWatermark: IsoUtc | null;
  newWatermark: IsoUtc | null;
  /** The state row before and after (undefined: none). */
  before: SyncState | undefined;
  after: SyncState | undefined;
}

/** The error recorded on a run whose process ended without recording its outcome. */
/** Readings of a customer stored with one status that is not canonical (Store.unmappedStatuses). */
export interface UnmappedStatus {
  customerId: string;
  status: string;
  readings: number;
}

export const ABANDONED_RUN_ERROR = 'process ended without recording an outcome (killed?)';

export interface Lock {
  release(): Promise<void>;
}

export type { AggregateRebuild, AggregateRefresh, AggregateSettings, CalendarDrift, PendingAggregates, RebuiltBuilding } from './aggregate-types.ts';
import type { AggregateRebuild, AggregateRefresh, AggregateSettings, CalendarDrift, PendingAggregates, RebuiltBuilding } from './aggregate-types.ts';

export interface Store {
  readonly dialect: Dialect;
  /**
   * Applies pending migrations (idempotent, safe to run concurrently from several processes). Resolves to the names
   * of the migrations this call applied (e.g. `['0000_tables']`), empty when the database was up to date.
   * `signal`: aborting it ends a wait for another process's migration (the store's own signal when not given).
   */
  migrate(options?: { signal?: AbortSignal }): Promise<string[]>;
  /** Refuses (StoreError with the fix) a database whose schema is behind this version: for read-only commands. */
  requireCurrentSchema(): Promise<void>;
  close(): Promise<void>;

  /**
   * Creates each declared table that does not exist yet and adds the columns its declaration gained, each change one
   * recorded step (like a migration, under the migration lock); a column its declaration no longer names stays. Refuses
   * (TableChangeError, one line per column with the fix) a column whose type or a key that changed. Resolves to the
   * steps this call applied. A table must be declared in this store before pages are committed to it.
   */
  declareTables(tables: readonly DeclaredTable[]): Promise<TableStep[]>;
  /** What declareTables would do now, reading only: the changes it would make, and the lines it would refuse with. */
  planTables(tables: readonly DeclaredTable[]): Promise<{ changes: string[]; refused: string[] }>;
  /** Upserts a page of records and saves the checkpoint atomically. */
  commitPage<S extends StreamSink>(page: PageWrite<S>): Promise<void>;
  /**
   * Commits pages in one transaction, in their order, each as commitPage would: all of them or none. A run hands it
   * the pages that arrived while its previous commit ran (sync/run/committer.ts).
   */
  commitPages(pages: readonly PageWrite[]): Promise<void>;
  getState(customerId: string, stateKey: string): Promise<SyncState | undefined>;
  /** Saves state on its own; refuses (StoreError) to move an existing watermark backwards. */
  saveState(state: SyncStateUpdate): Promise<void>;
  listStates(customerId?: string): Promise<SyncState[]>;
  /**
   * Applies an operator's state change and records it in `sync_state_changes`, in one transaction. Refuses (StoreError)
   * a rewind of a state without a watermark, or to a time not before the current watermark, and a change of state
   * that does not exist. The caller holds the run lock of (customer, stream).
   */
  changeState(change: StateChange): Promise<StateChangeRecord>;
  /** Recorded state changes, newest first. */
  stateChanges(filter?: { customerId?: string; stateKey?: string; limit?: number }): Promise<StateChangeRecord[]>;

  /**
   * Soft-deletes the customer's rows of `sink` not seen since `seenSince` (`deleted_at = at`); a later upsert of the
   * row clears it. StoreError for a sink whose table keeps no `last_seen_at`/`deleted_at`.
   */
  markDeleted(sink: SinkTarget, customerId: string, seenSince: IsoUtc, at: IsoUtc): Promise<number>;

  /**
   * The distinct values of `field` among the customer's rows of `sink` that a listing has seen and not soft-deleted
   * (`last_seen_at` set, `deleted_at` NULL), in order: a fan-out stream's parents. Rows only readings have named, and
   * NULL values, are left out. StoreError for a sink that keeps no listing, or a field it lacks.
   */
  listedValues(sink: SinkTarget, field: string, customerId: string): Promise<string[]>;

  startRun(run: { customerId: string; stateKey: string; mode: RunMode; startedAt: IsoUtc }): Promise<number>;
  finishRun(id: number, outcome: { status: Exclude<RunStatus, 'running'>; finishedAt: IsoUtc; error?: string | null }): Promise<void>;
  /**
   * Marks the runs of (customer, state key) still 'running' as interrupted with ABANDONED_RUN_ERROR, and returns their
   * ids. Call it only while holding that pair's lock: the lock dies with its holder (kill -9 included), so a
   * 'running' row nobody holds the lock for belongs to a process that ended without recording its outcome.
   */
  closeAbandonedRuns(customerId: string, stateKey: string, at: IsoUtc): Promise<number[]>;
  /**
   * Deletes up to `limit` finished runs that finished before `before`, never the latest run or the latest successful
   * run of a stream; returns how many went. Run it in batches until it returns less than `limit`.
   */
  pruneRuns(before: IsoUtc, limit: number): Promise<number>;
  /**
   * Analyzes the tables whose planner statistics a run left out of date (autovacuum's threshold, and a partitioned
   * table's parent, which autovacuum never analyzes): Postgres only, a no-op on SQLite (planner-statistics.ts).
   * Resolves to the tables analyzed.
   */
  updatePlannerStatistics(): Promise<string[]>;
  /**
   * Readings retention: deletes the readings observed before `before` (every one, whoever sent it). On Postgres the
   * month partitions wholly older are dropped whole first; then up to `limit` older rows are deleted one by one (the
   * month at the edge; on SQLite every row). Run it until `rows` is less than `limit`.
   */
  pruneReadings(before: IsoUtc, limit: number): Promise<PrunedReadings>;
  /** The latest run of each (customer, stream), ordered by customer and stream. */
  lastRuns(customerId?: string): Promise<RunRecord[]>;

  /**
   * Stores a webhook delivery and its occupancy items in one transaction. A delivery whose id is already stored is
   * not stored again (its `attempts` counter goes up) and the call returns 'duplicate'.
   */
  storeDelivery(
    delivery: DeliveryRecord,
    occupancy: ReadonlyArray<OccupancyRecord>,
    /** Items that broke their stream's declaration: quarantined in the same transaction (no window). */
    quarantine?: Omit<QuarantineWrite, 'window'>,
  ): Promise<'stored' | 'duplicate'>;

  /**
   * Non-blocking lock per customer and state key (a backfill has its own), held until released or until the process dies (kill -9 included:
   * Postgres advisory locks end with the session; SQLite locks check the holder's liveness).
   * Returns undefined when another holder has it.
   */
  tryLock(customerId: string, stateKey: string): Promise<Lock | undefined>;

  /**
   * Records of the customer in `sink` whose `field` (a timestamp field of its records, e.g. observedAt) lies in
   * [from, to): what a window held, for the completeness alarm.
   */
  countInWindow(sink: SinkTarget, field: string, customerId: string, from: IsoUtc, to: IsoUtc): Promise<number>;

  /**
   * Compares what each building's time-weighted aggregates were computed with (zone, working calendar, max hold) with
   * what `settings` resolve, and rebuilds each building that differs from its readings, one transaction per building;
   * resolves to those rebuilt (not those recorded for the first time). Commits of this customer's readings then
   * compute with these settings for buildings that have none recorded yet.
   */
  reconcileAggregates(customerId: string, settings: AggregateSettings): Promise<RebuiltBuilding[]>;
  /** Recomputes aggregates from the readings (`aggregates rebuild`), each building in one transaction. */
  rebuildAggregates(request: AggregateRebuild, settings: AggregateSettings): Promise<RebuiltBuilding[]>;
  /**
   * Recomputes the buckets poll pages of the customer made stale (their invalidations), once each, building by
   * building under its lock, and deletes the invalidations it did; a range a concurrent page widened stays pending.
   * `settings`: what a building with no recorded calendar is computed with (default: the last reconcile's).
   */
  refreshAggregates(customerId: string, settings?: AggregateSettings): Promise<AggregateRefresh>;
  /** The invalidations pending per customer (all customers, or one): how far the aggregates lag the readings. */
  pendingAggregates(customerId?: string): Promise<PendingAggregates[]>;
  /**
   * The buildings of the customer whose aggregates were computed with another zone or working calendar than
   * `workingTime` resolves now (read only: the next reconcile rebuilds them). The max hold, a matter of the streams'
   * definitions, is not compared.
   */
  calendarDrift(customerId: string, workingTime: AggregateSettings['workingTime']): Promise<CalendarDrift[]>;
  /** The customers the database holds floor spaces of (a reading names its floor space there too), sorted. */
  customersHeld(): Promise<string[]>;
  /** The buildings of a customer its aggregates are kept for ('' : the floor spaces of no known building), sorted. */
  aggregateBuildings(customerId: string): Promise<string[]>;

  /**
   * Stored readings whose status is none of `canonical` (src/statuses.ts), per customer and status, most first: what
   * a stream without a value map stored as the API spelled it. Reads the readings only when the status dictionary
   * holds such a value.
   */
  unmappedStatuses(canonical: readonly string[], customerId?: string): Promise<UnmappedStatus[]>;

  /** Read-only SQL for reports, status and tests. Parameters are positional ($1.. on both dialects). */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[], options?: { timeoutMs?: number }): Promise<T[]>;
}

/** What one pass of readings retention removed. */
export interface PrunedReadings {
  /** The month partitions dropped whole (Postgres), oldest first. */
  partitions: string[];
  /** Rows deleted one by one. */
  rows: number;
}
