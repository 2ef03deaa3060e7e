import { WakeList } from './condition.ts';

/**
 * The records a run holds in memory at once: pages requested and not yet committed, counted at the page size asked
 * for until the answer arrives, then at what it holds. A request waits while the pages in flight and waiting for
 * their commit would exceed `max`, so a large page size times many windows cannot hold more than `max` records (plus
 * what answers larger than asked bring) whatever the API's speed. One page always goes when nothing is held, so no
 * setting can stop a run.
 */
export class PendingRecords {
  readonly #max: number;
  readonly #signal: AbortSignal;
  readonly #wake = new WakeList();
  #held = 0;

  constructor(max: number, signal: AbortSignal) {
    this.#max = max;
    this.#signal = signal;
    signal.addEventListener('abort', () => this.#wake.wakeAll(), { once: true });
  }

  get held(): number {
    return this.#held;
  }

  /** Waits for room for `n` records and holds them; returns at once when the run stops (its requests fail then). */
  async take(n: number): Promise<void> {
    while (this.#held > 0 && this.#held + n > this.#max && !this.#signal.aborted) await this.#wake.wait();
    this.#held += n;
  }

  /** A page asked for `asked` records and its answer holds `holding` (paging styles may answer more or fewer). */
  answered(asked: number, holding: number): void {
    this.#held += holding - asked;
    if (holding < asked) this.#wake.wakeAll();
  }

  /** The `n` records of a page taken earlier are committed (or its request failed). */
  give(n: number): void {
    this.#held -= n;
    this.#wake.wakeAll();
  }
}
