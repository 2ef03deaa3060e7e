import { sql, sqliteCore, type SQL } from './drizzle.ts';

const { blob, check, index, integer, primaryKey, real, sqliteTable, sqliteView, text, unique } = sqliteCore();

/**
 * SQLite schema. Timestamps are TEXT holding exactly `YYYY-MM-DDTHH:MM:SS.sssZ` (UTC, milliseconds, fixed width), so
 * text comparison is time comparison and ORDER BY / BETWEEN work in plain SQL. A CHECK refuses any other form, so a
 * stray offset or missing milliseconds can never silently mis-sort. Column names and meanings match db/schema/pg.ts
 * exactly: the tables are a public contract (README.md, "SQL schema"); change them only through migrations.
 */

const ISO_GLOB = '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z';

/** CHECK constraint: the column is NULL or a canonical UTC timestamp. */
function isoCheck(table: string, column: string, ref: SQL | unknown): ReturnType<typeof check> {
  return check(`${table}_${column}_iso`, sql`${ref} GLOB ${sql.raw(`'${ISO_GLOB}'`)}`);
}

export const buildings = sqliteTable(
  'buildings',
  {
    customerId: text('customer_id').notNull(),
    id: text('id').notNull(),
    name: text('name').notNull(),
    timeZone: text('time_zone'),
    firstSeenAt: text('first_seen_at').notNull(),
    lastSeenAt: text('last_seen_at').notNull(),
    deletedAt: text('deleted_at'),
  },
  (t) => [
    primaryKey({ columns: [t.customerId, t.id] }),
    isoCheck('buildings', 'first_seen_at', t.firstSeenAt),
    isoCheck('buildings', 'last_seen_at', t.lastSeenAt),
    isoCheck('buildings', 'deleted_at', t.deletedAt),
  ],
);

export const floors = sqliteTable(
  'floors',
  {
    customerId: text('customer_id').notNull(),
    id: text('id').notNull(),
    buildingId: text('building_id'),
    name: text('name'),
    level: integer('level'),
    firstSeenAt: text('first_seen_at').notNull(),
    lastSeenAt: text('last_seen_at').notNull(),
    deletedAt: text('deleted_at'),
  },
  (t) => [
    primaryKey({ columns: [t.customerId, t.id] }),
    isoCheck('floors', 'first_seen_at', t.firstSeenAt),
    isoCheck('floors', 'last_seen_at', t.lastSeenAt),
    isoCheck('floors', 'deleted_at', t.deletedAt),
  ],
);

/**
 * Occupancy is stored compactly (db/schema/pg.ts explains the layout): dictionaries of floor spaces and statuses,
 * per-page arrivals, and one WITHOUT ROWID row per reading keyed by (floor_space_key, observed_ms), the observation
 * time as integer epoch milliseconds. Users read it through the `occupancy` view (canonical text timestamps, as
 * documented); an index on the view's own observed_at expression serves their time-range filters. The migrations
 * (0008, 0009) hold the exact DDL, which drizzle-kit cannot express (WITHOUT ROWID, the expression index).
 */
export const floorSpaces = sqliteTable(
  'floor_spaces',
  {
    floorSpaceKey: integer('floor_space_key').primaryKey(),
    customerId: text('customer_id').notNull(),
    id: text('floor_space_id').notNull(),
    name: text('name'),
    floorId: text('floor_id'),
    buildingId: text('building_id'),
    capacity: integer('capacity'),
    spaceType: text('space_type'),
    firstSeenAt: text('first_seen_at'),
    lastSeenAt: text('last_seen_at'),
    deletedAt: text('deleted_at'),
  },
  (t) => [
    unique('floor_spaces_customer_floor_space_unique').on(t.customerId, t.id),
    // A floor's spaces, as the floor rollup's refresh finds them (0021).
    index('floor_spaces_floor_idx').on(t.customerId, sql`COALESCE(${t.buildingId}, '')`, sql`COALESCE(${t.floorId}, '')`),
    check('floor_spaces_capacity_non_negative', sql`${t.capacity} >= 0`),
    isoCheck('floor_spaces', 'first_seen_at', t.firstSeenAt),
    isoCheck('floor_spaces', 'last_seen_at', t.lastSeenAt),
    isoCheck('floor_spaces', 'deleted_at', t.deletedAt),
  ],
);

export const occupancyStatuses = sqliteTable('occupancy_statuses', {
  statusCode: integer('status_code').primaryKey(),
  occupancyStatus: text('occupancy_status').notNull().unique('occupancy_statuses_status_unique'),
});

export const occupancyArrivals = sqliteTable(
  'occupancy_arrivals',
  {
    arrivalKey: integer('arrival_key').primaryKey(),
    source: text('source', { enum: ['poll', 'webhook'] }).notNull(),
    arrivedAt: text('arrived_at').notNull(),
  },
  (t) => [
    isoCheck('occupancy_arrivals', 'arrived_at', t.arrivedAt),
    check('occupancy_arrivals_source_known', sql`${t.source} IN ('poll', 'webhook')`),
  ],
);

export const occupancyReadings = sqliteTable(
  'occupancy_readings',
  {
    floorSpaceKey: integer('floor_space_key').notNull(),
    observedMs: integer('observed_ms').notNull(),
    statusCode: integer('status_code').notNull(),
    /** NULL: the sensor sent no headcount (presence-only sensors), never 0. */
    headcount: integer('headcount'),
    polledArrival: integer('polled_arrival'),
    deliveredArrival: integer('delivered_arrival'),
    /** A lowercase UUID as its 16 bytes (BLOB), any other event id as TEXT. */
    eventId: blob('event_id'),
  },
  (t) => [
    primaryKey({ columns: [t.floorSpaceKey, t.observedMs] }),
    index('occupancy_readings_observed_idx').on(sql`strftime('%Y-%m-%dT%H:%M:%fZ', ${t.observedMs} / 1000.0, 'unixepoch')`),
    check('occupancy_readings_headcount_non_negative', sql`${t.headcount} >= 0`),
  ],
);

/** The documented reading table, as users and the reports see it: a view over the tables above. */
export const occupancy = sqliteView('occupancy', {
  customerId: text('customer_id').notNull(),
  floorSpaceId: text('floor_space_id').notNull(),
  observedAt: text('observed_at').notNull(),
  occupancyStatus: text('occupancy_status').notNull(),
  headcount: integer('headcount'),
  source: text('source', { enum: ['poll', 'webhook'] }).notNull(),
  eventId: text('event_id'),
  ingestedAt: text('ingested_at').notNull(),
  polledAt: text('polled_at'),
  deliveredAt: text('delivered_at'),
}).existing();

/**
 * The time-weighted aggregates (db/schema/pg.ts explains them). Epoch milliseconds and figures are INTEGER (SQLite's
 * integers are 64-bit); `working` and `holiday` are 0 or 1.
 */
export const occupancyBuckets = sqliteTable(
  'occupancy_buckets',
  {
    floorSpaceKey: integer('floor_space_key').notNull(),
    startMs: integer('start_ms').notNull(),
    endMs: integer('end_ms').notNull(),
    localDate: text('local_date').notNull(),
    localHour: integer('local_hour').notNull(),
    weekday: integer('weekday').notNull(),
    working: integer('working').notNull(),
    knownMs: integer('known_ms').notNull(),
    occupiedMs: integer('occupied_ms').notNull(),
    headcountMs: integer('headcount_ms').notNull(),
    headcountKnownMs: integer('headcount_known_ms').notNull(),
    peakHeadcount: integer('peak_headcount'),
    readings: integer('readings').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.floorSpaceKey, t.startMs] }),
    index('occupancy_buckets_start_idx').on(t.startMs),
    check('occupancy_buckets_working_bool', sql`${t.working} IN (0, 1)`),
  ],
);

export const calendarDays = sqliteTable(
  'calendar_days',
  {
    customerId: text('customer_id').notNull(),
    buildingId: text('building_id').notNull(),
    localDate: text('local_date').notNull(),
    startMs: integer('start_ms').notNull(),
    endMs: integer('end_ms').notNull(),
    weekday: integer('weekday').notNull(),
    workingMs: integer('working_ms').notNull(),
    holiday: integer('holiday').notNull(),
    timeZone: text('time_zone').notNull(),
  },
  (t) => [primaryKey({ columns: [t.customerId, t.buildingId, t.localDate] }), check('calendar_days_holiday_bool', sql`${t.holiday} IN (0, 1)`)],
);

/** The daily rollup of occupancy_buckets (db/schema/pg.ts explains it). */
export const occupancyDays = sqliteTable(
  'occupancy_days',
  {
    floorSpaceKey: integer('floor_space_key').notNull(),
    localDate: text('local_date').notNull(),
    knownMs: integer('known_ms').notNull(),
    occupiedMs: integer('occupied_ms').notNull(),
    headcountMs: integer('headcount_ms').notNull(),
    headcountKnownMs: integer('headcount_known_ms').notNull(),
    readings: integer('readings').notNull(),
    peakHeadcount: integer('peak_headcount'),
    workingKnownMs: integer('working_known_ms').notNull(),
    workingOccupiedMs: integer('working_occupied_ms').notNull(),
    workingHeadcountMs: integer('working_headcount_ms').notNull(),
    workingHeadcountKnownMs: integer('working_headcount_known_ms').notNull(),
    workingPeakHeadcount: integer('working_peak_headcount'),
  },
  (t) => [primaryKey({ columns: [t.floorSpaceKey, t.localDate] })],
);

/** The floor-level hourly rollup of occupancy_buckets (db/schema/pg.ts explains it). */
export const occupancyFloorHours = sqliteTable(
  'occupancy_floor_hours',
  {
    customerId: text('customer_id').notNull(),
    buildingId: text('building_id').notNull(),
    floorId: text('floor_id'),
    floorKey: text('floor_key').notNull(),
    startMs: integer('start_ms').notNull(),
    endMs: integer('end_ms').notNull(),
    localDate: text('local_date').notNull(),
    localHour: integer('local_hour').notNull(),
    weekday: integer('weekday').notNull(),
    working: integer('working').notNull(),
    knownMs: integer('known_ms').notNull(),
    occupiedMs: integer('occupied_ms').notNull(),
    headcountMs: integer('headcount_ms').notNull(),
    headcountKnownMs: integer('headcount_known_ms').notNull(),
    capacityMs: integer('capacity_ms'),
    capacityHeadcountMs: integer('capacity_headcount_ms'),
    readings: integer('readings').notNull(),
    peakHeadcount: integer('peak_headcount'),
    peakUtilization: real('peak_utilization'),
  },
  (t) => [
    index('occupancy_floor_hours_floor_idx').on(t.customerId, t.buildingId, t.floorKey, t.startMs),
    index('occupancy_floor_hours_date_idx').on(t.localDate),
    index('occupancy_floor_hours_building_date_idx').on(t.customerId, t.buildingId, t.localDate),
    check('occupancy_floor_hours_working_bool', sql`${t.working} IN (0, 1)`),
  ],
);

export const aggregateCalendars = sqliteTable(
  'aggregate_calendars',
  {
    customerId: text('customer_id').notNull(),
    buildingId: text('building_id').notNull(),
    timeZone: text('time_zone').notNull(),
    calendar: text('calendar').notNull(),
    maxHoldMs: integer('max_hold_ms').notNull(),
    computedAt: text('computed_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.customerId, t.buildingId] }), isoCheck('aggregate_calendars', 'computed_at', t.computedAt)],
);

/**
 * The aggregates a poll page made stale and no refresh has recomputed yet (docs/reporting.md, "When the aggregates are
 * current"): a row per floor space and stale range (first_ms the earliest reading changed, last_ms the latest; the
 * refresh recomputes [first_ms, last_ms + the building's max hold)): a backfill's windows in flight stay apart, and a
 * fold's range that starts where a pending one does widens it. Written when a refresh folds the pages' rows, so a
 * killed run loses none; `revision` counts the folds that wrote it, and a refresh deletes the row only if no fold wrote
 * it since the refresh read it.
 */
export const aggregateInvalidations = sqliteTable(
  'aggregate_invalidations',
  {
    /** floor_spaces.floor_space_key */
    floorSpaceKey: integer('floor_space_key').notNull(),
    customerId: text('customer_id').notNull(),
    firstMs: integer('first_ms').notNull(),
    lastMs: integer('last_ms').notNull(),
    revision: integer('revision').notNull(),
    /** When the oldest page still unrefreshed committed. */
    invalidatedAt: text('invalidated_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.floorSpaceKey, t.firstMs] }),
    index('aggregate_invalidations_customer_idx').on(t.customerId),
    isoCheck('aggregate_invalidations', 'invalidated_at', t.invalidatedAt),
  ],
);

/** What each poll page made stale, one row per page, until a refresh folds it into aggregate_invalidations. */
export const aggregatePageInvalidations = sqliteTable(
  'aggregate_page_invalidations',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    customerId: text('customer_id').notNull(),
    /** JSON: [first_ms, last_ms, floor_space_key, ...] per group of the page's floor spaces whose readings span the same (0020). */
    spans: text('spans').notNull(),
    invalidatedAt: text('invalidated_at').notNull(),
  },
  (t) => [index('aggregate_page_invalidations_customer_idx').on(t.customerId), isoCheck('aggregate_page_invalidations', 'invalidated_at', t.invalidatedAt)],
);

export const syncState = sqliteTable(
  'sync_state',
  {
    customerId: text('customer_id').notNull(),
    stream: text('stream').notNull(),
    watermark: text('watermark'),
    windowStart: text('window_start'),
    windowEnd: text('window_end'),
    pageCursor: text('page_cursor'),
    windows: text('windows'),
    rangeStart: text('range_start'),
    rangeEnd: text('range_end'),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.customerId, t.stream] }),
    isoCheck('sync_state', 'watermark', t.watermark),
    isoCheck('sync_state', 'window_start', t.windowStart),
    isoCheck('sync_state', 'window_end', t.windowEnd),
    isoCheck('sync_state', 'range_start', t.rangeStart),
    isoCheck('sync_state', 'range_end', t.rangeEnd),
    isoCheck('sync_state', 'updated_at', t.updatedAt),
  ],
);

export const syncRuns = sqliteTable(
  'sync_runs',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    customerId: text('customer_id').notNull(),
    stream: text('stream').notNull(),
    mode: text('mode', { enum: ['incremental', 'backfill', 'full'] }).notNull(),
    startedAt: text('started_at').notNull(),
    finishedAt: text('finished_at'),
    status: text('status', { enum: ['running', 'succeeded', 'failed', 'interrupted'] }).notNull(),
    pages: integer('pages').notNull().default(0),
    records: integer('records').notNull().default(0),
    /** Records of this run that broke their declared types and went to quarantined_records instead. */
    rejected: integer('rejected').notNull().default(0),
    error: text('error'),
  },
  (t) => [
    index('sync_runs_customer_stream_started_idx').on(t.customerId, t.stream, t.startedAt),
    isoCheck('sync_runs', 'started_at', t.startedAt),
    isoCheck('sync_runs', 'finished_at', t.finishedAt),
    check('sync_runs_mode_known', sql`${t.mode} IN ('incremental', 'backfill', 'full')`),
    check('sync_runs_status_known', sql`${t.status} IN ('running', 'succeeded', 'failed', 'interrupted')`),
  ],
);

/**
 * The latest run and the latest successful run of each customer and stream, kept with every run start and finish,
 * so health and status read one row per stream however long the run history (sync_runs) grows.
 */
export const syncLastRuns = sqliteTable(
  'sync_last_runs',
  {
    customerId: text('customer_id').notNull(),
    stream: text('stream').notNull(),
    lastRunId: integer('last_run_id').notNull(),
    lastSuccessRunId: integer('last_success_run_id'),
  },
  (t) => [primaryKey({ columns: [t.customerId, t.stream] })],
);

export const webhookDeliveries = sqliteTable(
  'webhook_deliveries',
  {
    customerId: text('customer_id').notNull(),
    id: text('id').notNull(),
    type: text('type').notNull(),
    createdAt: text('created_at').notNull(),
    sentAt: text('sent_at').notNull(),
    receivedAt: text('received_at').notNull(),
    attempts: integer('attempts').notNull().default(1),
    body: text('body').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.customerId, t.id] }),
    index('webhook_deliveries_customer_received_idx').on(t.customerId, t.receivedAt),
    isoCheck('webhook_deliveries', 'created_at', t.createdAt),
    isoCheck('webhook_deliveries', 'sent_at', t.sentAt),
    isoCheck('webhook_deliveries', 'received_at', t.receivedAt),
  ],
);

/**
 * Every change an operator made to sync state by hand (`occupancy-sync state rewind|reset`): who, when, and the
 * state before and after, so a watermark that moved backwards is never a mystery.
 */
export const syncStateChanges = sqliteTable(
  'sync_state_changes',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    customerId: text('customer_id').notNull(),
    stream: text('stream').notNull(),
    action: text('action', { enum: ['rewind', 'reset'] }).notNull(),
    /** The OS user and host that ran the command (`user@host`, `sudo` user included). */
    actor: text('actor').notNull(),
    changedAt: text('changed_at').notNull(),
    oldWatermark: text('old_watermark'),
    newWatermark: text('new_watermark'),
    /** The whole sync_state row before and after, as JSON (NULL: there was none / there is none). */
    oldState: text('old_state'),
    newState: text('new_state'),
  },
  (t) => [
    index('sync_state_changes_customer_stream_idx').on(t.customerId, t.stream, t.changedAt),
    isoCheck('sync_state_changes', 'changed_at', t.changedAt),
    isoCheck('sync_state_changes', 'old_watermark', t.oldWatermark),
    isoCheck('sync_state_changes', 'new_watermark', t.newWatermark),
    check('sync_state_changes_action_known', sql`${t.action} IN ('rewind', 'reset')`),
  ],
);

/**
 * API records that broke their stream's declared types (docs/sync.md, "Quarantine"): kept raw with the reason, in the
 * transaction of the page they came with, never written to the sink. One row per distinct raw record and stream.
 */
export const quarantinedRecords = sqliteTable(
  'quarantined_records',
  {
    customerId: text('customer_id').notNull(),
    stream: text('stream').notNull(),
    /** SHA-256 (hex, 32 characters) of the raw record's JSON. */
    fingerprint: text('fingerprint').notNull(),
    windowStart: text('window_start'),
    windowEnd: text('window_end'),
    record: text('record').notNull(),
    reason: text('reason').notNull(),
    firstRunId: integer('first_run_id'),
    lastRunId: integer('last_run_id'),
    firstSeenAt: text('first_seen_at').notNull(),
    lastSeenAt: text('last_seen_at').notNull(),
    timesSeen: integer('times_seen').notNull().default(1),
  },
  (t) => [
    primaryKey({ columns: [t.customerId, t.stream, t.fingerprint] }),
    index('quarantined_records_customer_seen_idx').on(t.customerId, t.stream, t.lastSeenAt),
    isoCheck('quarantined_records', 'window_start', t.windowStart),
    isoCheck('quarantined_records', 'window_end', t.windowEnd),
    isoCheck('quarantined_records', 'first_seen_at', t.firstSeenAt),
    isoCheck('quarantined_records', 'last_seen_at', t.lastSeenAt),
  ],
);

/**
 * SQLite only: run locks between processes sharing one database file (Postgres uses advisory locks instead).
 * A row is a held lock; its holder is identified so a lock left by a killed process can be recognised and taken over.
 */
export const syncLocks = sqliteTable(
  'sync_locks',
  {
    customerId: text('customer_id').notNull(),
    stream: text('stream').notNull(),
    holderPid: integer('holder_pid').notNull(),
    holderHost: text('holder_host').notNull(),
    /** Start time of the holder process as the OS reports it (Linux /proc), to detect a reused pid. */
    holderStart: text('holder_start'),
    /** Random per acquisition: only the acquirer can release, and a restarted process never mistakes it for its own. */
    token: text('token').notNull(),
    acquiredAt: text('acquired_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.customerId, t.stream] }), isoCheck('sync_locks', 'acquired_at', t.acquiredAt)],
);
