import { sql } from '../../db/schema/drizzle.ts';
import type { Clock } from '../clock.ts';
import { DatabaseLocationError, StoreError, TableChangeError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { Adapter, Executor, QueryOptions } from './adapter.ts';
import { DeclaredSinks, planTables } from './declare-tables.ts';
import { targetName, targetRelation } from './declared-tables.ts';
import { explainDatabaseError, isCancelledOnRequest, storeError, wrapDriverError } from './errors.ts';
import { migrate, pendingMigrations, type MigratorOptions } from './migrator.ts';
import { canonicalTimestamp } from './timestamps.ts';
import type { PageSpans } from './aggregate-page-invalidations.ts';
import { readyPage, writePage, writeState } from './page-write.ts';
import { AggregateKeeper } from './aggregate-store.ts';
import { DeliveryRefresh } from './delivery-refresh.ts';
import { RunRefresh } from './run-refresh.ts';
import type { RefreshOptions } from './aggregate-invalidations.ts';
import { ReadingPartitions } from './reading-partitions.ts';
import { updatePlannerStatistics } from './planner-statistics.ts';
import { pruneReadings } from './reading-retention.ts';
import { closeAbandonedRuns, finishRun, lastRuns, pruneRuns, startRun } from './run-records.ts';
import { quarantineRecords } from './quarantine.ts';
import { applyStateChange } from './state-change.ts';
import { normaliseState, toState, toStateChange, type StateRow } from './state-rows.ts';
import type {
  AggregateRebuild, AggregateRefresh, AggregateSettings, CalendarDrift, PendingAggregates, RebuiltBuilding, DeliveryRecord, IsoUtc, OccupancyRecord, PageWrite, PrunedReadings,
  QuarantineWrite, RunRecord, RunStatus, SinkTarget, StreamSink, DeclaredTable, TableStep, StateChange, StateChangeRecord, Store,
  SyncState, SyncStateUpdate, UnmappedStatus,
} from './types.ts';

/**
 * The dialect-neutral store: every rule (atomic pages, the watermark guard, delivery idempotency, soft deletes) is
 * written here once, over an Adapter. Statements are drizzle `sql` templates in the SQL both dialects share
 * (ON CONFLICT, RETURNING, CASE); drizzle compiles each to its dialect's placeholders and the adapter runs it prepared.
 * The per-dialect query builders would only make two copies of the same statements.
 */
export class SqlStore implements Store {
  readonly #db: Adapter;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #migrator: Omit<MigratorOptions, 'logger'>;
  /** The declared tables' sinks (declareTables). */
  readonly #tables = new DeclaredSinks();
  /** The time-weighted aggregates: invalidated by poll pages and deliveries, refreshed (aggregate-store.ts). */
  readonly #aggregates: AggregateKeeper;
  /** The refresh of what deliveries made stale, a second after the first of them (delivery-refresh.ts). */
  readonly #deliveryRefresh: DeliveryRefresh;
  /** The refresh beside a run of what its poll pages made stale (run-refresh.ts). */
  readonly #runRefresh: RunRefresh;
  /** Postgres: each month's partition made before a page with readings in it commits (migration 0013). */
  readonly #partitions: ReadingPartitions;

  constructor(adapter: Adapter, clock: Clock, logger: Logger, migrator: Omit<MigratorOptions, 'logger'> = {}, options: { maintainAggregates?: boolean; deliveryRefreshMs?: number } = {}) {
    this.#db = adapter;
    this.#clock = clock;
    this.#logger = logger;
    this.#migrator = migrator;
    this.#aggregates = new AggregateKeeper(adapter, options.maintainAggregates !== false);
    this.#partitions = new ReadingPartitions(adapter, logger);
    // A failure there is the aggregates' lag, not the run's: one warning, and its rows stay pending.
    this.#runRefresh = new RunRefresh({
      refresh: (customerId) => this.#refresh(customerId, undefined, { holdFronts: true }),
      failed: (customerId, error) =>
        this.#logger.warn({ err: error, customer: customerId }, `the aggregates were not refreshed during the run (its end or the next run does it): ${(error as Error).message}`),
      overlaps: adapter.dialect === 'postgres',
      maxHoldMs: (customerId) => this.#aggregates.maxHoldOf(customerId),
    });
    this.#deliveryRefresh = new DeliveryRefresh({
      refresh: (customerId) => this.refreshAggregates(customerId),
      failed: (customerId, error) =>
        this.#logger.warn({ err: error, customer: customerId }, `the aggregates of customer ${customerId}'s deliveries were not refreshed (the next delivery, run, report or start does it): ${(error as Error).message}`),
      ...(options.deliveryRefreshMs !== undefined && { delayMs: options.deliveryRefreshMs }),
    });
  }

  get dialect() {
    return this.#db.dialect;
  }

  /**
   * Refuses (StoreError naming the fix) a database whose schema is behind this version, for read-only commands that
   * cannot migrate it themselves.
   */
  async requireCurrentSchema(): Promise<void> {
    const pending = await this.#wrap('reading the applied migrations', () => pendingMigrations(this.#db, this.#migrator));
    if (pending.length === 0) return;
    if (pending[0] === '0000_tables') {
      // DATABASE_URL names a database with nothing of ours, as a missing SQLite file does for a reading command: 78.
      throw new DatabaseLocationError(
        `the database at ${this.#db.location} holds no occupancy-sync tables yet. ` +
          'Fix: run `occupancy-sync sync` (or `occupancy-sync migrate`) first, or point DATABASE_URL at the database it writes to',
      );
    }
    throw new StoreError(
      `the database at ${this.#db.location} lacks ${pending.length} migration(s) of this version (${pending.join(', ')}). ` +
        'Fix: run `occupancy-sync migrate` (or any sync) with write access first',
    );
  }

  async migrate(options: { signal?: AbortSignal } = {}): Promise<string[]> {
    const signal = options.signal ?? this.#migrator.signal;
    const applied = await this.#wrap('applying migrations', () => migrate(this.#db, { ...this.#migrator, ...(signal && { signal }), logger: this.#logger }), true);
    if (applied.length > 0) this.#logger.info({ dialect: this.dialect, applied }, 'applied database migrations');
    return applied;
  }

  /**
   * Refreshes what deliveries left stale first (a failure there is a warning), waits for a refresh beside a run, then
   * closes the database.
   */
  async close(): Promise<void> {
    await this.#deliveryRefresh.close();
    await this.#runRefresh.settled();
    return this.#wrap('closing the database', () => this.#db.close());
  }

  declareTables(tables: readonly DeclaredTable[]): Promise<TableStep[]> {
    return this.#wrap(`declaring the tables ${tables.map(targetName).join(', ')}`, () => this.#tables.declare(this.#db, tables, { ...this.#migrator, logger: this.#logger }));
  }

  planTables(tables: readonly DeclaredTable[]): Promise<{ changes: string[]; refused: string[] }> {
    return this.#wrap('comparing the declared tables with the database', () => planTables(this.#db, tables));
  }

  commitPage<S extends StreamSink>(page: PageWrite<S>): Promise<void> {
    return this.commitPages([page]);
  }

  commitPages(pages: readonly PageWrite[]): Promise<void> {
    const [first] = pages;
    if (!first) return Promise.resolve();
    const what = pages.length === 1 ? `a ${first.sink} page` : `${pages.length} pages (${[...new Set(pages.map((p) => p.sink))].join(', ')})`;
    return this.#wrap(`committing ${what} for customer ${first.customerId}`, async () => {
      const writes = pages.map((page) => readyPage(this.#tables, page));
      for (const write of writes) {
        const lost = this.#db.lockLost(write.page.customerId);
        if (lost) throw new StoreError(lost);
        if (write.page.sink === 'occupancy') await this.#partitions.ensure(write.page.records as ReadonlyArray<OccupancyRecord>);
      }
      // One transaction for them all: on SQLite each COMMIT writes out every index page its rows touched, and pages
      // of readings in time order touch the same ones (docs/performance.md, "Pages that arrive together commit together").
      const stale = await this.#db.transaction(async (tx) => {
        const out: PageSpans[] = [];
        for (const write of writes) out.push(await writePage(tx, write, this.#aggregates, this.#clock.now()));
        return out;
      }, { bulkRows: pages.reduce((n, p) => n + p.records.length, 0) });
      // What the run made stale is refreshed beside it, not in the way of its next commits (run-refresh.ts).
      const now = this.#clock.now();
      writes.forEach((write, i) => this.#runRefresh.committed(write.page.customerId, stale[i]!, now));
    });
  }

  getState(customerId: string, stateKey: string): Promise<SyncState | undefined> {
    return this.#wrap('reading sync state', async () => {
      const rows = await this.#db.all<StateRow>(
        sql`SELECT * FROM sync_state WHERE customer_id = ${customerId} AND stream = ${stateKey}`,
      );
      return rows[0] && toState(rows[0]);
    });
  }

  saveState(state: SyncStateUpdate): Promise<void> {
    return this.#wrap(`saving sync state for ${state.customerId}/${state.stateKey}`, () => {
      const normalised = normaliseState(state);
      return this.#db.transaction((tx) => writeState(tx, normalised, this.#clock.now()));
    });
  }

  listStates(customerId?: string): Promise<SyncState[]> {
    return this.#wrap('listing sync state', async () => {
      const where = customerId === undefined ? sql`` : sql`WHERE customer_id = ${customerId}`;
      const rows = await this.#db.all<StateRow>(sql`SELECT * FROM sync_state ${where} ORDER BY customer_id, stream`);
      return rows.map(toState);
    });
  }

  changeState(change: StateChange): Promise<StateChangeRecord> {
    return this.#wrap(`${change.action} of ${change.customerId}/${change.stateKey}`, async () => {
      const at = canonicalTimestamp(change.at, 'at');
      const to = change.action === 'rewind' && 'to' in change ? canonicalTimestamp(change.to, 'to') : null;
      const progress =
        change.action === 'rewind' && 'progress' in change
          ? { windowStart: canonicalTimestamp(change.progress.windowStart, 'windowStart'), windowEnd: canonicalTimestamp(change.progress.windowEnd, 'windowEnd') }
          : null;
      return this.#db.transaction((tx) => applyStateChange(tx, change, { at, to, progress }));
    });
  }

  stateChanges(filter: { customerId?: string; stateKey?: string; limit?: number } = {}): Promise<StateChangeRecord[]> {
    return this.#wrap('reading state changes', async () => {
      const conditions = [
        filter.customerId === undefined ? sql`TRUE` : sql`customer_id = ${filter.customerId}`,
        filter.stateKey === undefined ? sql`TRUE` : sql`stream = ${filter.stateKey}`,
      ];
      const rows = await this.#db.all<Record<string, unknown>>(sql`
        SELECT * FROM sync_state_changes WHERE ${sql.join(conditions, sql` AND `)}
        ORDER BY changed_at DESC, id DESC LIMIT ${filter.limit ?? 20}`);
      return rows.map(toStateChange);
    });
  }

  markDeleted(sink: SinkTarget, customerId: string, seenSince: IsoUtc, at: IsoUtc): Promise<number> {
    return this.#wrap(`marking deleted ${targetName(sink)}`, () => {
      const { relation: table, softDelete } = targetRelation(sink);
      if (!softDelete) throw new StoreError(`sink ${targetName(sink)} cannot soft-delete: its table keeps no last_seen_at and deleted_at`);
      const since = canonicalTimestamp(seenSince, 'seenSince');
      const deletedAt = canonicalTimestamp(at, 'at');
      return this.#db.run(sql`
        UPDATE ${sql.identifier(table)} SET deleted_at = ${deletedAt}
        WHERE customer_id = ${customerId} AND deleted_at IS NULL AND last_seen_at < ${since}`);
    });
  }

  listedValues(sink: SinkTarget, field: string, customerId: string): Promise<string[]> {
    return this.#wrap(`listing the ${targetName(sink)} rows in force`, async () => {
      const shape = targetRelation(sink);
      if (!shape.softDelete) throw new StoreError(`sink ${targetName(sink)} keeps no listing: its table has no last_seen_at and deleted_at`);
      const column = shape.columns.find((c) => c.field === field);
      if (!column) throw new StoreError(`sink ${targetName(sink)} has no field ${field}`);
      const c = sql.identifier(column.column);
      const rows = await this.#db.all<{ v: string | number }>(sql`
        SELECT DISTINCT ${c} AS v FROM ${sql.identifier(shape.relation)}
        WHERE customer_id = ${customerId} AND last_seen_at IS NOT NULL AND deleted_at IS NULL AND ${c} IS NOT NULL
        ORDER BY 1`);
      return rows.map((r) => String(r.v));
    });
  }

  unmappedStatuses(canonical: readonly string[], customerId?: string): Promise<UnmappedStatus[]> {
    return this.#wrap('counting readings with an unmapped status', async () => {
      const known = sql.join(canonical.map((v) => sql`${v}`), sql`, `);
      // The dictionary is a handful of rows: without a status outside the canonical ones, no reading is read.
      const codes = await this.#db.all<{ k: number | string }>(sql`
        SELECT status_code AS k FROM occupancy_statuses WHERE occupancy_status NOT IN (${known})`);
      if (codes.length === 0) return [];
      const who = customerId === undefined ? sql`` : sql` AND f.customer_id = ${customerId}`;
      const rows = await this.#db.all<{ c: string; s: string; n: number | string }>(sql`
        SELECT f.customer_id AS c, s.occupancy_status AS s, count(*) AS n
        FROM occupancy_readings r
        JOIN occupancy_statuses s ON s.status_code = r.status_code
        JOIN floor_spaces f ON f.floor_space_key = r.floor_space_key
        WHERE r.status_code IN (${sql.join(codes.map((c) => sql`${Number(c.k)}`), sql`, `)})${who}
        GROUP BY f.customer_id, s.occupancy_status
        ORDER BY 1, 3 DESC, 2`);
      return rows.map((r) => ({ customerId: r.c, status: r.s, readings: Number(r.n) }));
    });
  }

  countInWindow(sink: SinkTarget, field: string, customerId: string, from: IsoUtc, to: IsoUtc): Promise<number> {
    return this.#wrap(`counting ${targetName(sink)} records in a window`, async () => {
      const shape = targetRelation(sink);
      const column = shape.columns.find((c) => c.field === field);
      if (!column || column.type !== 'timestamp') throw new StoreError(`sink ${targetName(sink)} has no timestamp field ${field}`);
      const rows = await this.#db.all<{ n: number | string }>(sql`
        SELECT count(*) AS n FROM ${sql.identifier(shape.relation)}
        WHERE customer_id = ${customerId} AND ${sql.identifier(column.column)} >= ${canonicalTimestamp(from, 'from')}
          AND ${sql.identifier(column.column)} < ${canonicalTimestamp(to, 'to')}`);
      return Number(rows[0]?.n ?? 0);
    });
  }

  closeAbandonedRuns(customerId: string, stateKey: string, at: IsoUtc): Promise<number[]> {
    return this.#wrap('closing runs left running by an ended process', () => closeAbandonedRuns(this.#db, customerId, stateKey, canonicalTimestamp(at, 'at')));
  }

  startRun(run: { customerId: string; stateKey: string; mode: RunRecord['mode']; startedAt: IsoUtc }): Promise<number> {
    return this.#wrap('recording the start of a run', () => startRun(this.#db, { ...run, startedAt: canonicalTimestamp(run.startedAt, 'startedAt') }));
  }

  finishRun(
    id: number,
    outcome: { status: Exclude<RunStatus, 'running'>; finishedAt: IsoUtc; error?: string | null },
  ): Promise<void> {
    const record = () => finishRun(this.#db, id, { ...outcome, finishedAt: canonicalTimestamp(outcome.finishedAt, 'finishedAt') });
    // SIGTERM cancels the statements in flight; a cancel meant for one that ended meanwhile can land on this one, on
    // the same pooled session. The record is idempotent and is what says the run stopped, so it is sent once more.
    return this.#wrap(`recording the end of run ${id}`, () => record().catch((error: unknown) => {
      if (!isCancelledOnRequest(error)) throw error;
      return record();
    }));
  }

  pruneReadings(before: IsoUtc, limit: number): Promise<PrunedReadings> {
    return this.#wrap('deleting old readings', () => pruneReadings(this.#db, this.#partitions, canonicalTimestamp(before, 'before'), limit, toIso(this.#clock.now())));
  }

  pruneRuns(before: IsoUtc, limit: number): Promise<number> {
    return this.#wrap('deleting old runs', () => pruneRuns(this.#db, canonicalTimestamp(before, 'before'), limit));
  }

  updatePlannerStatistics(): Promise<string[]> {
    return this.#wrap("updating the planner's statistics", () => updatePlannerStatistics(this.#db));
  }

  /** The latest run of each (customer, stream) (run-records.ts). */
  lastRuns(customerId?: string): Promise<RunRecord[]> {
    return this.#wrap('reading the last runs', () => lastRuns(this.#db, customerId));
  }

  storeDelivery(delivery: DeliveryRecord, occupancy: ReadonlyArray<OccupancyRecord>, quarantine?: Omit<QuarantineWrite, 'window'>): Promise<'stored' | 'duplicate'> {
    return this.#wrap(`storing webhook delivery ${delivery.id}`, async () => {
      const createdAt = canonicalTimestamp(delivery.createdAt, 'delivery.createdAt');
      const sentAt = canonicalTimestamp(delivery.sentAt, 'delivery.sentAt');
      const receivedAt = canonicalTimestamp(delivery.receivedAt, 'delivery.receivedAt');
      const store = async (tx: Executor) => {
        const stored = await this.#storeDelivery(tx, delivery, occupancy, createdAt, sentAt, receivedAt);
        // Items that broke their stream's declaration, kept as a polled record's are (once, with the delivery).
        if (stored === 'stored' && quarantine && quarantine.records.length > 0) {
          await quarantineRecords(tx, delivery.customerId, { ...quarantine, window: null }, null, receivedAt, null);
        }
        return stored;
      };
      await this.#partitions.ensure(occupancy);
      const stored = await this.#db.transaction(store, { shareCommit: true });
      if (stored === 'stored' && occupancy.length > 0 && this.#aggregates.on) this.#deliveryRefresh.delivered(delivery.customerId);
      return stored;
    });
  }

  async #storeDelivery(
    tx: Executor,
    delivery: DeliveryRecord,
    occupancy: ReadonlyArray<OccupancyRecord>,
    createdAt: IsoUtc,
    sentAt: IsoUtc,
    receivedAt: IsoUtc,
  ): Promise<'stored' | 'duplicate'> {
    // A retry of a stored delivery only counts the attempt: the first copy and its rows stay as they were.
    const [row] = await tx.all<{ attempts: number }>(sql`
      INSERT INTO webhook_deliveries (customer_id, id, type, created_at, sent_at, received_at, attempts, body)
      VALUES (${delivery.customerId}, ${delivery.id}, ${delivery.type}, ${createdAt}, ${sentAt}, ${receivedAt}, 1,
              ${delivery.body})
      ON CONFLICT (customer_id, id) DO UPDATE SET attempts = webhook_deliveries.attempts + 1
      RETURNING attempts`);
    if (Number(row!.attempts) > 1) return 'duplicate';
    await this.#aggregates.around(tx, 'occupancy', delivery.customerId, occupancy, receivedAt, () => tx.upsert('occupancy', { customerId: delivery.customerId, at: receivedAt, source: 'webhook' }, occupancy));
    return 'stored';
  }

  reconcileAggregates(customerId: string, settings: AggregateSettings): Promise<RebuiltBuilding[]> {
    return this.#wrap(`reconciling the aggregates of customer ${customerId}`, () => this.#aggregates.reconcile(customerId, settings, toIso(this.#clock.now())));
  }

  /** After the refresh beside a run of the customer, if one is running: the two would only wait for each other's locks. */
  async refreshAggregates(customerId: string, settings?: AggregateSettings): Promise<AggregateRefresh> {
    await this.#runRefresh.before(customerId);
    return this.#refresh(customerId, settings);
  }

  #refresh(customerId: string, settings?: AggregateSettings, options?: RefreshOptions): Promise<AggregateRefresh> {
    return this.#wrap(`refreshing the aggregates of customer ${customerId}`, () => this.#aggregates.refresh(customerId, settings, toIso(this.#clock.now()), options));
  }

  pendingAggregates(customerId?: string): Promise<PendingAggregates[]> {
    return this.#wrap('reading the pending invalidations of the aggregates', () => this.#aggregates.pending(customerId));
  }

  calendarDrift(customerId: string, workingTime: AggregateSettings['workingTime']): Promise<CalendarDrift[]> {
    return this.#wrap(`comparing the aggregates' calendars of customer ${customerId} with the configuration`, () => this.#aggregates.drift(customerId, workingTime));
  }

  customersHeld(): Promise<string[]> {
    return this.#wrap('listing the customers of the floor spaces', async () => {
      const rows = await this.#db.all<{ c: string }>(sql`SELECT DISTINCT customer_id AS c FROM floor_spaces ORDER BY customer_id`);
      return rows.map((r) => String(r.c));
    });
  }

  aggregateBuildings(customerId: string): Promise<string[]> {
    return this.#wrap(`listing the buildings of customer ${customerId}`, () => this.#aggregates.buildings(customerId));
  }

  rebuildAggregates(request: AggregateRebuild, settings: AggregateSettings): Promise<RebuiltBuilding[]> {
    return this.#wrap(`rebuilding the aggregates of customer ${request.customerId}`, () => this.#aggregates.rebuild(request, settings, toIso(this.#clock.now())));
  }

  tryLock(customerId: string, stateKey: string) {
    return this.#wrap(`locking ${customerId}/${stateKey}`, () => this.#db.tryLock(customerId, stateKey), true);
  }

  query<T = Record<string, unknown>>(text: string, params: unknown[] = [], options: QueryOptions = {}): Promise<T[]> {
    return this.#wrap('running a query', () => this.#db.query<T>(text, params, options));
  }

  /**
   * Driver errors as StoreErrors that say what failed, where, and the fix. `nothingDone`: the operation comes before a
   * run writes anything (migrating, locking), so a busy database there means nothing was done (DatabaseBusyError).
   */
  async #wrap<T>(what: string, fn: () => Promise<T>, nothingDone = false): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      if (error instanceof StoreError || error instanceof TableChangeError) throw error;
      if (nothingDone) throw storeError(error, this.#db.location, what);
      throw wrapDriverError(error, `${what} failed: ${explainDatabaseError(error, this.#db.location)}`);
    }
  }
}

const toIso = (ms: number) => new Date(ms).toISOString();
