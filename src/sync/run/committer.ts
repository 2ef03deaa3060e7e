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

/**
 * Commits a windowed run's pages one at a time, in the order they arrive, each with the whole checkpoint: the frontier
 * as it is after every earlier commit (the first incomplete window, the windows read ahead of it), the watermark the
 * plan allows, and the page's rejected records quarantined with their window, all in one transaction.
 */
export class OrderedCommitter {
  readonly #in: CommitterInput;
  #chain: Promise<unknown> = Promise.resolve();
  #broken: { error: unknown } | undefined;

  constructor(input: CommitterInput) {
    this.#in = input;
  }

  /** Queues the commit of `page` of `window` after every commit queued before it; settles when it is done. */
  commit(page: FetchedPage, window: WindowProgress): Promise<void> {
    const run = this.#chain.then(() => this.#commit(page, window));
    this.#chain = run.catch(() => {});
    return run;
  }

  /** Settles once every queued commit has. */
  drained(): Promise<unknown> {
    return this.#chain;
  }

  async #commit(page: FetchedPage, window: WindowProgress): Promise<void> {
    const { ctx, stream, frontier, plan, demand, windows, tally, signal } = this.#in;
    // Stopping (SIGTERM, or another window failed): the pages waiting for their turn are not committed, so a
    // shutdown waits for one commit at most; the next run fetches them again.
    if (signal.aborted) throw new Error('stopped before this page was committed', { cause: signal.reason });
    // A commit that failed had already counted its page in the frontier: no checkpoint computed after it may be
    // written (it could claim that page), whatever the database answers next.
    if (this.#broken) throw new Error('an earlier page of this run was not committed', { cause: this.#broken.error });
    const completed = frontier.page(window.index, page.next);
    if (completed.length) this.#in.queue.moved();
    const after = plan.checkpoint(frontier, completed, page);
    if (after.untrustedClocks) this.#warnUntrustedClocks(after.untrustedClocks);
    const checkpoint: SyncStateUpdate = { customerId: ctx.customerId, stateKey: this.#in.stateKey, ...toStore(after.state) };
    const begun = demand.begin();
    try {
      // Singer's rule: the checkpoint goes in the same transaction as the rows it covers, never before them.
      await windows.span(window).run(() => commitSpan(page, window, () => ctx.store.commitPage({
        customerId: ctx.customerId,
        sink: stream.sink,
        ...(stream.table && { table: stream.table }),
        records: page.records,
        at: toIsoUtc(ctx.clock.now()),
        checkpoint,
        runId: this.#in.runId,
        quarantine: { stream: stream.name, window: { from: toIsoUtc(window.from), to: toIsoUtc(window.to) }, records: page.rejected },
      })));
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
    if (page.next === null) windows.end(window, 'complete');
    tally.committed(page, checkpoint.watermark, page.next === null);
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
