/**
 * `occupancy-sync/testing`: helpers for tests of code built on occupancy-sync; not part of the main entry.
 */
import { startSandbox as startSandboxImpl } from '../sandbox/index.ts';
import { memoryLogger as memoryLoggerImpl } from '../logger.ts';

export { FakeClock } from '../clock.ts';
export { signatureHeader } from './signature.ts';
export type { Sandbox, SandboxOptions, SandboxCustomer, SandboxKey, FaultOptions, GroundTruthObservation } from '../sandbox/index.ts';

/**
 * Starts the local stand-in for the platform (token auth, GraphQL, signed webhook deliveries) on a free port, with
 * deterministic demo customers and keys.
 *
 * @example
 * import { startSandbox } from 'occupancy-sync/testing';
 * const sandbox = await startSandbox({ port: 0 });
 * const customer = sandbox.customers[0]!;
 * // API_BASE_URL=sandbox.url, API_KEY=customer.readKey.key, API_SECRET=customer.readKey.secret, CUSTOMER_ID=customer.id
 * await sandbox.close();
 */
export const startSandbox: typeof startSandboxImpl = startSandboxImpl;

/**
 * A logger that keeps its JSON lines in memory, for assertions on what was logged.
 *
 * @example
 * import { memoryLogger } from 'occupancy-sync/testing';
 * const { logger, records } = memoryLogger();
 * logger.warn({ customer: 'c1' }, 'retrying');
 * console.log(records()[0]!.msg); // 'retrying'
 */
export const memoryLogger: typeof memoryLoggerImpl = memoryLoggerImpl;
