import type { Clock } from '../clock.ts';
import { floorSpaceSummaryRows, hourlyRows, type ReportFilter } from '../store/report-queries.ts';
import type { Store } from '../store/types.ts';
import { toIsoUtc } from '../time.ts';
import { totalOf, type FloorSpaceSummary, type HourlyPoint, type ReportData, type ReportOptions } from './types.ts';

/**
 * Reads a report from the reporting views (`occupancy_hourly`, `occupancy_latest`) through the store's report queries
 * (src/store/report-queries.ts); values are normalised here because drivers differ (Postgres returns SUM() as a bigint
 * string).
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

/** The report's range as the store's report queries take it. */
function filterOf(options: ReportOptions): ReportFilter {
  return { from: toIsoUtc(options.from), to: toIsoUtc(options.to), customerId: options.customerId };
}

export async function loadSummary(store: Store, options: ReportOptions & { customerNames?: ReadonlyMap<string, string> }): Promise<FloorSpaceSummary[]> {
  const rows = await floorSpaceSummaryRows(store, filterOf(options));
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
  const rows = await hourlyRows(store, filterOf(options));
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
