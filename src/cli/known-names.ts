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
