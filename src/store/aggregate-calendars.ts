import { sql } from '../../db/schema/drizzle.ts';
import { DEFAULT_WORKING_TIME, resolveCalendar, storedCalendar, type ZoneSource } from '../config-working-time.ts';
import { defaultMaxHold } from '../time-weight.ts';
import type { WorkingCalendar } from '../working-time.ts';
import type { Executor } from './adapter.ts';
import { textArray, textIn } from './key-list.ts';
import type { AggregateSettings } from './types.ts';

export type { AggregateSettings };

/**
 * What each building's aggregates are computed with (table aggregate_calendars): its zone, working calendar and max
 * hold. A commit computes with the recorded calendar of each building it touches, whatever configuration its own
 * process has, so every row of a building is computed alike; a building with none recorded gets the one the store's
 * settings resolve. `reconcile` compares the configuration with what is recorded and says which buildings to rebuild.
 */


export const DEFAULT_AGGREGATE_SETTINGS: AggregateSettings = Object.freeze({ workingTime: DEFAULT_WORKING_TIME, maxHoldMs: defaultMaxHold('interval') });

/** A building's recorded calendar, ready to compute with. */
export interface BuildingCalendar {
  buildingId: string;
  zone: string;
  /** Canonical JSON of days, start, end and holidays. */
  canonical: string;
  calendar: WorkingCalendar;
  maxHoldMs: number;
}

/** A building as the configuration sees it: what it resolves to, and where its zone came from. */
export interface ResolvedBuilding extends BuildingCalendar {
  name: string | null;
  zoneSource: ZoneSource;
}

interface CalendarRow {
  building_id: string;
  time_zone: string;
  calendar: string;
  max_hold_ms: number | string;
}

/** Canonical JSON parsed and validated once per text: commits ask for the same few calendars on every page. */
const parsed = new Map<string, WorkingCalendar>();
function calendarOf(zone: string, canonical: string, buildingId: string): WorkingCalendar {
  const key = `${zone}\u0000${canonical}`;
  let calendar = parsed.get(key);
  if (!calendar) {
    calendar = storedCalendar(zone, canonical, `aggregate_calendars building ${JSON.stringify(buildingId)}`);
    if (parsed.size > 10_000) parsed.clear();
    parsed.set(key, calendar);
  }
  return calendar;
}

/** How the configuration resolves the given buildings of a customer ('' included), from the buildings table. */
export async function resolveBuildings(tx: Pick<Executor, 'all' | 'dialect'>, customerId: string, buildingIds: readonly string[], settings: AggregateSettings): Promise<ResolvedBuilding[]> {
  const named = buildingIds.filter((b) => b !== '');
  const rows =
    named.length === 0
      ? []
      : await tx.all<{ id: string; name: string | null; time_zone: string | null }>(
          sql`SELECT id, name, time_zone FROM buildings WHERE customer_id = ${customerId} AND ${textIn(tx.dialect, sql`id`, named)}`,
        );
  const byId = new Map(rows.map((r) => [r.id, r]));
  return buildingIds.map((id) => {
    const row = byId.get(id);
    const resolved = resolveCalendar(settings.workingTime, { customerId, id, name: row?.name ?? null, timeZone: row?.time_zone ?? null });
    return { buildingId: id, name: row?.name ?? null, zone: resolved.zone, zoneSource: resolved.zoneSource, canonical: resolved.canonical, calendar: resolved.calendar, maxHoldMs: settings.maxHoldMs };
  });
}

/** The recorded calendars of these buildings of a customer. */
export async function recordedCalendars(tx: Pick<Executor, 'all' | 'dialect'>, customerId: string, buildingIds: readonly string[]): Promise<Map<string, BuildingCalendar>> {
  if (buildingIds.length === 0) return new Map();
  const rows = await tx.all<CalendarRow>(sql`
    SELECT building_id, time_zone, calendar, max_hold_ms FROM aggregate_calendars
     WHERE customer_id = ${customerId} AND ${textIn(tx.dialect, sql`building_id`, buildingIds)}`);
  return new Map(
    rows.map((r) => [
      r.building_id,
      { buildingId: r.building_id, zone: r.time_zone, canonical: r.calendar, calendar: calendarOf(r.time_zone, r.calendar, r.building_id), maxHoldMs: Number(r.max_hold_ms) },
    ]),
  );
}

/** Records what a building's aggregates are computed with (replacing what was recorded). */
export async function recordCalendar(tx: Executor, customerId: string, building: BuildingCalendar, at: string): Promise<void> {
  await recordCalendars(tx, customerId, [building], at);
}

/**
 * Records what each of these buildings' aggregates are computed with (replacing what was recorded), a few hundred
 * rows per statement. The buildings are distinct: Postgres refuses an upsert that meets one key twice.
 */
export async function recordCalendars(tx: Executor, customerId: string, buildings: readonly BuildingCalendar[], at: string): Promise<void> {
  for (let i = 0; i < buildings.length; i += 500) {
    const rows = buildings.slice(i, i + 500).map((b) => sql`(${customerId}, ${b.buildingId}, ${b.zone}, ${b.canonical}, ${b.maxHoldMs}, ${at})`);
    await tx.run(sql`
      INSERT INTO aggregate_calendars (customer_id, building_id, time_zone, calendar, max_hold_ms, computed_at)
      VALUES ${sql.join(rows, sql`, `)}
      ON CONFLICT (customer_id, building_id) DO UPDATE SET time_zone = excluded.time_zone, calendar = excluded.calendar,
        max_hold_ms = excluded.max_hold_ms, computed_at = excluded.computed_at`);
  }
}

/**
 * The calendars to compute these buildings with: the recorded ones, and for a building with none, the one the
 * settings resolve, recorded now (in the caller's transaction, so it stands with the rows computed with it).
 */
export async function calendarsFor(tx: Executor, customerId: string, buildingIds: readonly string[], settings: AggregateSettings, at: string): Promise<Map<string, BuildingCalendar>> {
  const found = await recordedCalendars(tx, customerId, buildingIds);
  const missing = buildingIds.filter((b) => !found.has(b));
  if (missing.length > 0) {
    for (const building of await resolveBuildings(tx, customerId, missing, settings)) {
      await recordCalendar(tx, customerId, building, at);
      found.set(building.buildingId, building);
    }
  }
  return found;
}

/** Whether two calendars compute the same figures. */
export function sameCalendar(a: Pick<BuildingCalendar, 'zone' | 'canonical' | 'maxHoldMs'>, b: Pick<BuildingCalendar, 'zone' | 'canonical' | 'maxHoldMs'>): boolean {
  return a.zone === b.zone && a.canonical === b.canonical && a.maxHoldMs === b.maxHoldMs;
}

/** What a difference is, for the one line that says a building is rebuilt. */
export function describeChange(before: BuildingCalendar | undefined, after: ResolvedBuilding): string {
  if (!before) return 'no calendar recorded';
  const parts: string[] = [];
  if (before.zone !== after.zone) parts.push(`zone ${before.zone} -> ${after.zone} (${after.zoneSource})`);
  if (before.canonical !== after.canonical) parts.push(`calendar ${before.canonical} -> ${after.canonical}`);
  if (before.maxHoldMs !== after.maxHoldMs) parts.push(`max hold ${before.maxHoldMs} ms -> ${after.maxHoldMs} ms`);
  return parts.join(', ');
}

/** Postgres: one transaction at a time works on a building's aggregates (pg_advisory_xact_lock's two-key space). */
export const LOCK_SPACE = 0x4f_53_41_47; // 'OSAG'

/**
 * Serialises the transactions that recompute a building's buckets, so a commit reads the readings another committed
 * first (READ COMMITTED: each statement sees what committed before it). Taken in key order: no deadlock between
 * commits. SQLite needs none: its write transactions run one at a time.
 */
export async function lockBuildings(tx: Executor, customerId: string, buildingIds: readonly string[]): Promise<void> {
  const { dialect } = tx;
  if (dialect !== 'postgres') return;
  const names = [...new Set(buildingIds)].map((b) => JSON.stringify([customerId, b]));
  if (names.length === 0) return;
  // The key holds the schema: advisory locks are the database's, and stores in other schemas of it (other
  // datasets) must not wait for each other. One statement takes them in key order, so commits never deadlock.
  await tx.all(sql`SELECT count(pg_advisory_xact_lock(${LOCK_SPACE}::int4, k)) AS n FROM (SELECT DISTINCT hashtext(current_schema() || ':' || t) AS k FROM unnest(${textArray(names)}::text[]) AS t ORDER BY k) AS keys`);
}

