import type { IsoUtc } from '../store/types.ts';
import type { ReportScope } from '../store/report-queries.ts';
import type { Figures } from './figures.ts';

export type { ReportScope };

/** The local dates of the report, [from, to): each building's own local dates (docs/reporting.md). */
export interface ReportRange {
  /** First local date, `YYYY-MM-DD`. */
  from: string;
  /** The local date after the last. */
  to: string;
}

export interface ReportOptions extends ReportRange {
  customerId?: string | undefined;
  scope: ReportScope;
}

/** cells[weekday 0 = Monday][local hour 0..23], null where nothing was measured. */
export type ProfileCells = Array<Array<Figures | null>>;

export interface SpaceReport {
  floorSpaceId: string;
  name: string | null;
  spaceType: string | null;
  capacity: number | null;
  figures: Figures;
}

export interface FloorReport {
  /** null: floor spaces on no known floor. */
  floorId: string | null;
  name: string | null;
  level: number | null;
  figures: Figures;
  profile: ProfileCells;
  spaces: SpaceReport[];
}

export interface BuildingReport {
  customerId: string;
  customerName: string | null;
  /** '' : floor spaces of no known building. */
  buildingId: string;
  name: string | null;
  /** The zone its local dates, hours and heat maps are in. */
  timeZone: string | null;
  figures: Figures;
  profile: ProfileCells;
  floors: FloorReport[];
}

/** A customer's whole portfolio. */
export interface PortfolioReport {
  customerId: string;
  customerName: string | null;
  buildings: number;
  spaces: number;
  figures: Figures;
}

export interface ReportData {
  range: ReportRange;
  scope: ReportScope;
  customerId: string | null;
  generatedAt: IsoUtc;
  portfolios: PortfolioReport[];
  buildings: BuildingReport[];
}

export type ReportFormat = 'table' | 'csv' | 'json';
export const REPORT_FORMATS: readonly ReportFormat[] = ['table', 'csv', 'json'];
