import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../../logger.ts';
import { CheckpointPacing, type PacingOptions } from './checkpoint-pacing.ts';

/**
 * Background WAL checkpoints for a SQLite file, on a worker thread with its own connection.
 *
 * Why: in WAL mode every commit appends pages to the WAL, and the automatic checkpoint that copies them back into
 * the database (and fsyncs it) runs inside whichever COMMIT crosses the threshold, on the main thread. In the webhook
 * receiver that was one commit in eight taking ~15 ms, three quarters of all commit time (docs/performance.md).
 * A PASSIVE checkpoint never blocks the writer and the writer never waits for it, so it can run beside the event
 * loop. When one finishes with every frame copied, SQLite restarts the WAL at the next write on its own.
 *
 * At most one checkpoint per interval: 50 ms, longer while commits are large (checkpoint-pacing.ts), so a bulk sync
 * does not copy the same leaves after every page. The main connection keeps a high `wal_autocheckpoint` as the bound:
 * under back-to-back commits, or if the worker falls behind, stalls or cannot start, the writer checkpoints itself
 * once the WAL reaches it, as SQLite always does, so the WAL does not outgrow it by more than a commit. Nothing
 * depends on the worker for correctness or durability (a checkpoint only moves committed pages from the WAL into the
 * main file).
 */

/** Plain CommonJS run with `eval`, so the worker needs no TypeScript loader in any host (tsx, vitest, plain node). */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma('busy_timeout = 1000');
db.pragma('synchronous = NORMAL');
parentPort.on('message', (message) => {
  if (message === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    const [result] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ ok: true, walFrames: result.log, checkpointed: result.checkpointed });
  } catch (error) {
    parentPort.postMessage({ ok: false, error: String(error && error.message || error) });
  }
});
`;

export interface CheckpointerOptions {
  path: string;
  logger: Logger;
  /**
   * Minimum time between two checkpoints, so a burst of commits is copied once (pages rewritten by each commit); it
   * grows while commits are large (checkpoint-pacing.ts).
   */
  minIntervalMs?: number;
  /** The rest of the pacing: its longest interval, what counts as a large commit. */
  pacing?: Partial<Omit<PacingOptions, 'baseMs'>>;
  /**
   * Commits before the first checkpoint (default 0). The worker (an isolate, the driver and a connection) costs more
   * CPU than a short process saves with it: a cron run of a few commits leaves its small WAL to the checkpoint SQLite
   * makes when the last connection closes.
   */
  firstAfterCommits?: number;
}

export interface CheckpointResult {
  walFrames: number;
  checkpointed: number;
}

export class WalCheckpointer {
  readonly #options: Required<Omit<CheckpointerOptions, 'pacing'>>;
  readonly #pacing: CheckpointPacing;
  #timerAt = Infinity;
  #worker: Worker | undefined;
  #exited: Promise<void> = Promise.resolve();
  #failed = false;
  #running = false;
  #wanted = false;
  #timer: NodeJS.Timeout | undefined;
  #lastStarted = -Infinity;
  #commits = 0;
  #closing: Promise<void> | undefined;
  #waiters: Array<(result: CheckpointResult | undefined) => void> = [];
  /** Checkpoints completed, for tests and metrics. */
  completed = 0;

  constructor(options: CheckpointerOptions) {
    const { pacing, ...rest } = options;
    this.#options = { minIntervalMs: 50, firstAfterCommits: 0, ...rest };
    this.#pacing = new CheckpointPacing({ ...pacing, baseMs: this.#options.minIntervalMs });
  }

  /** Called after every commit: asks for a checkpoint soon, at most one at a time and one per interval. */
  nudge(): void {
    if (this.#failed || this.#closing) return;
    if (this.#commits < this.#options.firstAfterCommits) {
      this.#commits += 1;
      return;
    }
    this.#wanted = true;
    this.#pacing.commit(performance.now());
    this.#schedule();
  }

  /** Starts the wanted checkpoint now or sets the timer for it, at most one running and one per interval. */
  #schedule(): void {
    if (this.#running || this.#failed || this.#closing) return;
    const now = performance.now();
    const at = this.#lastStarted + this.#pacing.intervalMs;
    // A timer set in bulk is brought forward when the interval fell back to the base.
    if (this.#timer) {
      if (at >= this.#timerAt) return;
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (at > now) {
      this.#timerAt = at;
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.#timerAt = Infinity;
        this.#start();
      }, at - now);
      this.#timer.unref();
      return;
    }
    this.#start();
  }

  /** Resolves after the next checkpoint (undefined when the worker is unavailable). For tests and shutdown. */
  settled(): Promise<CheckpointResult | undefined> {
    if (this.#failed || this.#closing || (!this.#running && !this.#wanted)) return Promise.resolve(undefined);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  #start(): void {
    if (!this.#wanted || this.#running || this.#failed || this.#closing) return;
    const worker = this.#worker ?? this.#spawn();
    if (!worker) return;
    this.#wanted = false;
    this.#running = true;
    this.#lastStarted = performance.now();
    this.#pacing.started();
    worker.postMessage('checkpoint');
  }

  #spawn(): Worker | undefined {
    try {
      const driver = createRequire(import.meta.url).resolve('better-sqlite3');
      const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path: this.#options.path, driver } });
      // Never keeps the process alive: a daemon exits on SIGTERM, a one-shot command when its work is done.
      worker.unref();
      worker.on('message', (message: { ok: boolean; walFrames?: number; checkpointed?: number; error?: string }) => {
        this.#running = false;
        if (!message.ok) {
          this.#fail(new Error(message.error));
          return;
        }
        this.completed += 1;
        this.#pacing.finished(message.walFrames!);
        const result = { walFrames: message.walFrames!, checkpointed: message.checkpointed! };
        for (const resolve of this.#waiters.splice(0)) resolve(result);
        if (this.#wanted) this.#schedule();
      });
      worker.on('error', (error) => this.#fail(error));
      this.#exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      void this.#exited.then(() => {
        this.#worker = undefined;
        if (!this.#closing) this.#fail(new Error('checkpoint worker exited'));
      });
      this.#worker = worker;
      return worker;
    } catch (error) {
      this.#fail(error);
      return undefined;
    }
  }

  #fail(error: unknown): void {
    if (this.#failed) return;
    this.#failed = true;
    this.#running = false;
    // Its connection is closed by the worker itself, so the writer's close can still remove the WAL.
    this.#worker?.postMessage('close');
    this.#options.logger.warn(
      { err: error },
      'background WAL checkpoints unavailable; SQLite checkpoints on the writer instead (slower commits, same data)',
    );
    for (const resolve of this.#waiters.splice(0)) resolve(undefined);
  }

  /** Stops the worker after its current checkpoint and closes its connection, so the writer's close can remove the WAL. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      if (this.#timer) clearTimeout(this.#timer);
      this.#timer = undefined;
      const worker = this.#worker;
      for (const resolve of this.#waiters.splice(0)) resolve(undefined);
      if (!worker) return this.#exited;
      // Unreferenced while it works; held now so a process that is only waiting for this close does not exit first.
      worker.ref();
      worker.postMessage('close');
      // A checkpoint copies at most the WAL's bound (wal_autocheckpoint pages): it ends well within this.
      const timeout = setTimeout(() => void worker.terminate(), 5000);
      timeout.unref();
      await this.#exited;
      clearTimeout(timeout);
    })();
    return this.#closing;
  }
}
