import type { IsoUtc } from '../store/types.ts';

/**
 * The platform's occupancy items only carry a FloorSpaceId: nothing in the API (and so nothing in the database)
 * maps a floor space to its building. Reports group by this placeholder building until such a mapping exists.
 */
export const UNKNOWN_BUILDING = 'unknown';

export interface ReportRange {
  /** Inclusive start: an hour bucket is in the report when its start is in [from, to). */
  from: IsoUtc;
  /** Exclusive end. */
  to: IsoUtc;
}

export interface ReportOptions extends ReportRange {
  customerId?: string;
}

/** One floor space over the whole range (from `occupancy_hourly`), with its latest stored reading (`occupancy_latest`). */
export interface FloorSpaceSummary {
  customerId: string;
  building: string;
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

export interface ReportData {
  range: ReportRange;
  customerId: string | null;
  generatedAt: IsoUtc;
  floorSpaces: FloorSpaceSummary[];
  /** Only loaded for the HTML report (it draws them); empty otherwise. */
  hourly: HourlyPoint[];
}

export type ReportFormat = 'table' | 'csv' | 'json';
export const REPORT_FORMATS: readonly ReportFormat[] = ['table', 'csv', 'json'];
