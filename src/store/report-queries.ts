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

/** The local dates [fromDate, toDate) of each building, of one customer or all. */
export interface ReportFilter {
  fromDate: string;
  toDate: string;
  customerId?: string | undefined;
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

function where(filter: ReportFilter, first = 1): { sql: string; params: unknown[] } {
  const params: unknown[] = [filter.fromDate, filter.toDate];
  let sql = `local_date >= $${first} AND local_date < $${first + 1}`;
  if (filter.customerId) {
    params.push(filter.customerId);
    sql += ` AND customer_id = $${first + 2}`;
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

/**
 * The weekday x local hour profile of each building or floor over the range (building_hours, floor_hours): the
 * buckets' seconds summed per ISO weekday and local hour, working buckets only unless the scope is all hours.
 */
export function reportProfileRows(store: Store, level: 'building' | 'floor', filter: ReportFilter): Promise<ReportRow[]> {
  const names = level === 'building' ? ['customer_id', 'building_id'] : ['customer_id', 'building_id', 'floor_id'];
  const w = where(filter);
  const working = filter.scope === 'working' ? ' AND working = TRUE' : '';
  return store.query<ReportRow>(
    `SELECT ${names.join(', ')}, weekday, local_hour,
            SUM(period_seconds) AS period_seconds, SUM(known_seconds) AS known_seconds, SUM(occupied_seconds) AS occupied_seconds,
            SUM(headcount_seconds) AS headcount_seconds, SUM(headcount_known_seconds) AS headcount_known_seconds,
            SUM(capacity_seconds) AS capacity_seconds, SUM(capacity_headcount_seconds) AS capacity_headcount_seconds,
            MAX(peak_headcount) AS peak_headcount, MAX(peak_utilization) AS peak_utilization, COUNT(*) AS days
       FROM ${level}_hours
      WHERE ${w.sql}${working}
      GROUP BY ${names.join(', ')}, weekday, local_hour`,
    w.params,
  );
}
