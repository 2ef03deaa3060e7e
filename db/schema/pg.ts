import { pgCore, sql } from './drizzle.ts';

const { bigint, boolean, check, doublePrecision, index, integer, pgTable, pgView, primaryKey, smallint, text, timestamp, unique, uuid } = pgCore();

/**
 * Postgres schema. Timestamps are timestamptz with millisecond precision (the platform's resolution); the store reads
 * them back as canonical ISO strings (`2026-01-01T00:00:00.000Z`). No schema qualifier and no enum types, so the
 * migrations land in whatever schema `search_path` selects (`?schema=` in DATABASE_URL). Column names and meanings
 * match db/schema/sqlite.ts exactly (README.md, "SQL schema"); change them only through migrations.
 */

const ts = (name: string) => timestamp(name, { withTimezone: true, precision: 3, mode: 'string' });

export const buildings = pgTable(
  'buildings',
  {
    customerId: text('customer_id').notNull(),
    id: text('id').notNull(),
    name: text('name').notNull(),
    /** The building's IANA time zone (`Europe/London`), NULL when the platform does not say. */
    timeZone: text('time_zone'),
    firstSeenAt: ts('first_seen_at').notNull(),
    lastSeenAt: ts('last_seen_at').notNull(),
    deletedAt: ts('deleted_at'),
  },
  (t) => [primaryKey({ columns: [t.customerId, t.id] })],
);

/** Floors of buildings, as the platform lists them (docs/reporting.md). Unknown values are NULL, never invented. */
export const floors = pgTable(
  'floors',
  {
    customerId: text('customer_id').notNull(),
    id: text('id').notNull(),
    buildingId: text('building_id'),
    name: text('name'),
    /** The storey as the platform numbers it (0 ground, negative below), NULL when it does not say. */
    level: integer('level'),
    firstSeenAt: ts('first_seen_at').notNull(),
    lastSeenAt: ts('last_seen_at').notNull(),
    deletedAt: ts('deleted_at'),
  },
  (t) => [primaryKey({ columns: [t.customerId, t.id] })],
);

/**
 * Occupancy is stored compactly (about a sixth of the bytes of one wide row per reading): floor spaces and statuses
 * as small integer keys into dictionaries, the provenance of each page of arrivals once in occupancy_arrivals, event
 * ids that are UUIDs as 16 bytes. Users read it through the `occupancy` view below, whose names, columns and meanings
 * are the documented table's (docs/reporting.md); the tables behind it are internal. See db/migrations 0008 and 0009.
 *
 * floor_spaces is both the readings' dictionary and the documented floor space dimension (one row per floor space,
 * one name): a reading of a space never listed makes a row with only its id (never listed: NULL listing times); a
 * listing fills in the rest and keeps the row's floor_space_key. The key is given by the store (BY DEFAULT) so a
 * listing that meets known spaces draws no value from the identity's sequence.
 */
export const floorSpaces = pgTable(
  'floor_spaces',
  {
    floorSpaceKey: integer('floor_space_key').primaryKey().generatedByDefaultAsIdentity(),
    customerId: text('customer_id').notNull(),
    id: text('floor_space_id').notNull(),
    name: text('name'),
    floorId: text('floor_id'),
    buildingId: text('building_id'),
    /** How many people the space is meant for, NULL when the platform does not say. */
    capacity: integer('capacity'),
    /** The platform's word for the kind of space (`meeting_room`, `desk`), as it spells it. */
    spaceType: text('space_type'),
    /** NULL for a space only readings have named: it has never been listed, so it is never soft-deleted. */
    firstSeenAt: ts('first_seen_at'),
    lastSeenAt: ts('last_seen_at'),
    deletedAt: ts('deleted_at'),
  },
  (t) => [
    unique('floor_spaces_customer_floor_space_unique').on(t.customerId, t.id),
    check('floor_spaces_capacity_non_negative', sql`${t.capacity} >= 0`),
  ],
);

export const occupancyStatuses = pgTable('occupancy_statuses', {
  statusCode: integer('status_code').primaryKey().generatedAlwaysAsIdentity(),
  occupancyStatus: text('occupancy_status').notNull().unique('occupancy_statuses_status_unique'),
});

/** One row per page of readings written (a polled page, a webhook delivery): who brought them, and when. */
export const occupancyArrivals = pgTable(
  'occupancy_arrivals',
  {
    arrivalKey: integer('arrival_key').primaryKey().generatedAlwaysAsIdentity(),
    source: text('source', { enum: ['poll', 'webhook'] }).notNull(),
    arrivedAt: ts('arrived_at').notNull(),
  },
  (t) => [check('occupancy_arrivals_source_known', sql`${t.source} IN ('poll', 'webhook')`)],
);

/**
 * One row per reading. Column order is storage order (widest alignment first, so no padding): 64 bytes of tuple.
 * polled_arrival and delivered_arrival are the first arrival of the reading by polling and by webhook; the earlier
 * (lower key) of the two is its first arrival (source, ingested_at). An event id that is a lowercase UUID is kept in
 * event_uuid, any other in event_text. Partitioned by RANGE (observed_at), one partition per UTC month, since
 * migration 0013 (drizzle cannot declare partitioning: the migration and src/store/reading-partitions.ts do it).
 */
export const occupancyReadings = pgTable(
  'occupancy_readings',
  {
    observedAt: ts('observed_at').notNull(),
    eventUuid: uuid('event_uuid'),
    floorSpaceKey: integer('floor_space_key').notNull(),
    /** NULL: the sensor sent no headcount (presence-only sensors), never 0. */
    headcount: integer('headcount'),
    polledArrival: integer('polled_arrival'),
    deliveredArrival: integer('delivered_arrival'),
    statusCode: integer('status_code').notNull(),
    eventText: text('event_text'),
  },
  (t) => [
    primaryKey({ name: 'occupancy_readings_pkey', columns: [t.floorSpaceKey, t.observedAt] }),
    // Time-range scans (reports, views, users' SQL on occupancy.observed_at); the primary key serves per-space ranges.
    index('occupancy_readings_observed_idx').on(t.observedAt),
    check('occupancy_readings_headcount_non_negative', sql`${t.headcount} >= 0`),
  ],
);

/** The documented reading table, as users and the reports see it: a view over the tables above. */
export const occupancy = pgView('occupancy', {
  customerId: text('customer_id').notNull(),
  floorSpaceId: text('floor_space_id').notNull(),
  observedAt: ts('observed_at').notNull(),
  occupancyStatus: text('occupancy_status').notNull(),
  headcount: integer('headcount'),
  source: text('source', { enum: ['poll', 'webhook'] }).notNull(),
  eventId: text('event_id'),
  ingestedAt: ts('ingested_at').notNull(),
  /** First time polling read this reading, and first time a webhook delivery brought it (reconciliation). */
  polledAt: ts('polled_at'),
  deliveredAt: ts('delivered_at'),
}).existing();

/** Epoch milliseconds as a bigint column, read as a JS number (exact: instants and figures stay below 2^53). */
const ms = (name: string) => bigint(name, { mode: 'number' });

/**
 * The time-weighted aggregates (docs/reporting.md, "Time-weighted figures"), kept by every commit of readings in its own
 * transaction and rebuilt from the readings by `occupancy-sync aggregates rebuild`. One row per floor space and bucket
 * holding any data: a local hour of the space's building's zone, cut further at the working calendar's edges. Every
 * figure is an exact integer of milliseconds (person-milliseconds for headcount_ms), so sums are exact in any order.
 */
export const occupancyBuckets = pgTable(
  'occupancy_buckets',
  {
    /** floor_spaces.floor_space_key */
    floorSpaceKey: integer('floor_space_key').notNull(),
    startMs: ms('start_ms').notNull(),
    endMs: ms('end_ms').notNull(),
    /** The local date (`YYYY-MM-DD`) of the building's day the bucket belongs to. */
    localDate: text('local_date').notNull(),
    /** Wall-clock hour of the bucket's start, 0-23. */
    localHour: smallint('local_hour').notNull(),
    /** ISO weekday of local_date: Monday 1 ... Sunday 7. */
    weekday: smallint('weekday').notNull(),
    /** The bucket is working time of the building's calendar. */
    working: boolean('working').notNull(),
    knownMs: ms('known_ms').notNull(),
    occupiedMs: ms('occupied_ms').notNull(),
    headcountMs: ms('headcount_ms').notNull(),
    headcountKnownMs: ms('headcount_known_ms').notNull(),
    peakHeadcount: integer('peak_headcount'),
    readings: integer('readings').notNull(),
  },
  (t) => [primaryKey({ name: 'occupancy_buckets_pkey', columns: [t.floorSpaceKey, t.startMs] }), index('occupancy_buckets_start_idx').on(t.startMs)],
);

/**
 * One row per building (building_id '' for spaces of no known building: the default calendar) and local date the
 * aggregates cover, with that day's working time, so coverage counts the hours nobody measured.
 */
export const calendarDays = pgTable(
  'calendar_days',
  {
    customerId: text('customer_id').notNull(),
    buildingId: text('building_id').notNull(),
    localDate: text('local_date').notNull(),
    startMs: ms('start_ms').notNull(),
    endMs: ms('end_ms').notNull(),
    weekday: smallint('weekday').notNull(),
    workingMs: ms('working_ms').notNull(),
    holiday: boolean('holiday').notNull(),
    /** The IANA zone the day was computed in. */
    timeZone: text('time_zone').notNull(),
  },
  (t) => [primaryKey({ columns: [t.customerId, t.buildingId, t.localDate] })],
);

/**
 * The daily rollup of occupancy_buckets (derived, never a source): one row per floor space and local date of its
 * building that holds a bucket, with the day's sums over all its buckets and over its working ones. Kept wherever
 * buckets are written (src/store/aggregate-days.ts) and rebuilt with them; the day views read it instead of summing
 * the buckets (docs/reporting.md, "The daily rollup").
 */
export const occupancyDays = pgTable(
  'occupancy_days',
  {
    /** floor_spaces.floor_space_key */
    floorSpaceKey: integer('floor_space_key').notNull(),
    /** occupancy_buckets.local_date of the day's buckets. */
    localDate: text('local_date').notNull(),
    knownMs: ms('known_ms').notNull(),
    occupiedMs: ms('occupied_ms').notNull(),
    headcountMs: ms('headcount_ms').notNull(),
    headcountKnownMs: ms('headcount_known_ms').notNull(),
    readings: integer('readings').notNull(),
    peakHeadcount: integer('peak_headcount'),
    workingKnownMs: ms('working_known_ms').notNull(),
    workingOccupiedMs: ms('working_occupied_ms').notNull(),
    workingHeadcountMs: ms('working_headcount_ms').notNull(),
    workingHeadcountKnownMs: ms('working_headcount_known_ms').notNull(),
    workingPeakHeadcount: integer('working_peak_headcount'),
  },
  (t) => [primaryKey({ name: 'occupancy_days_pkey', columns: [t.floorSpaceKey, t.localDate] })],
);

/**
 * The floor-level hourly rollup of occupancy_buckets (derived, never a source): one row per customer, building, floor
 * and bucket that a floor space of the floor measured, with the buckets' sums, the capacity-weighted sums (at each
 * space's current capacity) and the peaks. A floor is what floor_hours groups by, COALESCE(floor_id, '') and floor_id:
 * no primary key, as floor_id may be NULL beside a '' floor of the same building. Kept wherever buckets are written and
 * wherever a listing changes a space's building, floor or capacity (src/store/aggregate-floors.ts); floor_hours and
 * building_hour_sums read it (docs/reporting.md, "The floor-level hourly rollup").
 */
export const occupancyFloorHours = pgTable(
  'occupancy_floor_hours',
  {
    customerId: text('customer_id').notNull(),
    /** COALESCE(floor_spaces.building_id, '') */
    buildingId: text('building_id').notNull(),
    floorId: text('floor_id'),
    /** COALESCE(floor_id, ''): what the index and the refresh look a floor up by. */
    floorKey: text('floor_key').notNull(),
    startMs: ms('start_ms').notNull(),
    endMs: ms('end_ms').notNull(),
    localDate: text('local_date').notNull(),
    localHour: smallint('local_hour').notNull(),
    weekday: smallint('weekday').notNull(),
    working: boolean('working').notNull(),
    knownMs: ms('known_ms').notNull(),
    occupiedMs: ms('occupied_ms').notNull(),
    headcountMs: ms('headcount_ms').notNull(),
    headcountKnownMs: ms('headcount_known_ms').notNull(),
    capacityMs: ms('capacity_ms'),
    capacityHeadcountMs: ms('capacity_headcount_ms'),
    readings: ms('readings').notNull(),
    peakHeadcount: integer('peak_headcount'),
    peakUtilization: doublePrecision('peak_utilization'),
  },
  (t) => [
    index('occupancy_floor_hours_floor_idx').on(t.customerId, t.buildingId, t.floorKey, t.startMs),
    index('occupancy_floor_hours_date_idx').on(t.localDate),
    index('occupancy_floor_hours_building_date_idx').on(t.customerId, t.buildingId, t.localDate),
  ],
);

/** What a building's stored aggregates were computed with: a change of any of these rebuilds that building's rows. */
export const aggregateCalendars = pgTable(
  'aggregate_calendars',
  {
    customerId: text('customer_id').notNull(),
    buildingId: text('building_id').notNull(),
    timeZone: text('time_zone').notNull(),
    /** The working calendar as canonical JSON. */
    calendar: text('calendar').notNull(),
    maxHoldMs: ms('max_hold_ms').notNull(),
    computedAt: ts('computed_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.customerId, t.buildingId] })],
);

/**
 * The aggregates a poll page made stale and no refresh has recomputed yet (docs/reporting.md, "When the aggregates are
 * current"): a row per floor space and stale range (first_ms the earliest reading changed, last_ms the latest; the
 * refresh recomputes [first_ms, last_ms + the building's max hold)): a backfill's windows in flight stay apart, and a
 * fold's range that starts where a pending one does widens it. Written when a refresh folds the pages' rows, so a
 * killed run loses none; `revision` counts the folds that wrote it, and a refresh deletes the row only if no fold wrote
 * it since the refresh read it.
 */
export const aggregateInvalidations = pgTable(
  'aggregate_invalidations',
  {
    /** floor_spaces.floor_space_key */
    floorSpaceKey: integer('floor_space_key').notNull(),
    customerId: text('customer_id').notNull(),
    firstMs: ms('first_ms').notNull(),
    lastMs: ms('last_ms').notNull(),
    revision: ms('revision').notNull(),
    /** When the oldest page still unrefreshed committed. */
    invalidatedAt: ts('invalidated_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.floorSpaceKey, t.firstMs] }), index('aggregate_invalidations_customer_idx').on(t.customerId)],
);

/** What each poll page made stale, one row per page, until a refresh folds it into aggregate_invalidations. */
export const aggregatePageInvalidations = pgTable(
  'aggregate_page_invalidations',
  {
    id: ms('id').primaryKey().generatedAlwaysAsIdentity(),
    customerId: text('customer_id').notNull(),
    /** JSON: [first_ms, last_ms, floor_space_key, ...] per group of the page's floor spaces whose readings span the same (0020). */
    spans: text('spans').notNull(),
    invalidatedAt: ts('invalidated_at').notNull(),
  },
  (t) => [index('aggregate_page_invalidations_customer_idx').on(t.customerId)],
);

export const syncState = pgTable(
  'sync_state',
  {
    customerId: text('customer_id').notNull(),
    stream: text('stream').notNull(),
    watermark: ts('watermark'),
    windowStart: ts('window_start'),
    windowEnd: ts('window_end'),
    pageCursor: text('page_cursor'),
    windows: text('windows'),
    rangeStart: ts('range_start'),
    rangeEnd: ts('range_end'),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.customerId, t.stream] })],
);

export const syncRuns = pgTable(
  'sync_runs',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    customerId: text('customer_id').notNull(),
    stream: text('stream').notNull(),
    mode: text('mode', { enum: ['incremental', 'backfill', 'full'] }).notNull(),
    startedAt: ts('started_at').notNull(),
    finishedAt: ts('finished_at'),
    status: text('status', { enum: ['running', 'succeeded', 'failed', 'interrupted'] }).notNull(),
    pages: integer('pages').notNull().default(0),
    records: integer('records').notNull().default(0),
    /** Records of this run that broke their declared types and went to quarantined_records instead. */
    rejected: integer('rejected').notNull().default(0),
    error: text('error'),
  },
  (t) => [
    index('sync_runs_customer_stream_started_idx').on(t.customerId, t.stream, t.startedAt),
    check('sync_runs_mode_known', sql`${t.mode} IN ('incremental', 'backfill', 'full')`),
    check('sync_runs_status_known', sql`${t.status} IN ('running', 'succeeded', 'failed', 'interrupted')`),
  ],
);

/**
 * The latest run and the latest successful run of each customer and stream, kept with every run start and finish,
 * so health and status read one row per stream however long the run history (sync_runs) grows.
 */
export const syncLastRuns = pgTable(
  'sync_last_runs',
  {
    customerId: text('customer_id').notNull(),
    stream: text('stream').notNull(),
    lastRunId: integer('last_run_id').notNull(),
    lastSuccessRunId: integer('last_success_run_id'),
  },
  (t) => [primaryKey({ columns: [t.customerId, t.stream] })],
);

export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    customerId: text('customer_id').notNull(),
    id: text('id').notNull(),
    type: text('type').notNull(),
    createdAt: ts('created_at').notNull(),
    sentAt: ts('sent_at').notNull(),
    receivedAt: ts('received_at').notNull(),
    attempts: integer('attempts').notNull().default(1),
    body: text('body').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.customerId, t.id] }),
    index('webhook_deliveries_customer_received_idx').on(t.customerId, t.receivedAt),
  ],
);

/**
 * API records that broke their stream's declared types (docs/sync.md, "Quarantine"): kept raw with the reason, in the
 * transaction of the page they came with, never written to the sink. One row per distinct raw record and stream.
 */
export const quarantinedRecords = pgTable(
  'quarantined_records',
  {
    customerId: text('customer_id').notNull(),
    stream: text('stream').notNull(),
    /** SHA-256 (hex, 32 characters) of the raw record's JSON. */
    fingerprint: text('fingerprint').notNull(),
    windowStart: ts('window_start'),
    windowEnd: ts('window_end'),
    record: text('record').notNull(),
    reason: text('reason').notNull(),
    firstRunId: integer('first_run_id'),
    lastRunId: integer('last_run_id'),
    firstSeenAt: ts('first_seen_at').notNull(),
    lastSeenAt: ts('last_seen_at').notNull(),
    timesSeen: integer('times_seen').notNull().default(1),
  },
  (t) => [
    primaryKey({ columns: [t.customerId, t.stream, t.fingerprint] }),
    index('quarantined_records_customer_seen_idx').on(t.customerId, t.stream, t.lastSeenAt),
  ],
);

/**
 * Every change an operator made to sync state by hand (`occupancy-sync state rewind|reset`): who, when, and the
 * state before and after, so a watermark that moved backwards is never a mystery.
 */
export const syncStateChanges = pgTable(
  'sync_state_changes',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    customerId: text('customer_id').notNull(),
    stream: text('stream').notNull(),
    action: text('action', { enum: ['rewind', 'reset'] }).notNull(),
    /** The OS user and host that ran the command (`user@host`, `sudo` user included). */
    actor: text('actor').notNull(),
    changedAt: ts('changed_at').notNull(),
    oldWatermark: ts('old_watermark'),
    newWatermark: ts('new_watermark'),
    /** The whole sync_state row before and after, as JSON (NULL: there was none / there is none). */
    oldState: text('old_state'),
    newState: text('new_state'),
  },
  (t) => [
    index('sync_state_changes_customer_stream_idx').on(t.customerId, t.stream, t.changedAt),
    check('sync_state_changes_action_known', sql`${t.action} IN ('rewind', 'reset')`),
  ],
);
