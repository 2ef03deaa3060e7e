import type { Config, CustomerConfig } from '../config.ts';
import { messageOf } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { formatCount } from '../numbers.ts';
import type { AggregateSettings, CalendarDrift, PendingAggregates, RebuiltBuilding, Store } from '../store/types.ts';
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
 * Brings each customer's aggregates up to date: rebuilds the buildings whose aggregates were computed otherwise than
 * configured now, then refreshes what poll pages left stale (a killed run's pages included), and tells the store what
 * its commits compute new buildings with. Runs before and after each sync of streams that store readings, and when
 * a daemon or a webhook receiver starts.
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
    const refreshed = await options.store.refreshAggregates(customer.id, settings);
    if (refreshed.spaces > 0) options.logger.debug({ ...refreshed }, `refreshed the aggregates of ${formatCount(refreshed.spaces)} floor space(s) of customer ${customer.id}`);
  }
  return rebuilt;
}

/**
 * After a run, each customer of it is reconciled and refreshed on its own: what a customer's pages committed is data,
 * whether or not one of its streams (or another customer) failed, so its aggregates are brought up to date. A failure
 * there never takes the run's report away: it is one warning, and the invalidations wait for the next run, which
 * refreshes before its streams.
 */
export async function reconcileAfterRun(report: SyncReport, reconcile: (customers: ReadonlyArray<{ id: string }>) => Promise<unknown>, logger: Logger): Promise<void> {
  for (const id of [...new Set(report.outcomes.map((o) => o.customerId))]) {
    try {
      await reconcile([{ id }]);
    } catch (error) {
      logger.warn({ err: error, customer: id }, `the aggregates of customer ${id} were not brought up to date after the run (the next run does it first): ${messageOf(error)}`);
    }
  }
}

/**
 * `aggregates rebuild`: refreshes what poll pages left stale, then recomputes each customer's aggregates from the
 * readings, with the settings configured now (a building configured otherwise than it was computed is rebuilt whole,
 * whatever the range).
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
    // What poll pages left stale outside the range asked for is made current too.
    await options.store.refreshAggregates(customerId, settings);
    const request = { customerId, ...(options.buildingId !== undefined && { buildingId: options.buildingId }), ...(options.from && { from: options.from }), ...(options.to && { to: options.to }) };
    for (const building of await options.store.rebuildAggregates(request, settings)) {
      options.onBuilding?.(building);
      out.push(building);
    }
  }
  return out;
}

/**
 * Before a report reads: what poll pages left stale is refreshed (a writer opened only when something is pending, so
 * an up-to-date database is still only read). Resolves to what stays pending: a refresh that could not run (a
 * read-only database user, a read-only file) leaves the report to say how far its figures lag.
 */
export async function refreshForReading(options: {
  reader: Store;
  openWriter(): Promise<Store>;
  config: Pick<Config, 'workingTime'>;
  streams: ReadonlyArray<AnyStream>;
  customerId?: string;
  logger: Logger;
}): Promise<PendingAggregates[]> {
  const pending = await options.reader.pendingAggregates(options.customerId);
  if (pending.length === 0) return [];
  try {
    const writer = await options.openWriter();
    try {
      const settings = aggregateSettings(options.config, options.streams);
      for (const p of pending) await writer.refreshAggregates(p.customerId, settings);
    } finally {
      await writer.close();
    }
  } catch (error) {
    options.logger.debug({ err: error }, 'the aggregates could not be refreshed before the report');
  }
  return options.reader.pendingAggregates(options.customerId);
}

/** The one line a report prints when its figures lag readings it could not refresh. */
export function staleLine(pending: ReadonlyArray<PendingAggregates>): string {
  const spaces = pending.reduce((n, p) => n + p.floorSpaces, 0);
  const from = pending.map((p) => p.from).sort()[0];
  return `the figures lag the readings of ${formatCount(spaces)} floor space(s) from ${from} on: their aggregates could not be refreshed (a read-only database?). Fix: run \`occupancy-sync sync\` (or the report) with write access`;
}

/**
 * Before a report reads, when WORKING_TIME_FILE is set: the buildings whose aggregates were computed with another zone
 * or working calendar than it gives now (the next sync, or `aggregates rebuild`, rebuilds them; a report only reads).
 * Without it, a reader of the database alone takes the figures as the sync computed them: nothing to compare.
 */
export async function calendarDriftForReading(options: { reader: Store; config: Pick<Config, 'workingTime'>; customerIds: readonly string[] }): Promise<CalendarDrift[]> {
  if (options.config.workingTime.file === undefined) return [];
  const out: CalendarDrift[] = [];
  for (const customerId of options.customerIds) out.push(...(await options.reader.calendarDrift(customerId, options.config.workingTime)));
  return out;
}

/** The one line a report prints when some buildings' figures were computed with another calendar than configured. */
export function driftLine(drift: ReadonlyArray<CalendarDrift>): string {
  const names = drift.map((d) => (d.buildingId === '' ? 'the floor spaces of no known building' : (d.buildingName ?? d.buildingId)));
  const shown = names.length > 3 ? `${names.slice(0, 3).join(', ')} and ${formatCount(names.length - 3)} more` : names.join(', ');
  return (
    `the figures of ${formatCount(drift.length)} building(s) (${shown}) were computed with another working time or zone than WORKING_TIME_FILE gives now ` +
    `(${drift[0]!.change}); they stay so until rebuilt. Fix: run \`occupancy-sync aggregates rebuild\` (the next sync rebuilds them too)`
  );
}
