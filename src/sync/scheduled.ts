import { systemClock, type Clock } from '../clock.ts';
import type { Config, CustomerConfig } from '../config.ts';
import { ExitCode } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { createMetrics } from '../metrics.ts';
import { createSyncPass } from '../serve/sync-pass.ts';
import type { Store } from '../store/types.ts';
import type { AnyStream } from './stream.ts';
import type { SyncReport } from './engine.ts';
import { exitCodeOf, summaryLine } from './summary.ts';

/**
 * The runs of `schedule`: one sync pass per tick through `serve`'s createSyncPass, whose API clients live as long as
 * the daemon. A token is then reused across ticks until it nears expiry (a 900 s token: about 6 auth calls an hour
 * per key) instead of authenticating on every tick, as building fresh clients per run would.
 */
export interface ScheduledSync {
  /** One pass: prints its summary line on stdout (problems are logged by the pass), resolves to its report. */
  run(signal: AbortSignal): Promise<SyncReport>;
  /** Closes the API clients; call once, when the daemon stops. */
  close(): Promise<void>;
}

export function createScheduledSync(options: {
  config: Config;
  store: Store;
  logger: Logger;
  customers: ReadonlyArray<CustomerConfig>;
  streams: ReadonlyArray<AnyStream>;
  stdout: { write(text: string): unknown };
  clock?: Clock;
  /** Overrides config.apiBaseUrl (tests point it at a sandbox). */
  baseUrl?: string;
}): ScheduledSync {
  const pass = createSyncPass({
    config: options.config,
    store: options.store,
    logger: options.logger,
    // Not exposed by `schedule` (use `serve` for /metrics); the pass needs somewhere to count.
    metrics: createMetrics(),
    clock: options.clock ?? systemClock,
    customers: options.customers,
    streams: options.streams,
    baseUrl: options.baseUrl,
  });
  return {
    async run(signal) {
      const result = await pass.run(signal);
      options.stdout.write(`${summaryLine('sync', result)}\n`);
      const code = exitCodeOf(result.outcomes);
      if (code !== ExitCode.OK) options.logger.warn({ exitCode: code }, 'scheduled run did not fully succeed; the next tick retries');
      return result;
    },
    close: () => pass.close(),
  };
}
