import type { RefreshTimers } from '../../src/store/delivery-refresh.ts';

/** Timers that fire only when the test says so (the delivery refresh's, the receiver's statistics step). */
export class HandTimers implements RefreshTimers {
  readonly armed = new Map<number, { run: () => void; ms: number }>();
  #next = 0;
  set(run: () => void, ms: number): number {
    this.armed.set(++this.#next, { run, ms });
    return this.#next;
  }
  clear(handle: unknown): void {
    this.armed.delete(handle as number);
  }
  /** Fires every armed timer once. */
  fire(): void {
    const due = [...this.armed.values()];
    this.armed.clear();
    for (const t of due) t.run();
  }
}
