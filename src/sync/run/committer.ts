import type { Logger } from '../../logger.ts';
import type { SyncStateUpdate } from '../../store/types.ts';
import { isoUtcOrNull, toIsoUtc } from '../../time.ts';
import type { FetchedPage } from '../fetch.ts';
import type { AnyStream } from '../stream.ts';
import type { Frontier } from './frontier.ts';
import { commitSpan, type Tally } from './parts.ts';
import { toStore, type RunPlan } from './plan.ts';
import type { StreamRunContext, WindowProgress } from './types.ts';
import type { WindowDemand } from './window-demand.ts';
import type { WindowParts } from './window-parts.ts';
import type { WindowQueue } from './window-queue.ts';

/**
 * How a windowed run ends badly: the first failure (a request, a page contract, a commit) is the run's, and any
 * failure stops every reader. SIGTERM stops the run without a failure of its own.
 */
export class RunFailure {
  readonly #stop: AbortController;
  #first: { error: unknown } | undefined;

  constructor(stop: AbortController) {
    this.#stop = stop;
  }

  /** The run's failure, when it failed. */
  get first(): { error: unknown } | undefined {
    return this.#first;
  }

  /** Records `error` unless an earlier failure is the run's already, and stops the readers. */
  fail(error: unknown): void {
    this.#first ??= { error };
    this.#stop.abort();
  }

  /** Stops the readers without a failure (the run was told to stop). */
  stop(): void {
    this.#stop.abort();
  }
}

export interface CommitterInput {
  ctx: StreamRunContext;
  stream: AnyStream;
  stateKey: string;
  runId: number;
  plan: RunPlan;
  frontier: Frontier;
  queue: WindowQueue;
  demand: WindowDemand;
  windows: WindowParts;
  tally: Tally;
  failure: RunFailure;
  /** The run's signal: SIGTERM, or a failure that stopped it. */
  signal: AbortSignal;
  log: Logger;
  /** Windows read at once when the store waits for the network (for the message that says they opened). */
  concurrency: number;
}

/** The most pages one commit takes: a shutdown waits for one commit at most, and its transaction stays short. */
export const MAX_PAGES_PER_COMMIT = 8;

interface Waiting {
  page: FetchedPage;
  window: WindowProgress;
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * Commits a windowed run's pages in the order they arrive, each with the whole checkpoint: the frontier as it is after
 * every earlier page (the first incomplete window, the windows read ahead of it), the watermark the plan allows, and
 * the page's rejected records quarantined with their window. The pages that arrived while a commit ran go together in
 * the next one, one transaction (at most MAX_PAGES_PER_COMMIT): against a store slower than the API that is a commit
 * for several pages, and against a slower API a commit per page, as soon as it arrives (docs/sync.md, "Window
 * semantics").
 */
export class OrderedCommitter {
  readonly #in: CommitterInput;
  #waiting: Waiting[] = [];
  #running = false;
  #done: Promise<void> = Promise.resolve();
  #broken: { error: unknown } | undefined;

  constructor(input: CommitterInput) {
    this.#in = input;
  }

  /** Queues the commit of `page` of `window` after every commit queued before it; settles when it is done. */
  commit(page: FetchedPage, window: WindowProgress): Promise<void> {
    const done = new Promise<void>((resolve, reject) => this.#waiting.push({ page, window, resolve, reject }));
    if (!this.#running) {
      this.#running = true;
      this.#done = this.#drain();
    }
    return done;
  }

  /** Settles once every queued commit has. */
  drained(): Promise<unknown> {
    return this.#done;
  }

  async #drain(): Promise<void> {
    try {
      // No await between the last look at the queue and #running = false: a page queued meanwhile is taken here or
      // starts the next drain.
      while (this.#waiting.length > 0) {
        const batch = this.#waiting.splice(0, MAX_PAGES_PER_COMMIT);
        try {
          await this.#commit(batch);
          for (const w of batch) w.resolve();
        } catch (error) {
          for (const w of batch) w.reject(error);
        }
      }
    } finally {
      this.#running = false;
    }
  }

  async #commit(batch: readonly Waiting[]): Promise<void> {
    const { ctx, stream, frontier, plan, demand, windows, tally, signal } = this.#in;
    // Stopping (SIGTERM, or another window failed): the pages waiting for their turn are not committed, so a
    // shutdown waits for one commit at most; the next run fetches them again.
    if (signal.aborted) throw new Error('stopped before this page was committed', { cause: signal.reason });
    // A commit that failed had already counted its pages in the frontier: no checkpoint computed after it may be
    // written (it could claim those pages), whatever the database answers next.
    if (this.#broken) throw new Error('an earlier page of this run was not committed', { cause: this.#broken.error });
    const at = toIsoUtc(ctx.clock.now());
    const pages = batch.map(({ page, window }) => {
      const completed = frontier.page(window.index, page.next);
      if (completed.length) this.#in.queue.moved();
      const after = plan.checkpoint(frontier, completed, page);
      if (after.untrustedClocks) this.#warnUntrustedClocks(after.untrustedClocks);
      const checkpoint: SyncStateUpdate = { customerId: ctx.customerId, stateKey: this.#in.stateKey, ...toStore(after.state) };
      return { page, window, checkpoint };
    });
    const begun = demand.begin();
    try {
      // Singer's rule: the checkpoint goes in the same transaction as the rows it covers, never before them. Each page
      // has its span in its window's; the transaction is theirs together.
      let shared: Promise<void> | undefined;
      const commitAll = () =>
        (shared ??= ctx.store.commitPages(
          pages.map(({ page, window, checkpoint }) => ({
            customerId: ctx.customerId,
            sink: stream.sink,
            ...(stream.table && { table: stream.table }),
            records: page.records,
            at,
            checkpoint,
            runId: this.#in.runId,
            quarantine: { stream: stream.name, window: { from: toIsoUtc(window.from), to: toIsoUtc(window.to) }, records: page.rejected },
          })),
        ));
      await Promise.all(pages.map(({ page, window }) => windows.span(window).run(() => commitSpan(page, window, commitAll))));
    } catch (error) {
      this.#broken = { error };
      // A commit cancelled by SIGTERM leaves the run interrupted; any other failure fails it.
      if (ctx.signal?.aborted) this.#in.failure.stop();
      else this.#in.failure.fail(error);
      throw error;
    }
    const opened = demand.end(begun);
    if (opened && this.#in.concurrency > 1) {
      this.#in.log.debug({ waitedMs: Math.round(begun.waitedMs), commitMs: Math.round(opened.tookMs), windows: this.#in.concurrency }, 'the store waited for the API: reading windows in parallel');
    }
    for (const { page, window, checkpoint } of pages) {
      if (page.next === null) windows.end(window, 'complete');
      tally.committed(page, checkpoint.watermark, page.next === null);
    }
    tally.emit(plan.windowsTotal, plan.windowsDone + tally.windows);
  }

  #warnUntrustedClocks(clocks: { platformTime: number; localTime: number; newest: number | undefined }): void {
    const maxClockSkewMs = this.#in.ctx.settings.maxClockSkewMs;
    this.#in.log.warn(
      { platformTime: isoUtcOrNull(clocks.platformTime), localTime: isoUtcOrNull(clocks.localTime), maxClockSkewMs, newestRecord: isoUtcOrNull(clocks.newest ?? null) },
      `the platform's Date header is ${Math.round(Math.abs(clocks.platformTime - clocks.localTime) / 1000)} s away from the local clock, ` +
        'more than SYNC_MAX_CLOCK_SKEW: neither clock moves the watermark, only the newest record read does (check both clocks; keep NTP on here)',
    );
  }
}
