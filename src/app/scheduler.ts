import cron from 'node-cron';
import { ConfigError } from '../errors.ts';
import type { Logger } from '../logger.ts';

/** SYNC_CRON, checked with node-cron's own parser so the daemon never starts with an expression it would reject. */
export function validateCron(expression: string, variable = 'SYNC_CRON'): string {
  const result = cron.validateDetailed(expression);
  if (!result.valid) {
    const details = result.errors.map((e) => `${e.field}${e.value !== undefined ? ` ${JSON.stringify(e.value)}` : ''}: ${e.message}`).join('; ');
    throw new ConfigError(
      `${variable}=${JSON.stringify(expression)}: not a valid cron expression${details ? ` (${details})` : ''}. ` +
        'Fix: use 5 fields (minute hour day-of-month month day-of-week), e.g. "*/5 * * * *", or 6 with seconds first',
    );
  }
  return expression;
}

export interface SchedulerOptions {
  cron: string;
  /** One run; receives the daemon's signal so a shutdown finishes the current page and stops. */
  run(signal: AbortSignal): Promise<void>;
  logger: Logger;
  /** Aborting it stops the daemon: no new tick starts, the current run winds down, `done` resolves. */
  signal: AbortSignal;
  /** Run once right away instead of waiting for the first tick. */
  runAtStart?: boolean;
  /** node-cron's `schedule`, replaceable in tests. */
  schedule?: (expression: string, fn: () => void) => { stop(): void | Promise<void>; destroy(): void | Promise<void> };
}

export interface Scheduler {
  /** Fires like a cron tick would (tests, and `runAtStart`). Resolves when that tick's run (if any) finished. */
  tick(): Promise<void>;
  /** Resolves after the signal aborted and the run in progress, if any, finished. */
  done: Promise<void>;
  readonly skipped: number;
  readonly runs: number;
}

/**
 * How long a stop waits for the run in progress to commit its page and end. A run waiting on a database or an API
 * that does not answer ends by its own bounds (docs/operations.md, "How long a stop takes"), which can be longer;
 * the daemon does not wait for them: closing the store drops the page not committed, which the next run reads again.
 */
export const STOP_LIMIT_MS = 20_000;

/** Whether `promise` settled within `ms`. */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
  ]);
  clearTimeout(timer);
  return settled;
}

/** A cron daemon that never overlaps itself: a tick that comes while a run is in progress is skipped and logged. */
export function startScheduler(options: SchedulerOptions): Scheduler {
  validateCron(options.cron);
  let running: Promise<void> | undefined;
  let skipped = 0;
  let runs = 0;
  const tick = (): Promise<void> => {
    if (options.signal.aborted) return Promise.resolve();
    if (running) {
      skipped++;
      options.logger.warn({ cron: options.cron }, 'the previous run is still in progress: skipping this tick');
      return Promise.resolve();
    }
    runs++;
    running = options
      .run(options.signal)
      .catch((error: unknown) => options.logger.error({ err: error }, `scheduled run failed: ${(error as Error)?.message ?? error}`))
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  const schedule = options.schedule ?? ((expression: string, fn: () => void) => cron.schedule(expression, fn, { name: 'occupancy-sync' }));
  const task = schedule(options.cron, () => void tick());
  options.logger.info({ cron: options.cron }, 'scheduler started');
  const done = new Promise<void>((resolve) => {
    const stop = async () => {
      await task.stop();
      await task.destroy();
      if (running) {
        options.logger.info('stopping: finishing the current page of the run in progress');
        if (!(await settlesWithin(running, STOP_LIMIT_MS))) {
          options.logger.warn(
            { waitedMs: STOP_LIMIT_MS },
            `the run in progress did not end within ${STOP_LIMIT_MS / 1000} s of the stop (its database or API does not answer): stopping without it; ` +
              'what it did not commit is read again by the next run',
          );
        }
      }
      options.logger.info('scheduler stopped');
      resolve();
    };
    if (options.signal.aborted) void stop();
    else options.signal.addEventListener('abort', () => void stop(), { once: true });
  });
  if (options.runAtStart) void tick();
  return {
    tick,
    done,
    get skipped() {
      return skipped;
    },
    get runs() {
      return runs;
    },
  };
}
