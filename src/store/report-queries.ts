import type { Store } from './types.ts';

/**
 * The report's reads of the reporting views (`occupancy_hourly`, `occupancy_latest`), the same SQL on both dialects.
 * Rows come back as the driver gives them (Postgres returns SUM() as a bigint string): src/report/query.ts normalises
 * them. Every report query is in this file.
 */

export type ReportRow = Record<string, unknown>;

/** The hours [from, to) of the report, of one customer or all. */
export interface ReportFilter {
  from: string;
  to: string;
  customerId?: string | undefined;
}

function where(filter: ReportFilter): { sql: string; params: unknown[] } {
  const params: unknown[] = [filter.from, filter.to];
  let sql = 'hour >= $1 AND hour < $2';
  if (filter.customerId) {
    params.push(filter.customerId);
    sql += ' AND customer_id = $3';
  }
  return { sql, params };
}

/** Per floor space over the range: readings, occupied readings, headcounts, first and last hour, and its latest reading. */
export function floorSpaceSummaryRows(store: Store, filter: ReportFilter): Promise<ReportRow[]> {
  const w = where(filter);
  return store.query<ReportRow>(
    `SELECT s.customer_id, s.floor_space_id, s.readings, s.occupied_readings, s.total_headcount, s.peak_headcount,
            s.first_hour, s.last_hour,
            l.observed_at AS latest_observed_at, l.occupancy_status AS latest_status, l.headcount AS latest_headcount
       FROM (SELECT customer_id, floor_space_id,
                    SUM(readings) AS readings, SUM(occupied_readings) AS occupied_readings,
                    SUM(total_headcount) AS total_headcount, MAX(peak_headcount) AS peak_headcount,
                    MIN(hour) AS first_hour, MAX(hour) AS last_hour
               FROM occupancy_hourly
              WHERE ${w.sql}
              GROUP BY customer_id, floor_space_id) s
       LEFT JOIN occupancy_latest l ON l.customer_id = s.customer_id AND l.floor_space_id = s.floor_space_id`,
    w.params,
  );
}

/** The hours of the range, per floor space. */
export function hourlyRows(store: Store, filter: ReportFilter): Promise<ReportRow[]> {
  const w = where(filter);
  return store.query<ReportRow>(
    `SELECT customer_id, floor_space_id, hour, readings, occupied_readings, total_headcount,
            avg_headcount, peak_headcount, occupied_share
       FROM occupancy_hourly
      WHERE ${w.sql}`,
    w.params,
  );
}
