import type { Store } from './types.ts';

/**
 * The report's reads of the time-weighted views (docs/reporting.md, "Time-weighted views"), the same SQL on both
 * dialects: every figure summed over the report's local dates in the database (seconds columns, ratios of sums
 * divided in src/report/figures.ts). Rows come back as the driver gives them (Postgres returns COUNT() as a bigint
 * string): src/report/query.ts normalises them. Every report query is in this file.
 */

export type ReportRow = Record<string, unknown>;

/** Working hours (the `working_*` columns, buckets with `working`) or all hours. */
export type ReportScope = 'working' | 'all';

/** The local dates [fromDate, toDate) of each building, of one customer or all, of one building or floor or all. */
export interface ReportFilter {
  fromDate: string;
  toDate: string;
  customerId?: string | undefined;
  /** One building (`''`: the floor spaces of no known building); the benchmark's building-month and floor-week. */
  buildingId?: string | undefined;
  /** One floor of `buildingId`. */
  floorId?: string | undefined;
  scope: ReportScope;
}

/** A level of the report and the day view it reads, with the columns that name a row of it. */
const LEVELS = {
  portfolio: { view: 'portfolio_days', names: ['customer_id'] },
  building: { view: 'building_days', names: ['customer_id', 'building_id', 'building_name'] },
  floor: { view: 'floor_days', names: ['customer_id', 'building_id', 'floor_id', 'floor_name', 'floor_level'] },
  space: { view: 'space_days', names: ['customer_id', 'building_id', 'floor_id', 'floor_space_id', 'floor_space_name', 'space_type', 'capacity'] },
} as const;
export type ReportLevel = keyof typeof LEVELS;

/** The summed columns of a day view, named as the report reads them, for a scope. */
function daySums(scope: ReportScope): string {
  const w = scope === 'working' ? 'working_' : '';
  const period = scope === 'working' ? 'working_seconds' : 'period_seconds';
  return [
    `SUM(${period}) AS period_seconds`,
    ...['known', 'occupied', 'headcount', 'headcount_known', 'capacity', 'capacity_headcount'].map((f) => `SUM(${w}${f}_seconds) AS ${f}_seconds`),
    `MAX(${w}peak_headcount) AS peak_headcount`,
    `MAX(${w}peak_utilization) AS peak_utilization`,
    `COUNT(*) AS days`,
  ].join(', ');
}

function where(filter: ReportFilter, alias = ''): { sql: string; params: unknown[] } {
  const params: unknown[] = [filter.fromDate, filter.toDate];
  let sql = `${alias}local_date >= $1 AND ${alias}local_date < $2`;
  for (const [column, value] of [['customer_id', filter.customerId], ['building_id', filter.buildingId], ['floor_id', filter.floorId]] as const) {
    if (value === undefined || (column === 'customer_id' && value === '')) continue;
    params.push(value);
    sql += ` AND ${alias}${column} = $${params.length}`;
  }
  return { sql, params };
}

/**
 * One row per portfolio (customer), building, floor or floor space with figures over the range: each day view's
 * seconds summed over the dates, its peaks maxed. `days` counts the day rows summed (for floor spaces: days counted).
 */
export function reportFigureRows(store: Store, level: ReportLevel, filter: ReportFilter): Promise<ReportRow[]> {
  const { view, names } = LEVELS[level];
  const w = where(filter);
  const zone = level === 'building' ? ', MAX(time_zone) AS time_zone' : '';
  return store.query<ReportRow>(`SELECT ${names.join(', ')}${zone}, ${daySums(filter.scope)} FROM ${view} WHERE ${w.sql} GROUP BY ${names.join(', ')}`, w.params);
}

/** A bucket's figures as the hour views give them (`x_ms::float8 / 1000` per bucket), summed: the same sums as theirs. */
const seconds = (ms: string) => `SUM(CAST(${ms} AS DOUBLE PRECISION) / 1000)`;
const PROFILE_FIGURES = (h: string) =>
  [
    `${seconds(`COALESCE(n.spaces, 0) * (${h}.end_ms - ${h}.start_ms)`)} AS period_seconds`,
    ...['known', 'occupied', 'headcount', 'headcount_known', 'capacity', 'capacity_headcount'].map((f) => `${seconds(`${h}.${f}_ms`)} AS ${f}_seconds`),
    `MAX(${h}.peak_headcount) AS peak_headcount, MAX(${h}.peak_utilization) AS peak_utilization, COUNT(*) AS days`,
  ].join(', ');

/**
 * The weekday x local hour profile of each building or floor over the range: the rows of building_hours or
 * floor_hours in the range summed per ISO weekday and local hour, working buckets only unless the scope is all hours.
 * Written over what those views read (the floor-level hourly rollup, and the count of floor spaces per floor or
 * building and local date, floor_day_spaces and building_day_spaces) rather than over the views: the count is then
 * restricted by the same local dates, customer, building and floor as the rollup's rows, which both planners push
 * down to calendar_days, so the statement's cost follows the range asked, not the days stored (through the views the
 * count is made for every date: docs/performance.md). The period and seconds are the views' own per-bucket
 * expressions (db/views/*.sql, floor_hours and building_hour_sums; test/report/report-profiles.test.ts holds them equal).
 */
export function reportProfileRows(store: Store, level: 'building' | 'floor', filter: ReportFilter): Promise<ReportRow[]> {
  // A building's count has no floor: a building's profile is of all its floors.
  const asked = level === 'building' ? { ...filter, floorId: undefined } : filter;
  const w = where(asked);
  const rows = where(asked, 'h.');
  const working = filter.scope === 'working' ? ' AND h.working = TRUE' : '';
  if (level === 'floor') {
    const params = [...w.params];
    let floor = '';
    const from = Date.parse(`${filter.fromDate}T00:00:00.000Z`);
    const to = Date.parse(`${filter.toDate}T00:00:00.000Z`);
    if (filter.floorId !== undefined && !Number.isNaN(from) && !Number.isNaN(to)) {
      // One floor: its rows read by the rollup's (customer, building, floor_key, start_ms) index over the range, not
      // over the building's whole history. A local date starts within 14 h of its UTC midnight in any zone, so a
      // day's margin each side keeps every bucket of the range (local_date still decides).
      params.push(filter.floorId, from - 86_400_000, to + 86_400_000);
      floor = ` AND h.floor_key = $${params.length - 2} AND h.start_ms >= $${params.length - 1} AND h.start_ms < $${params.length}`;
    }
    return store.query<ReportRow>(
      `SELECT h.customer_id, h.building_id, h.floor_id, h.weekday, h.local_hour, ${PROFILE_FIGURES('h')}
         FROM occupancy_floor_hours h
         LEFT JOIN (SELECT customer_id, building_id, floor_key, floor_id, local_date, spaces FROM floor_day_spaces WHERE ${w.sql}) n
           ON n.customer_id = h.customer_id AND n.building_id = h.building_id AND n.local_date = h.local_date
          AND n.floor_key = h.floor_key AND n.floor_id IS NOT DISTINCT FROM h.floor_id
        WHERE ${rows.sql}${floor}${working}
        GROUP BY h.customer_id, h.building_id, h.floor_id, h.weekday, h.local_hour`,
      params,
    );
  }
  // building_hour_sums' two steps: the floors' rows summed per building and bucket, then the building's count joined.
  return store.query<ReportRow>(
    `SELECT y.customer_id, y.building_id, y.weekday, y.local_hour, ${PROFILE_FIGURES('y')}
       FROM (SELECT h.customer_id, h.building_id, h.start_ms, MAX(h.end_ms) AS end_ms, h.local_date, h.local_hour, h.weekday, h.working,
                    SUM(h.known_ms) AS known_ms, SUM(h.occupied_ms) AS occupied_ms, SUM(h.headcount_ms) AS headcount_ms,
                    SUM(h.headcount_known_ms) AS headcount_known_ms, SUM(h.capacity_ms) AS capacity_ms,
                    SUM(h.capacity_headcount_ms) AS capacity_headcount_ms, MAX(h.peak_headcount) AS peak_headcount, MAX(h.peak_utilization) AS peak_utilization
               FROM occupancy_floor_hours h
              WHERE ${rows.sql}${working}
              GROUP BY h.customer_id, h.building_id, h.start_ms, h.local_date, h.local_hour, h.weekday, h.working) y
       LEFT JOIN (SELECT customer_id, building_id, local_date, spaces FROM building_day_spaces WHERE ${w.sql}) n
         ON n.customer_id = y.customer_id AND n.building_id = y.building_id AND n.local_date = y.local_date
      GROUP BY y.customer_id, y.building_id, y.weekday, y.local_hour`,
    w.params,
  );
}
