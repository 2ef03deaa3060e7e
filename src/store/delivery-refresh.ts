/**
 * How long after a webhook delivery commits its readings' aggregates are refreshed at the latest (plus the refresh
 * itself): docs/reporting.md, "When the aggregates are current".
 */
export const DELIVERY_REFRESH_MS = 1_000;

/** Timers, injected so a test moves time itself. `set` returns a handle `clear` accepts. */
export interface RefreshTimers {
  set(run: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

/** Unref'd: a pending refresh never keeps a process alive on its own (close() runs it). */
const systemTimers: RefreshTimers = {
  set: (run, ms) => setTimeout(run, ms).unref(),
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/**
 * The refresh of what webhook deliveries made stale. A delivery appends its floor spaces' ranges in its transaction, as
 * a poll page does, instead of recomputing its buckets there: recomputing read every reading of its spaces' hours
 * back for every delivery, and summed its floors again (docs/performance.md, "Why the receiver is slow"). Here the
 * first delivery of a customer since its last refresh starts the interval; at its end one refresh recomputes each
 * bucket the interval's deliveries touched, once. One refresh at a time: deliveries that commit during it are the
 * next one's. A refresh that fails is reported and its rows stay pending (the next delivery, run, report or start
 * refreshes them). `close()` refreshes what is due and stops, so a receiver that stops cleanly leaves nothing pending.
 */
export class DeliveryRefresh {
  readonly #refresh: (customerId: string) => Promise<unknown>;
  readonly #failed: (customerId: string, error: unknown) => void;
  readonly #delayMs: number;
  readonly #timers: RefreshTimers;
  /** Customers with deliveries committed since their last refresh started. */
  readonly #due = new Set<string>();
  #timer: unknown;
  #running: Promise<void> | undefined;
  #closed = false;

  constructor(options: { refresh(customerId: string): Promise<unknown>; failed(customerId: string, error: unknown): void; delayMs?: number; timers?: RefreshTimers }) {
    this.#refresh = options.refresh;
    this.#failed = options.failed;
    this.#delayMs = options.delayMs ?? DELIVERY_REFRESH_MS;
    this.#timers = options.timers ?? systemTimers;
  }

  /** A delivery of the customer committed readings. */
  delivered(customerId: string): void {
    this.#due.add(customerId);
    this.#arm();
  }

  #arm(): void {
    if (this.#closed || this.#timer !== undefined || this.#running !== undefined) return;
    this.#timer = this.#timers.set(() => {
      this.#timer = undefined;
      this.#running = this.#run().finally(() => {
        this.#running = undefined;
        if (this.#due.size > 0) this.#arm();
      });
    }, this.#delayMs);
  }

  /** Refreshes every customer due, each on its own: one customer's failure is not another's. Never rejects. */
  async #run(): Promise<void> {
    const customers = [...this.#due].sort();
    this.#due.clear();
    for (const customerId of customers) {
      try {
        await this.#refresh(customerId);
      } catch (error) {
        this.#failed(customerId, error);
      }
    }
  }

  /** Refreshes what is due now (after the refresh in progress, if any) and arms no more. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) {
      this.#timers.clear(this.#timer);
      this.#timer = undefined;
    }
    await this.#running;
    if (this.#due.size > 0) await this.#run();
  }
}
