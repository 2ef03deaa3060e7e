import type { IsoUtc } from '../store/types.ts';

export interface ReportRange {
  /** Inclusive start: an hour bucket is in the report when its start is in [from, to). */
  from: IsoUtc;
  /** Exclusive end. */
  to: IsoUtc;
}

export interface ReportOptions extends ReportRange {
  customerId?: string;
}

/**
 * One floor space over the whole range (from `occupancy_hourly`), with its latest stored reading (`occupancy_latest`).
 * There is no building: the platform's occupancy data names floor spaces only, and the API links them to no building.
 */
export interface FloorSpaceSummary {
  customerId: string;
  /** The customer's name when the operator configured one (CUSTOMER_NAME, the customers file), else null. */
  customerName: string | null;
  floorSpaceId: string;
  readings: number;
  occupiedReadings: number;
  /** occupiedReadings / readings, 0..1. */
  occupiedShare: number;
  avgHeadcount: number;
  peakHeadcount: number;
  firstHour: IsoUtc;
  lastHour: IsoUtc;
  /** The most recent reading stored for the floor space; it may be later than the range end. */
  latestObservedAt: IsoUtc | null;
  latestStatus: string | null;
  latestHeadcount: number | null;
}

/** One row of `occupancy_hourly`. */
export interface HourlyPoint {
  customerId: string;
  floorSpaceId: string;
  hour: IsoUtc;
  readings: number;
  occupiedReadings: number;
  totalHeadcount: number;
  avgHeadcount: number;
  peakHeadcount: number;
  occupiedShare: number;
}

/** Every floor space together. */
export interface ReportTotal {
  floorSpaces: number;
  readings: number;
  occupiedReadings: number;
  occupiedShare: number;
  avgHeadcount: number;
  peakHeadcount: number;
}

export interface ReportData {
  range: ReportRange;
  customerId: string | null;
  generatedAt: IsoUtc;
  /** IANA zone the hours are shown in (`UTC` unless `--tz`). Timestamps in CSV and JSON stay ISO UTC. */
  timeZone: string;
  floorSpaces: FloorSpaceSummary[];
  total: ReportTotal;
  /** Only loaded for the HTML report (it draws them); empty otherwise. */
  hourly: HourlyPoint[];
}

export function totalOf(rows: readonly FloorSpaceSummary[]): ReportTotal {
  const readings = rows.reduce((n, r) => n + r.readings, 0);
  const occupiedReadings = rows.reduce((n, r) => n + r.occupiedReadings, 0);
  const people = rows.reduce((n, r) => n + r.avgHeadcount * r.readings, 0);
  return {
    floorSpaces: rows.length,
    readings,
    occupiedReadings,
    occupiedShare: readings ? occupiedReadings / readings : 0,
    avgHeadcount: readings ? people / readings : 0,
    peakHeadcount: Math.max(0, ...rows.map((r) => r.peakHeadcount)),
  };
}

export type ReportFormat = 'table' | 'csv' | 'json';
export const REPORT_FORMATS: readonly ReportFormat[] = ['table', 'csv', 'json'];
