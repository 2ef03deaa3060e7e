import type { Clock } from '../clock.ts';
import type { Store } from '../store/types.ts';
import { toIsoUtc } from '../time.ts';
import { totalOf, type FloorSpaceSummary, type HourlyPoint, type ReportData, type ReportOptions } from './types.ts';

/**
 * Reads a report from the reporting views (`occupancy_hourly`, `occupancy_latest`). The SQL is the same on both
 * dialects; values are normalised here because drivers differ (Postgres returns SUM() as a bigint string).
 */

type Row = Record<string, unknown>;

function num(value: unknown, field: string): number {
  const n = typeof value === 'number' ? value : Number(value);
  if (value === null || value === undefined || !Number.isFinite(n)) {
    throw new TypeError(`report: column ${field} is ${String(value)}, expected a number`);
  }
  return n;
}

function numOrNull(value: unknown, field: string): number | null {
  return value === null || value === undefined ? null : num(value, field);
}

function iso(value: unknown): string {
  return toIsoUtc(value as string | Date);
}

function isoOrNull(value: unknown): string | null {
  return value === null || value === undefined ? null : iso(value);
}

/** Plain code-unit order: identical on both dialects (database collations would not be). */
function byKey<T extends { customerId: string; floorSpaceId: string }>(a: T, b: T): number {
  if (a.customerId !== b.customerId) return a.customerId < b.customerId ? -1 : 1;
  if (a.floorSpaceId !== b.floorSpaceId) return a.floorSpaceId < b.floorSpaceId ? -1 : 1;
  return 0;
}

function where(options: ReportOptions): { sql: string; params: unknown[] } {
  const params: unknown[] = [toIsoUtc(options.from), toIsoUtc(options.to)];
  let sql = 'hour >= $1 AND hour < $2';
  if (options.customerId) {
    params.push(options.customerId);
    sql += ' AND customer_id = $3';
  }
  return { sql, params };
}

export async function loadSummary(store: Store, options: ReportOptions & { customerNames?: ReadonlyMap<string, string> }): Promise<FloorSpaceSummary[]> {
  const filter = where(options);
  const rows = await store.query<Row>(
    `SELECT s.customer_id, s.floor_space_id, s.readings, s.occupied_readings, s.total_headcount, s.peak_headcount,
            s.first_hour, s.last_hour,
            l.observed_at AS latest_observed_at, l.occupancy_status AS latest_status, l.headcount AS latest_headcount
       FROM (SELECT customer_id, floor_space_id,
                    SUM(readings) AS readings, SUM(occupied_readings) AS occupied_readings,
                    SUM(total_headcount) AS total_headcount, MAX(peak_headcount) AS peak_headcount,
                    MIN(hour) AS first_hour, MAX(hour) AS last_hour
               FROM occupancy_hourly
              WHERE ${filter.sql}
              GROUP BY customer_id, floor_space_id) s
       LEFT JOIN occupancy_latest l ON l.customer_id = s.customer_id AND l.floor_space_id = s.floor_space_id`,
    filter.params,
  );
  return rows
    .map((r): FloorSpaceSummary => {
      const readings = num(r.readings, 'readings');
      const occupiedReadings = num(r.occupied_readings, 'occupied_readings');
      const total = num(r.total_headcount, 'total_headcount');
      const customerId = String(r.customer_id);
      return {
        customerId,
        customerName: options.customerNames?.get(customerId) ?? null,
        floorSpaceId: String(r.floor_space_id),
        readings,
        occupiedReadings,
        occupiedShare: readings ? occupiedReadings / readings : 0,
        avgHeadcount: readings ? total / readings : 0,
        peakHeadcount: num(r.peak_headcount, 'peak_headcount'),
        firstHour: iso(r.first_hour),
        lastHour: iso(r.last_hour),
        latestObservedAt: isoOrNull(r.latest_observed_at),
        latestStatus: r.latest_status === null || r.latest_status === undefined ? null : String(r.latest_status),
        latestHeadcount: numOrNull(r.latest_headcount, 'latest_headcount'),
      };
    })
    .sort(byKey);
}

export async function loadHourly(store: Store, options: ReportOptions): Promise<HourlyPoint[]> {
  const filter = where(options);
  const rows = await store.query<Row>(
    `SELECT customer_id, floor_space_id, hour, readings, occupied_readings, total_headcount,
            avg_headcount, peak_headcount, occupied_share
       FROM occupancy_hourly
      WHERE ${filter.sql}`,
    filter.params,
  );
  return rows
    .map(
      (r): HourlyPoint => ({
        customerId: String(r.customer_id),
        floorSpaceId: String(r.floor_space_id),
        hour: iso(r.hour),
        readings: num(r.readings, 'readings'),
        occupiedReadings: num(r.occupied_readings, 'occupied_readings'),
        totalHeadcount: num(r.total_headcount, 'total_headcount'),
        avgHeadcount: num(r.avg_headcount, 'avg_headcount'),
        peakHeadcount: num(r.peak_headcount, 'peak_headcount'),
        occupiedShare: num(r.occupied_share, 'occupied_share'),
      }),
    )
    .sort((a, b) => byKey(a, b) || (a.hour < b.hour ? -1 : a.hour > b.hour ? 1 : 0));
}

export async function loadReport(
  store: Store,
  options: ReportOptions & { withHourly?: boolean; timeZone?: string; customerNames?: ReadonlyMap<string, string> },
  clock: Clock,
): Promise<ReportData> {
  const range = { from: toIsoUtc(options.from), to: toIsoUtc(options.to) };
  const opts = { ...options, ...range };
  const floorSpaces = await loadSummary(store, opts);
  return {
    range,
    customerId: options.customerId ?? null,
    generatedAt: toIsoUtc(clock.now()),
    timeZone: options.timeZone ?? 'UTC',
    floorSpaces,
    total: totalOf(floorSpaces),
    hourly: options.withHourly ? await loadHourly(store, opts) : [],
  };
}
