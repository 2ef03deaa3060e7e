import type { RefreshTimers } from '../store/delivery-refresh.ts';

/**
 * How long after a stored delivery a receiver brings the planner's statistics up to date at the latest, and so how
 * often at most: a receiver is a run that never ends, so its database gets the step a sync's run ends with on this
 * schedule instead (docs/operations.md, "Statistics").
 */
export const STATISTICS_AFTER_DELIVERIES_MS = 60_000;

/** Unref'd: a pending step never keeps a process alive. */
const systemTimers: RefreshTimers = {
  set: (run, ms) => setTimeout(run, ms).unref(),
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/**
 * The planner-statistics step of a receiver (`webhook serve`): the first delivery stored since the last step starts
 * the interval, and at its end one step runs (src/app/planner-statistics.ts: it analyzes only what changed past
 * autovacuum's threshold). One at a time; deliveries stored during it start the next interval when it ends. `close()`
 * stops the schedule and waits for a step in progress, without starting one: a stopping receiver's last deliveries
 * are the next run's to count.
 */
export class StatisticsAfterDeliveries {
  readonly #update: () => Promise<void>;
  readonly #intervalMs: number;
  readonly #timers: RefreshTimers;
  #pending = false;
  #timer: unknown;
  #running: Promise<void> | undefined;
  #closed = false;

  /** `update` never rejects (updatePlannerStatisticsAfterRun reports its own failure). */
  constructor(options: { update(): Promise<void>; intervalMs?: number; timers?: RefreshTimers }) {
    this.#update = options.update;
    this.#intervalMs = options.intervalMs ?? STATISTICS_AFTER_DELIVERIES_MS;
    this.#timers = options.timers ?? systemTimers;
  }

  /** A delivery stored readings. */
  stored(): void {
    this.#pending = true;
    this.#arm();
  }

  #arm(): void {
    if (this.#closed || !this.#pending || this.#timer !== undefined || this.#running !== undefined) return;
    this.#timer = this.#timers.set(() => {
      this.#timer = undefined;
      this.#pending = false;
      // `update` reports its own failure; a rejection all the same must not end a receiver (an unhandled rejection).
      this.#running = this.#update()
        .catch(() => undefined)
        .finally(() => {
          this.#running = undefined;
          this.#arm();
        });
    }, this.#intervalMs);
  }

  /** Starts no more steps; waits for the one in progress, if any. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) {
      this.#timers.clear(this.#timer);
      this.#timer = undefined;
    }
    await this.#running;
  }
}
