import type { WorkingTime, ZoneSource } from '../config-working-time.ts';
import type { IsoUtc } from '../time.ts';

/** The time-weighted aggregates' types the store's interface uses (types.ts re-exports them). */

/** What the time-weighted aggregates of a customer are computed with (docs/reporting.md, "Time-weighted aggregates"). */
export interface AggregateSettings {
  /** Working time per building (WORKING_TIME_FILE), and the zone of a building whose platform gives none. */
  workingTime: WorkingTime;
  /** How long a reading of the customer's occupancy streams holds at most (docs/reporting.md, "The hold rule"). */
  maxHoldMs: number;
}

/** `aggregates rebuild`: one customer's buildings (or one), over local dates [from, to) of each one's zone, or all. */
export interface AggregateRebuild {
  customerId: string;
  /** A building id ('' for the floor spaces of no known building); undefined: every building. */
  buildingId?: string;
  /** Local dates `YYYY-MM-DD`; undefined: from the first reading, to the last. */
  from?: string;
  to?: string;
}

/** What a refresh of a customer's pending invalidations did (Store.refreshAggregates). */
export interface AggregateRefresh {
  customerId: string;
  /** Floor spaces whose stale range was recomputed. */
  spaces: number;
  /** Buckets written. */
  buckets: number;
  /**
   * Of those, floor spaces still pending for the next refresh: a page invalidated them again meanwhile, or a refresh
   * beside a run left the hour of their last reading (aggregate-fronts.ts).
   */
  left: number;
}

/** The aggregates of a customer that lag its readings: invalidations no refresh has done yet (`status`). */
export interface PendingAggregates {
  customerId: string;
  floorSpaces: number;
  /** The earliest and latest reading instant of the pending ranges (the buckets up to a max hold after it are stale). */
  from: IsoUtc;
  through: IsoUtc;
  /** When the oldest page still unrefreshed committed. */
  since: IsoUtc;
}

/** A building whose aggregates were rebuilt, and why. */
export interface RebuiltBuilding {
  customerId: string;
  buildingId: string;
  buildingName: string | null;
  zone: string;
  /** Where the zone came from: the platform's `buildings.time_zone`, WORKING_TIME_FILE, or neither (UTC). */
  zoneSource: ZoneSource;
  /** What changed since the rows were computed ('' : nothing, a range recomputed on request). */
  change: string;
  spaces: number;
  /** Buckets written. */
  buckets: number;
  /** Every bucket of the building was recomputed (not only a range). */
  whole?: boolean;
}

/** A building whose aggregates were computed with another zone or working calendar than the configuration gives now. */
export interface CalendarDrift {
  customerId: string;
  buildingId: string;
  buildingName: string | null;
  /** What differs, e.g. `calendar {...} -> {...}`. */
  change: string;
}
