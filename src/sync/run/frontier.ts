import type { SyncWindow, WindowProgress } from './types.ts';

export type { WindowProgress } from './types.ts';

/**
 * Windows may be read at the same time and complete in any order, but what is stored as complete (an incremental
 * stream's watermark, a backfill's progress) moves only over the run of completed windows from the first: Airbyte's
 * concurrent cursor, Estuary's per-range state. Pure: the runner reports each committed page, and asks what the
 * checkpoint is.
 */
export class Frontier {
  readonly #windows: WindowProgress[];
  #head = 0;

  /** `done`: windows a stopped run had completed after its first incomplete one (the stored state's `windows`). */
  constructor(windows: ReadonlyArray<SyncWindow & { done?: boolean }>) {
    this.#windows = windows.map((w, index) => ({ index, from: w.from, to: w.to, cursor: w.cursor, done: w.done === true }));
    while (this.#head < this.#windows.length && this.#windows[this.#head]!.done) this.#head++;
  }

  get windows(): ReadonlyArray<WindowProgress> {
    return this.#windows;
  }

  /**
   * A page of window `index` committed; `next` is the checkpoint of its next page, null when the window is complete.
   * Returns the windows that this made part of the completed run from the first (in order; often none).
   */
  page(index: number, next: string | null): WindowProgress[] {
    const window = this.#windows[index];
    if (!window || window.done) throw new RangeError(`window ${index} is not being read`);
    window.cursor = next;
    if (next !== null) return [];
    window.done = true;
    const completed: WindowProgress[] = [];
    while (this.#head < this.#windows.length && this.#windows[this.#head]!.done) completed.push(this.#windows[this.#head++]!);
    return completed;
  }

  /** The first window not complete (undefined when every window is). */
  get head(): WindowProgress | undefined {
    return this.#windows[this.#head];
  }

  /** The windows after the head that have progress to keep: started (a cursor) or complete. */
  get beyondHead(): WindowProgress[] {
    return this.#windows.slice(this.#head + 1).filter((w) => w.done || w.cursor !== null);
  }
}
