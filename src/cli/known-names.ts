import { selectCustomers, type Config } from '../config.ts';
import { UsageError } from '../errors.ts';
import type { Store } from '../store/types.ts';
import { runKeyOf, type AnyStream } from '../sync/stream.ts';

/**
 * The --customer and --stream of the commands that read or change the stored state (`status`, `state`): a name that
 * matches nothing is a typing error, said with exit 64 and the names that exist, not an empty answer that exits 0.
 */

/**
 * What a database holds a customer by, for --customer when no customer is configured (a reader of the database
 * alone): its sync state (`status`, `state`: a database with none yet takes any name, and says it has no state), or its
 * floor spaces (`report`, `aggregates rebuild`, checked before any work: a database with none is refused too).
 */
const HELD = {
  state: { read: async (store: Store) => [...new Set((await store.listStates()).map((s) => s.customerId))].sort(), none: undefined },
  'floor space': { read: (store: Store) => store.customersHeld(), none: 'run occupancy-sync sync first' },
} as const;

/** --customer: one configured, or, with none configured, one the database holds (`of`: by its state or its floor spaces). */
export async function checkCustomerFlag(config: Config, store: Store, customer: string | undefined, of: keyof typeof HELD = 'state'): Promise<void> {
  if (customer === undefined) return;
  if (config.customers.length > 0) {
    selectCustomers(config, customer);
    return;
  }
  const held = await HELD[of].read(store);
  if (held.includes(customer)) return;
  const fix = held.length > 0 ? `use one of ${held.slice(0, 10).join(', ')}${held.length > 10 ? ` (and ${held.length - 10} more)` : ''}` : HELD[of].none;
  if (fix !== undefined) throw new UsageError(`--customer ${JSON.stringify(customer)}: the database holds no ${of} of that customer. Fix: ${fix}`);
}

/** --stream: a stream of the definitions in force (its name, name#backfill, name/<partition>), or a key stored. */
export function checkStreamFlag(streams: ReadonlyArray<AnyStream>, storedKeys: readonly string[], key: string): void {
  const name = runKeyOf(key).replace(/#backfill$/, '');
  if (streams.some((s) => s.name === name) || storedKeys.includes(key)) return;
  throw new UsageError(`--stream ${JSON.stringify(key)}: no stream of that name, and no state stored under it. Fix: use one of ${streams.map((s) => s.name).join(', ')} (\`occupancy-sync state show\` lists the stored keys)`);
}

/** --building of `aggregates rebuild`: a building of one of these customers' floor spaces or aggregates, checked before any work. */
export async function checkBuildingFlag(store: Store, customerIds: readonly string[], building: string | undefined): Promise<void> {
  if (building === undefined) return;
  for (const customerId of customerIds) if ((await store.aggregateBuildings(customerId)).includes(building)) return;
  throw new UsageError(
    `--building ${JSON.stringify(building)}: no floor space of ${customerIds.join(', ')} is in it. Fix: give a building id as buildings.id and floor_spaces.building_id hold it ('' for the floor spaces of no known building)`,
  );
}
