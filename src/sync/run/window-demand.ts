/**
 * When a run reads its windows in parallel. More windows at once pay only while the store waits for the network: one
 * window already fetches its next page while a page commits, so against an API that answers faster than the store
 * commits, more windows add pages held in memory (and the collector's work on them) and nothing else. A run therefore
 * reads one window until a commit finds that the store waited for its page more than twice as long as the commit
 * took; from then on, up to SYNC_WINDOW_CONCURRENCY windows (an API a real network away does so at its first commit).
 *
 * `now` is a monotonic clock in milliseconds (performance.now), not the clock of the data.
 */
export class WindowDemand {
  readonly #now: () => number;
  #idleSince: number;
  #wide = false;
  #widen!: () => void;
  readonly #widened = new Promise<void>((resolve) => (this.#widen = resolve));

  constructor(now: () => number) {
    this.#now = now;
    this.#idleSince = now();
  }

  /** Whether the store has waited for the network (windows beyond the first may be read). */
  get wide(): boolean {
    return this.#wide;
  }

  /** Resolves when windows beyond the first may be read: the store waited for the network, or release(). */
  widened(): Promise<void> {
    return this.#widened;
  }

  /** A commit begins: the store waited for its page since the last commit ended (or since the run started). */
  begin(): { waitedMs: number; at: number } {
    const at = this.#now();
    return { waitedMs: at - this.#idleSince, at };
  }

  /** The commit `begun` ended. Returns how long it took when it is the one that opened the windows, else undefined. */
  end(begun: { waitedMs: number; at: number }): { tookMs: number } | undefined {
    const at = this.#now();
    this.#idleSince = at;
    const tookMs = at - begun.at;
    if (this.#wide || begun.waitedMs <= 2 * tookMs) return undefined;
    this.release();
    return { tookMs };
  }

  /** Lets every reader go: the store waited for the network, or the first reader has no more windows to read. */
  release(): void {
    this.#wide = true;
    this.#widen();
  }
}
