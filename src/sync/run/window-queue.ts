import { WakeList } from './condition.ts';
import type { Frontier } from './frontier.ts';
import type { WindowProgress } from './types.ts';

/**
 * The windows of a run not read yet, handed to its readers in order. A reader that would start a window more than
 * `maxAhead` windows after the frontier's head (the first incomplete window) waits until the head moves: the windows
 * read ahead are kept in every checkpoint until the head completes, so a slow window must not let the others run
 * unboundedly far ahead of it.
 */
export class WindowQueue {
  readonly #queue: WindowProgress[];
  readonly #frontier: Frontier;
  readonly #maxAhead: number;
  readonly #signal: AbortSignal;
  readonly #wake = new WakeList();

  constructor(frontier: Frontier, maxAhead: number, signal: AbortSignal) {
    this.#frontier = frontier;
    this.#queue = frontier.windows.filter((w) => !w.done);
    this.#maxAhead = maxAhead;
    this.#signal = signal;
    signal.addEventListener('abort', () => this.moved(), { once: true });
  }

  /** The next window to read; undefined when none is left or the run stops. */
  async take(): Promise<WindowProgress | undefined> {
    while (this.#queue.length && !this.#signal.aborted && this.#queue[0]!.index - (this.#frontier.head?.index ?? 0) > this.#maxAhead) {
      await this.#wake.wait();
    }
    return this.#signal.aborted ? undefined : this.#queue.shift();
  }

  /** The frontier's head moved (or the run stops): readers waiting for room ahead look again. */
  moved(): void {
    this.#wake.wakeAll();
  }
}
