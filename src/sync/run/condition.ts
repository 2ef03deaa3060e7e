/**
 * Readers that wait until something they need may have changed (room ahead, records given back). Each waiter checks its
 * own condition again after waking: a wake-up says only "look again", so several may wake for room only one can take.
 */
export class WakeList {
  #waiting: Array<() => void> = [];

  /** Resolves at the next `wakeAll()`. */
  wait(): Promise<void> {
    return new Promise<void>((resolve) => this.#waiting.push(resolve));
  }

  wakeAll(): void {
    for (const wake of this.#waiting.splice(0)) wake();
  }
}
