/**
 * How long the background checkpointer (checkpointer.ts) waits between two checkpoints: 50 ms, or longer while the
 * WAL is written in bulk.
 *
 * Why: a checkpoint copies the latest version of every page written since the one before. A bulk sync commits pages
 * of thousands of readings that rewrite the same leaves of the readings' b-tree (one insertion point per floor space),
 * so checkpointing after each such commit copies those leaves once per commit; the WAL restarts only when the
 * writer's own checkpoint at its bound (wal_autocheckpoint) finds it fully copied, every few large commits. Checkpoints
 * farther apart copy each leaf once for several commits. The webhook receiver's commits are small (tens of pages) and
 * its latency is what the 50 ms were tuned for: the writer's own checkpoint at the bound then has at most 50 ms of
 * frames left to copy inside a commit. So the interval grows only while commits are large, doubling per checkpoint up
 * to a ceiling, and is back at the base as soon as a checkpoint finds small commits, or at the first commit after a
 * pause longer than the ceiling (the bulk is over: what commits next gets its checkpoint within the base interval).
 *
 * Pure: the caller passes the time (ms, any monotonic clock) and the checkpoints' results.
 */
export interface PacingOptions {
  /** The interval while commits are small or sparse. */
  baseMs: number;
  /** The longest interval in bulk. */
  maxMs: number;
  /** Frames per commit from which the WAL counts as written in bulk. */
  bulkFramesPerCommit: number;
}

export const DEFAULT_PACING: PacingOptions = { baseMs: 50, maxMs: 500, bulkFramesPerCommit: 500 };

export class CheckpointPacing {
  readonly #options: PacingOptions;
  #intervalMs: number;
  #lastCommitAt = -Infinity;
  /** Commits since the last checkpoint started, and those the running checkpoint's WAL state reflects. */
  #commits = 0;
  #covered = 0;
  /** WAL frames the previous checkpoint found, undefined before the first. */
  #lastWalFrames: number | undefined;
  /** The previous checkpoint could not tell large commits from a restart of the WAL. */
  #unsure = false;

  constructor(options: Partial<PacingOptions> = {}) {
    this.#options = { ...DEFAULT_PACING, ...options };
    this.#intervalMs = this.#options.baseMs;
  }

  /** The minimum time from the start of one checkpoint to the start of the next. */
  get intervalMs(): number {
    return this.#intervalMs;
  }

  /** A commit at `now`. Returns true when it ended a pause longer than the ceiling and so reset the interval. */
  commit(now: number): boolean {
    const sparse = now - this.#lastCommitAt > this.#options.maxMs;
    this.#lastCommitAt = now;
    this.#commits += 1;
    if (!sparse || this.#intervalMs === this.#options.baseMs) return false;
    this.#intervalMs = this.#options.baseMs;
    return true;
  }

  /** A checkpoint starts: it will copy what the commits counted so far wrote. */
  started(): void {
    this.#covered = this.#commits;
    this.#commits = 0;
  }

  /** The checkpoint finished and found `walFrames` frames in the WAL (-1: SQLite could not tell, nothing learnt). */
  finished(walFrames: number): void {
    if (walFrames < 0) return;
    const previous = this.#lastWalFrames;
    this.#lastWalFrames = walFrames;
    if (previous === undefined || this.#covered === 0) return;
    // Frames written since, at least: the growth, or after a restart what the WAL holds now. A restart can follow
    // any checkpoint that found the WAL fully copied (at the next write), not only the writer's own at the bound.
    const written = walFrames >= previous ? walFrames - previous : walFrames;
    const bulk = written / this.#covered >= this.#options.bulkFramesPerCommit;
    // Small, in bulk: the WAL may have restarted unseen in between, more than once at the longer intervals, so a
    // first small reading is not trusted; a second in a row is (a steady stream of small commits after a bulk).
    if (!bulk && this.#intervalMs > this.#options.baseMs && !this.#unsure) {
      this.#unsure = true;
      return;
    }
    this.#unsure = false;
    this.#intervalMs = bulk ? Math.min(this.#options.maxMs, this.#intervalMs * 2) : this.#options.baseMs;
  }
}
