import { startSandbox } from '../src/sandbox/index.ts';
import { closeOnSignal, flags, report, required } from './child.ts';

/**
 * The sandbox in its own process, for the sync benchmarks: one customer, a fixed seed, every observation visible
 * at once (lateArrivalMaxMs 0), data starting far enough back that any benchmark range is in the past.
 *
 *   node --import tsx bench/sandbox-process.ts --data-start 2026-01-05T00:00:00Z --buildings 25 --spaces 50 [--expires-in S]
 *     [--interval-ms MS]
 *
 * Prints one JSON line: SandboxInfo. Stops on SIGTERM.
 */

export interface SandboxInfo {
  url: string;
  customerId: string;
  apiKey: string;
  apiSecret: string;
  /** ISO UTC: the first observation tick. */
  dataStart: string;
  intervalMs: number;
  /** Observations per tick (one per floor space). */
  floorSpaces: number;
}

export const SANDBOX_SEED = 8;
export const INTERVAL_MS = 5 * 60_000;

const args = flags();
const buildings = Number(args.get('buildings') ?? 25);
const spaces = Number(args.get('spaces') ?? 50);
const dataStart = required(args, 'data-start');
// The replay benchmark records one token and serves it for the whole run: it must outlive the run.
const expiresIn = Number(args.get('expires-in') ?? 900);
// The portfolio benchmark's sensors report hourly (bench/portfolio.ts says why); the others every 5 minutes.
const intervalMs = Number(args.get('interval-ms') ?? INTERVAL_MS);

const sandbox = await startSandbox({
  seed: SANDBOX_SEED,
  customers: 1,
  buildingsPerCustomer: buildings,
  floorSpacesPerBuilding: spaces,
  dataStart,
  intervalMs,
  lateArrivalMaxMs: 0,
  expiresIn,
});
const customer = sandbox.customers[0]!;
closeOnSignal(() => sandbox.close());
report({
  url: sandbox.url,
  customerId: customer.id,
  apiKey: customer.readKey.key,
  apiSecret: customer.readKey.secret,
  dataStart: new Date(dataStart).toISOString(),
  intervalMs,
  floorSpaces: buildings * spaces,
} satisfies SandboxInfo);
