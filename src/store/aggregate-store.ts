import { sql } from '../../db/schema/drizzle.ts';
import { StoreError } from '../errors.ts';
import { startOfLocalDate } from '../working-time.ts';
import type { Adapter, Executor, Upserted } from './adapter.ts';
import { textIn } from './key-list.ts';
import {
  calendarsFor,
  describeChange,
  lockBuildings,
  recordCalendar,
  recordCalendars,
  recordedCalendars,
  resolveBuildings,
  sameCalendar,
  DEFAULT_AGGREGATE_SETTINGS,
  type AggregateSettings,
  type BuildingCalendar,
  type ResolvedBuilding,
} from './aggregate-calendars.ts';
import { pendingInvalidations, refreshInvalidations, type RefreshOptions } from './aggregate-invalidations.ts';
import { recordInvalidations, type PageSpans } from './aggregate-page-invalidations.ts';
import { bucketRangeOf, floorId, floorsOf, refreshFloors, type Floor } from './aggregate-floors.ts';
import { rebuildBuilding, rebuildSpaces } from './aggregate-rebuild.ts';
import type { AggregateRebuild, AggregateRefresh, CalendarDrift, FloorSpaceRecord, PendingAggregates, RebuiltBuilding, StreamSink } from './types.ts';

/**
 * The aggregates' operations that span transactions (the store delegates to these): reconciling what each building's
 * rows were computed with against the configuration, rebuilding a range, and following a floor space that a listing
 * moved to another building or floor or gave another capacity. What runs inside a commit is aggregates.ts.
 */

/** The buildings of a customer that have floor spaces or recorded aggregates ('' : spaces of no known building). */
async function buildingsOf(db: Adapter, customerId: string): Promise<string[]> {
  const rows = await db.all<{ b: string }>(sql`
    SELECT DISTINCT COALESCE(building_id, '') AS b FROM floor_spaces WHERE customer_id = ${customerId}
    UNION SELECT building_id AS b FROM aggregate_calendars WHERE customer_id = ${customerId}`);
  return rows.map((r) => r.b).sort();
}

/** Which of these buildings ('' : spaces of no known building) have a floor space with buckets. */
async function withBuckets(tx: Executor, customerId: string, buildingIds: readonly string[]): Promise<Set<string>> {
  if (buildingIds.length === 0) return new Set();
  const rows = await tx.all<{ b: string }>(sql`
    SELECT DISTINCT COALESCE(f.building_id, '') AS b FROM floor_spaces f
     WHERE f.customer_id = ${customerId} AND ${textIn(tx.dialect, sql`COALESCE(f.building_id, '')`, buildingIds)}
       AND EXISTS (SELECT 1 FROM occupancy_buckets o WHERE o.floor_space_key = f.floor_space_key)`);
  return new Set(rows.map((r) => r.b));
}

/**
 * Records, in one transaction under their locks, the calendars of buildings that had none recorded and whose spaces
 * have no buckets (every bucket is computed with a recorded calendar; a space moved in was recomputed by its listing):
 * recording it is all, and their pending pages are the refresh's. Returns those left to `reconcileBuilding`: one that
 * has buckets, or that another process recorded meanwhile with another calendar.
 */
async function recordNewCalendars(db: Adapter, customerId: string, buildings: readonly ResolvedBuilding[], at: string): Promise<Set<string>> {
  if (buildings.length === 0) return new Set();
  return db.transaction(async (tx) => {
    const ids = buildings.map((b) => b.buildingId);
    await lockBuildings(tx, customerId, ids);
    // Another process may have recorded or rebuilt them meanwhile: compare again under the lock.
    const now = await recordedCalendars(tx, customerId, ids);
    const missing = buildings.filter((b) => !now.has(b.buildingId));
    const held = await withBuckets(tx, customerId, missing.map((b) => b.buildingId));
    await recordCalendars(tx, customerId, missing.filter((b) => !held.has(b.buildingId)), at);
    const left = new Set(held);
    for (const b of buildings) {
      const recorded = now.get(b.buildingId);
      if (recorded && !sameCalendar(recorded, b)) left.add(b.buildingId);
    }
    return left;
  });
}

/**
 * Records a building's calendar and rebuilds its buckets in one transaction under its lock, unless another process
 * recorded the same calendar meanwhile; the rebuild's figures, with whether a calendar was recorded before.
 */
async function reconcileBuilding(db: Adapter, customerId: string, building: ResolvedBuilding, at: string): Promise<(Awaited<ReturnType<typeof rebuildBuilding>> & { had: boolean }) | undefined> {
  return db.transaction(async (tx) => {
    await lockBuildings(tx, customerId, [building.buildingId]);
    // Another process may have recorded or rebuilt it meanwhile: compare again under the lock.
    const now = (await recordedCalendars(tx, customerId, [building.buildingId])).get(building.buildingId);
    if (now && sameCalendar(now, building)) return undefined;
    await recordCalendar(tx, customerId, building, at);
    if (!now && !(await withBuckets(tx, customerId, [building.buildingId])).has(building.buildingId)) return undefined;
    return { ...(await rebuildBuilding(tx, customerId, building, { calendarChanged: true })), had: now !== undefined };
  });
}

/**
 * Rebuilds every building of a customer whose recorded calendar (zone, working calendar, max hold) differs from what
 * the settings resolve now, each in one transaction under its lock; records the calendars of buildings with none,
 * all in one transaction (a reconcile of a new customer's many buildings is then one commit, not one per building).
 */
export async function reconcileAggregates(db: Adapter, customerId: string, settings: AggregateSettings, at: string): Promise<RebuiltBuilding[]> {
  const buildings = await buildingsOf(db, customerId);
  const resolved = await resolveBuildings(db, customerId, buildings, settings);
  const recorded = await recordedCalendars(db, customerId, buildings);
  const left = await recordNewCalendars(db, customerId, resolved.filter((b) => !recorded.has(b.buildingId)), at);
  const rebuilt: RebuiltBuilding[] = [];
  for (const building of resolved) {
    const before = recorded.get(building.buildingId);
    if (before ? sameCalendar(before, building) : !left.has(building.buildingId)) continue;
    const figures = await reconcileBuilding(db, customerId, building, at);
    if (figures?.had) {
      rebuilt.push({ customerId, buildingId: building.buildingId, buildingName: building.name, zone: building.zone, zoneSource: building.zoneSource, change: describeChange(before, building), ...figures });
    }
  }
  return rebuilt;
}

/** What CalendarDrift says of a customer's buildings: their recorded zone and calendar against what `workingTime` resolves. */
export async function calendarDrift(db: Adapter, customerId: string, workingTime: AggregateSettings['workingTime']): Promise<CalendarDrift[]> {
  const buildings = await buildingsOf(db, customerId);
  const recorded = await recordedCalendars(db, customerId, buildings);
  const out: CalendarDrift[] = [];
  for (const resolved of await resolveBuildings(db, customerId, buildings, { workingTime, maxHoldMs: 0 })) {
    const before = recorded.get(resolved.buildingId);
    if (!before) continue;
    // The max hold is the streams' matter: compared as recorded, so only the zone and the calendar can differ.
    const building = { ...resolved, maxHoldMs: before.maxHoldMs };
    if (!sameCalendar(before, building)) out.push({ customerId, buildingId: building.buildingId, buildingName: building.name, change: describeChange(before, building) });
  }
  return out;
}

/**
 * `aggregates rebuild`: recomputes the buckets of a customer's buildings (or one) from the readings, over local dates
 * [from, to) of each building's zone or all of them. A building whose calendar changed is rebuilt whole. A building
 * with no floor spaces and no aggregates is none of the customer's: nothing is done (an empty list).
 */
export async function rebuildAggregates(db: Adapter, request: AggregateRebuild, settings: AggregateSettings, at: string): Promise<RebuiltBuilding[]> {
  const { customerId } = request;
  const all = await buildingsOf(db, customerId);
  const buildings = request.buildingId === undefined ? all : all.filter((b) => b === request.buildingId);
  const resolved = await resolveBuildings(db, customerId, buildings, settings);
  const out: RebuiltBuilding[] = [];
  for (const building of resolved) {
    const figures = await db.transaction(async (tx) => {
      await lockBuildings(tx, customerId, [building.buildingId]);
      const before = (await recordedCalendars(tx, customerId, [building.buildingId])).get(building.buildingId);
      const same = before !== undefined && sameCalendar(before, building);
      await recordCalendar(tx, customerId, building, at);
      const range = same && (request.from !== undefined || request.to !== undefined) ? rangeOf(building, request) : undefined;
      return { ...(await rebuildBuilding(tx, customerId, building, { ...(range && { range }), calendarChanged: !same })), whole: range === undefined, change: same ? '' : describeChange(before, building) };
    });
    out.push({ customerId, buildingId: building.buildingId, buildingName: building.name, zone: building.zone, zoneSource: building.zoneSource, ...figures });
  }
  return out;
}

/** Local dates [from, to) of the building's zone as instants; an open end is the start or end of time. */
function rangeOf(building: BuildingCalendar, request: AggregateRebuild): { fromMs: number; toMs: number } {
  return {
    fromMs: request.from === undefined ? Date.UTC(1970, 0, 1) : startOfLocalDate(building.zone, request.from),
    toMs: request.to === undefined ? Date.UTC(9000, 0, 1) : startOfLocalDate(building.zone, request.to),
  };
}

/** Where a floor space is, as the aggregates read it: its building ('' : none), floor and capacity. */
export interface SpacePlace {
  /** The platform's id of the floor space. */
  id: string;
  building: string;
  floor: string | null;
  capacity: number | null;
}

/** The stored floor spaces of these ids of a customer, by key, with where they are. */
export async function spacePlaces(tx: Executor, customerId: string, ids: readonly string[]): Promise<Map<number, SpacePlace>> {
  const { dialect } = tx;
  const out = new Map<number, SpacePlace>();
  for (let i = 0; i < ids.length; i += 1000) {
    const rows = await tx.all<{ k: number | string; i: string; b: string; f: string | null; c: number | string | null }>(sql`
      SELECT floor_space_key AS k, floor_space_id AS i, COALESCE(building_id, '') AS b, floor_id AS f, capacity AS c FROM floor_spaces
       WHERE customer_id = ${customerId} AND ${textIn(dialect, sql`floor_space_id`, ids.slice(i, i + 1000))}`);
    for (const r of rows) out.set(Number(r.k), { id: r.i, building: r.b, floor: r.f, capacity: r.c === null ? null : Number(r.c) });
  }
  return out;
}

/**
 * Floor spaces a listing moved to another building, floor or capacity (a space readings named before any listing is
 * in none). A space moved to another building had its buckets computed in the old building's zone and calendar: they
 * are recomputed whole with the new one's. The floor rollup sums each floor's spaces at their current capacity: the
 * rows of the space's old and new floor are summed again over all its buckets. All in the listing's transaction.
 */
export async function followMovedSpaces(tx: Executor, db: Pick<Adapter, 'dialect'>, customerId: string, before: ReadonlyMap<number, SpacePlace>, after: ReadonlyMap<number, SpacePlace>, settings: AggregateSettings, at: string): Promise<void> {
  const moved = new Map<string, number[]>();
  const buildings = new Set<string>();
  const places = [...after].filter(([key, place]) => {
    const was = before.get(key);
    return was !== undefined && !(was.building === place.building && was.floor === place.floor && was.capacity === place.capacity);
  });
  for (const [key, place] of places) buildings.add(before.get(key)!.building).add(place.building);
  if (places.length === 0) return;
  // Locked before asking which have buckets: a refresh of the old building may be writing them (it recomputes the
  // space in the building it finds once locked: aggregate-invalidations.ts).
  await lockBuildings(tx, customerId, [...buildings].sort());
  const changed: number[] = [];
  const floors = new Map<string, Floor>();
  for (const [key, place] of places) {
    const was = before.get(key)!;
    const [has] = await tx.all(sql`SELECT 1 AS x FROM occupancy_buckets WHERE floor_space_key = ${key} LIMIT 1`);
    if (!has) continue;
    changed.push(key);
    floors.set(floorId(customerId, was.building, was.floor), { customerId, buildingId: was.building, floorId: was.floor });
    if (was.building === place.building) continue;
    moved.set(place.building, [...(moved.get(place.building) ?? []), key]);
    moved.set(was.building, moved.get(was.building) ?? []);
  }
  if (changed.length === 0) return;
  const held = await bucketRangeOf(tx, changed);
  if (moved.size > 0) {
    const calendars = await calendarsFor(tx, customerId, [...moved.keys()], settings, at);
    for (const [building, keys] of moved) {
      if (keys.length > 0) await rebuildSpaces(tx, customerId, calendars.get(building)!, keys);
    }
  }
  const holds = await bucketRangeOf(tx, changed);
  for (const floor of await floorsOf(tx, changed)) floors.set(floorId(floor.customerId, floor.buildingId, floor.floorId), floor);
  const range = held && holds ? { fromMs: Math.min(held.fromMs, holds.fromMs), toMs: Math.max(held.toMs, holds.toMs) } : (held ?? holds);
  if (range) await refreshFloors(tx, [...floors.values()].map((floor) => ({ floor, range })));
}

/**
 * The page's transaction, whose statements say they keep its aggregates when a wait is logged (a lock on the
 * readings holds up the aggregates' read before the page's own write).
 */
function describedAs(tx: Executor, doing: string): Executor {
  return {
    dialect: tx.dialect,
    all: (query, what = doing) => tx.all(query, what),
    run: (query, what = doing) => tx.run(query, what),
    runAhead: (query, check) => tx.runAhead(query, check),
    exec: (statement) => tx.exec(statement),
    bulk: (text, width, values) => tx.bulk(text, width, values),
    upsert: (sink, context, records) => tx.upsert(sink, context, records),
  };
}

/**
 * The store's share of the aggregates: what each commit does around its upsert, the refresh of what poll pages made
 * stale, and the operations that span transactions, with what this store has learnt (each customer's settings as
 * last reconciled).
 */
export class AggregateKeeper {
  /** The settings the last reconcile or rebuild of each customer was given: what commits resolve a new building with. */
  readonly #settings = new Map<string, AggregateSettings>();
  readonly db: Adapter;
  /** Keep the aggregates (off only to measure what they cost: commits then record nothing, refreshes do nothing). */
  readonly on: boolean;

  constructor(db: Adapter, on: boolean) {
    this.db = db;
    this.on = on;
  }

  #settingsOf(customerId: string): AggregateSettings {
    return this.#settings.get(customerId) ?? DEFAULT_AGGREGATE_SETTINGS;
  }

  /** How long a reading of the customer holds at most: how far past its last reading a refresh writes buckets. */
  maxHoldOf(customerId: string): number {
    return this.#settingsOf(customerId).maxHoldMs;
  }

  /**
   * Runs a page's `upsert` in its transaction with the aggregates' share: a page of readings, polled or delivered,
   * records what it made stale (the store refreshes a delivery's within a second: delivery-refresh.ts), a listing
   * that moves a floor space recomputes that space. Resolves to the spans the page recorded (none: it made nothing
   * stale), which the store's refresh beside a run counts once the page committed (run-refresh.ts).
   */
  async around(page: Executor, sink: StreamSink, customerId: string, records: ReadonlyArray<unknown>, at: string, upsert: () => Promise<Upserted>): Promise<PageSpans> {
    const tx = describedAs(page, `keeping the aggregates of a page of ${records.length} ${sink} records`);
    const settings = this.#settingsOf(customerId);
    const listed = this.on && sink === 'floorSpaces' ? (records as ReadonlyArray<FloorSpaceRecord>).map((r) => r.id).filter((id) => typeof id === 'string' && id !== '') : [];
    const moving = listed.length > 0 ? await spacePlaces(tx, customerId, listed) : undefined;
    const { readingSpans } = await upsert();
    // Only a space stored before the upsert can have moved: where it is now is read of those alone, and a page of
    // spaces all new (a first listing) reads nothing more.
    if (moving && moving.size > 0) {
      await followMovedSpaces(tx, this.db, customerId, moving, await spacePlaces(tx, customerId, [...new Set([...moving.values()].map((p) => p.id))]), settings, at);
    }
    if (!this.on || sink !== 'occupancy' || records.length === 0) return [];
    // A sink of readings reports their spans; none is a bug, not a page that made nothing stale.
    if (!readingSpans) throw new StoreError(`aggregate invalidations: the upsert of a page of ${sink} records reported no spans of its readings`);
    return recordInvalidations(tx, customerId, readingSpans, at);
  }

  async refresh(customerId: string, settings: AggregateSettings | undefined, at: string, options?: RefreshOptions): Promise<AggregateRefresh> {
    if (settings) this.#settings.set(customerId, settings);
    if (!this.on) return { customerId, spaces: 0, buckets: 0, left: 0 };
    return refreshInvalidations(this.db, customerId, this.#settingsOf(customerId), at, options);
  }

  pending(customerId?: string): Promise<PendingAggregates[]> {
    return pendingInvalidations(this.db, customerId);
  }

  buildings(customerId: string): Promise<string[]> {
    return buildingsOf(this.db, customerId);
  }

  drift(customerId: string, workingTime: AggregateSettings['workingTime']): Promise<CalendarDrift[]> {
    return calendarDrift(this.db, customerId, workingTime);
  }

  reconcile(customerId: string, settings: AggregateSettings, at: string): Promise<RebuiltBuilding[]> {
    this.#settings.set(customerId, settings);
    return this.on ? reconcileAggregates(this.db, customerId, settings, at) : Promise.resolve([]);
  }

  rebuild(request: AggregateRebuild, settings: AggregateSettings, at: string): Promise<RebuiltBuilding[]> {
    this.#settings.set(request.customerId, settings);
    return rebuildAggregates(this.db, request, settings, at);
  }
}
