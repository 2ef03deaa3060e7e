import type { Config, CustomerConfig } from '../config.ts';
import type { Logger } from '../logger.ts';
import { formatCount } from '../numbers.ts';
import type { AggregateSettings, RebuiltBuilding, Store } from '../store/types.ts';
import type { SyncReport } from '../sync/engine.ts';
import type { AnyStream } from '../sync/stream.ts';
import { defaultMaxHold } from '../time-weight.ts';

/**
 * The time-weighted aggregates' settings as configured (WORKING_TIME_FILE, the streams' max hold), and the check each
 * sync makes with them: a building whose aggregates were computed with another zone, calendar or max hold is rebuilt,
 * with one line saying so.
 */

/**
 * What a customer's aggregates are computed with: the working time of the configuration and the longest max hold of
 * the streams that store readings (a reading holds the same however it arrived: polled or delivered).
 */
export function aggregateSettings(config: Pick<Config, 'workingTime'>, streams: ReadonlyArray<AnyStream>): AggregateSettings {
  const holds = streams.filter((s) => s.sink === 'occupancy').map((s) => s.maxHoldMs ?? defaultMaxHold(s.sampling ?? 'interval', s.samplingIntervalMs));
  return { workingTime: config.workingTime, maxHoldMs: holds.length > 0 ? Math.max(...holds) : defaultMaxHold('interval') };
}

/** The one line that says a building's aggregates were rebuilt, and why. */
export function rebuiltLine(b: RebuiltBuilding): string {
  const name = b.buildingId === '' ? 'the floor spaces of no known building' : `building ${b.buildingName ? `${b.buildingName} (${b.buildingId})` : b.buildingId}`;
  const why = b.change ? `: ${b.change}` : '';
  return `rebuilt the aggregates of ${name} in ${b.zone} (zone: ${b.zoneSource})${why}; ${formatCount(b.spaces)} floor space(s), ${formatCount(b.buckets)} bucket(s)`;
}

/**
 * Rebuilds, for each customer, the buildings whose aggregates were computed otherwise than configured now, and tells
 * the store what its commits compute new buildings with. Runs before and after each sync of streams that store
 * readings, and when a webhook receiver starts.
 */
export async function reconcileAggregates(options: { store: Store; config: Pick<Config, 'workingTime'>; streams: ReadonlyArray<AnyStream>; customers: ReadonlyArray<Pick<CustomerConfig, 'id'>>; logger: Logger }): Promise<RebuiltBuilding[]> {
  // A run of other streams alone (`sync --stream buildings`) knows no max hold: it leaves the aggregates as they are.
  if (!options.streams.some((s) => s.sink === 'occupancy')) return [];
  const settings = aggregateSettings(options.config, options.streams);
  const rebuilt: RebuiltBuilding[] = [];
  for (const customer of options.customers) {
    for (const building of await options.store.reconcileAggregates(customer.id, settings)) {
      options.logger.info({ customer: customer.id, building: building.buildingId, zone: building.zone, zoneSource: building.zoneSource, buckets: building.buckets }, rebuiltLine(building));
      rebuilt.push(building);
    }
  }
  return rebuilt;
}

/**
 * The reconcile after a run (it rebuilds the buildings the run listed for the first time) never takes the run's report
 * away: after a failed stream it is left to the next run's reconcile before its streams (the store may be what
 * failed), and a reconcile that fails is one warning, for the same reason.
 */
export async function reconcileAfterRun(report: SyncReport, reconcile: () => Promise<unknown>, logger: Logger): Promise<void> {
  if (report.outcomes.some((o) => o.status === 'failed')) return;
  try {
    await reconcile();
  } catch (error) {
    logger.warn({ err: error }, `the aggregates were not reconciled after the run (the next run does it first): ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * `aggregates rebuild`: recomputes each customer's aggregates from the readings, with the settings configured now
 * (a building configured otherwise than it was computed is rebuilt whole, whatever the range).
 */
export async function rebuildAggregates(options: {
  store: Store;
  config: Pick<Config, 'workingTime'>;
  streams: ReadonlyArray<AnyStream>;
  customerIds: readonly string[];
  buildingId?: string;
  from?: string;
  to?: string;
  onBuilding?(building: RebuiltBuilding): void;
}): Promise<RebuiltBuilding[]> {
  const settings = aggregateSettings(options.config, options.streams);
  const out: RebuiltBuilding[] = [];
  for (const customerId of options.customerIds) {
    const request = { customerId, ...(options.buildingId !== undefined && { buildingId: options.buildingId }), ...(options.from && { from: options.from }), ...(options.to && { to: options.to }) };
    for (const building of await options.store.rebuildAggregates(request, settings)) {
      options.onBuilding?.(building);
      out.push(building);
    }
  }
  return out;
}
