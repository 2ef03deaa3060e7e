import { selectCustomers, type Config } from '../config.ts';
import { UsageError } from '../errors.ts';
import type { Store } from '../store/types.ts';
import { runKeyOf, type AnyStream } from '../sync/stream.ts';

/**
 * The --customer and --stream of the commands that read or change the stored state (`status`, `state`): a name that
 * matches nothing is a typing error, said with exit 64 and the names that exist, not an empty answer that exits 0.
 */

/** --customer: one configured, or, with none configured (a reader of the database alone), one the database holds. */
export async function checkCustomerFlag(config: Config, store: Store, customer: string | undefined): Promise<void> {
  if (customer === undefined) return;
  if (config.customers.length > 0) {
    selectCustomers(config, customer);
    return;
  }
  const stored = [...new Set((await store.listStates()).map((s) => s.customerId))].sort();
  if (stored.length > 0 && !stored.includes(customer)) {
    throw new UsageError(`--customer ${JSON.stringify(customer)}: the database holds no state of that customer. Fix: use one of ${stored.join(', ')}`);
  }
}

/** --stream: a stream of the definitions in force (its name, name#backfill, name/<partition>), or a key stored. */
export function checkStreamFlag(streams: ReadonlyArray<AnyStream>, storedKeys: readonly string[], key: string): void {
  const name = runKeyOf(key).replace(/#backfill$/, '');
  if (streams.some((s) => s.name === name) || storedKeys.includes(key)) return;
  throw new UsageError(`--stream ${JSON.stringify(key)}: no stream of that name, and no state stored under it. Fix: use one of ${streams.map((s) => s.name).join(', ')} (\`occupancy-sync state show\` lists the stored keys)`);
}

/**
 * --customer of a command over the customers' floor spaces (`report`, `aggregates rebuild`): with none configured (a
 * reader of the database alone), one the database holds floor spaces of, checked before any work.
 */
export async function checkHeldCustomer(config: Config, store: Store, customer: string | undefined): Promise<void> {
  if (customer === undefined) return;
  if (config.customers.length > 0) {
    selectCustomers(config, customer);
    return;
  }
  const held = await store.customersHeld();
  if (held.includes(customer)) return;
  const fix = held.length === 0 ? 'run occupancy-sync sync first' : `use one of ${held.slice(0, 10).join(', ')}${held.length > 10 ? ` (and ${held.length - 10} more)` : ''}`;
  throw new UsageError(`--customer ${JSON.stringify(customer)}: the database holds no floor space of that customer. Fix: ${fix}`);
}

/** --building of `aggregates rebuild`: a building of one of these customers' floor spaces or aggregates, checked before any work. */
export async function checkBuildingFlag(store: Store, customerIds: readonly string[], building: string | undefined): Promise<void> {
  if (building === undefined) return;
  for (const customerId of customerIds) if ((await store.aggregateBuildings(customerId)).includes(building)) return;
  throw new UsageError(
    `--building ${JSON.stringify(building)}: no floor space of ${customerIds.join(', ')} is in it. Fix: give a building id as buildings.id and floor_spaces.building_id hold it ('' for the floor spaces of no known building)`,
  );
}
