import { ConfigError, ContractViolation } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import type { SyncState } from '../../store/types.ts';
import { isoUtcOrNull, toIsoUtc } from '../../time.ts';
import type { FetchedPage } from '../fetch.ts';
import { DEFAULT_WINDOW, type AnyStream, type WindowSpec } from '../stream.ts';
import { MAX_PAGES_PER_COMMIT, OrderedCommitter, RunFailure } from './committer.ts';
import { Frontier } from './frontier.ts';
import { Tally } from './parts.ts';
import { PendingRecords } from './pending-records.ts';
import { runPipeline } from './pipeline.ts';
import { fromStore, planRun, stepOffGrid, type RunPlan } from './plan.ts';
import { rewind } from './rewind.ts';
import type { RunIdentity, RunRequest, RunResult, StreamRunContext } from './types.ts';
import { WindowDemand } from './window-demand.ts';
import { windowParts, type PageJob, type WindowParts } from './window-parts.ts';
import { WindowQueue } from './window-queue.ts';

export interface WindowedRunInput {
  ctx: StreamRunContext;
  stream: AnyStream;
  request: RunRequest;
  run: RunIdentity;
  /** The state stored under the run's key, as read before the run. */
  stored: SyncState | undefined;
  runId: number;
  log: Logger;
  /** A fan-out stream's partition: the parent key this run reads (its state is under `run.stateKey`). */
  parent?: string;
}

/** A run with windows to read: its plan and how its windows are cut. */
interface Planned {
  plan: RunPlan;
  spec: WindowSpec;
  stepMs: number;
  note: string | undefined;
}

/**
 * Reads an incremental stream's windows (or a backfill's) and keeps the state exact: each page commits with its
 * checkpoint (plan.ts decides what it holds, committer.ts writes it in order); the watermark (a backfill's progress)
 * moves only over the completed windows from the first. Up to `windowConcurrency` windows are read at once, each page
 * by page in order, once the store has waited for the network (window-demand.ts). Returns what it committed and how
 * it ended; it does not throw.
 */
export async function runWindowed(input: WindowedRunInput): Promise<RunResult> {
  const tally = new Tally(input.ctx, input.run, input.stored?.watermark ?? null, input.stream.sink);
  let note: string | undefined;
  try {
    const planned = plan(input);
    note = planned.note;
    if (planned.plan.windows.length === 0) {
      tally.emit(planned.plan.windowsTotal, planned.plan.windowsDone);
      return tally.result('succeeded', { note });
    }
    return await readWindows(input, planned, tally);
  } catch (error) {
    return tally.result('failed', { note, error });
  }
}

/** The run's plan, said in the log when it resumes, restarts or has nothing to read. */
function plan(input: WindowedRunInput): Planned {
  const { ctx, stream, log } = input;
  const spec = stream.window ?? DEFAULT_WINDOW;
  const stepMs = spec.stepMs ?? ctx.settings.stepMs;
  const offGrid = stepOffGrid(stepMs, spec.gridMs);
  if (offGrid) throw new ConfigError(`stream ${stream.name}: ${offGrid.detail}. Fix: ${offGrid.fix}`);
  const plan = planRun({ request: input.request, state: fromStore(input.stored), now: ctx.clock.now(), settings: { ...ctx.settings, stepMs, gridMs: spec.gridMs } });
  let note: string | undefined;
  if (plan.restarted) {
    const previous = [isoUtcOrNull(plan.restarted.from), isoUtcOrNull(plan.restarted.to)];
    log.info({ previous }, 'starting the backfill over (--restart): the stored progress is dropped');
  } else if (plan.resumed) {
    const windowStart = toIsoUtc(plan.resumed.windowStart);
    note = `resumed at ${windowStart}${plan.resumed.mid ? ' (mid-window, at its last committed page)' : ''}: ${plan.windowsDone} of ${plan.windowsTotal} windows were done`;
    log.info({ windowStart, windowsDone: plan.windowsDone, windowsTotal: plan.windowsTotal }, `backfill ${note}`);
  }
  if (plan.windows.length === 0) {
    note = plan.reason;
    if (plan.reason === 'clock-behind') {
      log.warn({ watermark: input.stored?.watermark, limit: isoUtcOrNull(plan.limit) }, 'the clock is behind the watermark (clock moved backwards?): nothing to read until it catches up');
    }
  }
  return { plan, spec, stepMs, note };
}

/** Wires the run's parts, reads every window and commits its pages; on evidence of wrong bounds, rewinds the state. */
async function readWindows(input: WindowedRunInput, planned: Planned, tally: Tally): Promise<RunResult> {
  const { ctx, stream, log } = input;
  const { plan, note } = planned;
  const frontier = new Frontier(plan.windows);
  const windows = windowParts(ctx, stream, planned.spec, input.parent);
  const stop = new AbortController();
  const signal = ctx.signal ? AbortSignal.any([ctx.signal, stop.signal]) : stop.signal;
  const unread = frontier.windows.filter((w) => !w.done).length;
  const concurrency = Math.max(1, Math.min(ctx.settings.windowConcurrency ?? 1, unread));
  // Windows read ahead of the first incomplete one are kept in the checkpoint until it completes: a slow window must
  // not let the others run unboundedly far ahead of it.
  const queue = new WindowQueue(frontier, 4 * concurrency, signal);
  // Pages in flight and waiting for their commit: without a bound, large pages times many windows hold whatever the
  // API answers faster than the store commits.
  const pending = new PendingRecords(ctx.settings.maxPendingRecords ?? Number.POSITIVE_INFINITY, signal);
  // A monotonic clock for how long the store waited, not the clock of the data (window-demand.ts).
  const demand = new WindowDemand(() => performance.now());
  const failure = new RunFailure(stop);
  const committer = new OrderedCommitter({ ctx, stream, stateKey: input.run.stateKey, runId: input.runId, plan, frontier, queue, demand, windows, tally, failure, signal, log, concurrency });
  const reader = readerOf({ queue, pending, demand, windows, committer, failure, signal });
  tally.emit(plan.windowsTotal, plan.windowsDone);
  await Promise.all(Array.from({ length: concurrency }, (_, i) => reader(i === 0)));
  await committer.drained();
  windows.endAll(failure.first ? 'failed' : 'interrupted', failure.first?.error);
  if (failure.first) {
    const error = failure.first.error;
    if (error instanceof ContractViolation && error.outside) {
      await rewind({ ctx, stateKey: input.run.stateKey, request: input.request, plan, violation: error, log, grid: { stepMs: planned.stepMs, gridMs: planned.spec.gridMs } });
    }
    return tally.result('failed', { note, error });
  }
  return tally.result(ctx.signal?.aborted && frontier.head ? 'interrupted' : 'succeeded', { note });
}

/**
 * One reader of the run's windows: it takes a window from the queue and reads it page by page (each page fetched
 * while the one before commits), then the next window nobody reads yet, within the pending-records bound.
 */
function readerOf(parts: {
  queue: WindowQueue;
  pending: PendingRecords;
  demand: WindowDemand;
  windows: WindowParts;
  committer: OrderedCommitter;
  failure: RunFailure;
  signal: AbortSignal;
}): (lead: boolean) => Promise<void> {
  const { queue, pending, demand, windows, committer, failure, signal } = parts;
  const take = async (): Promise<PageJob | undefined> => {
    const window = await queue.take();
    return window && { window, cursor: window.cursor };
  };
  const fetch = async (job: PageJob, fetchSignal: AbortSignal): Promise<FetchedPage> => {
    await pending.take(windows.pageSize);
    let page: FetchedPage;
    try {
      page = await windows.span(job.window).run(() => windows.fetch(job, fetchSignal));
    } catch (error) {
      pending.give(windows.pageSize);
      throw error;
    }
    pending.answered(windows.pageSize, page.nodes);
    return page;
  };
  // The next page of this window, or the first page of the next window nobody reads yet: fetched while this page
  // commits. Pages that wait for their commit (within the pending-records bound) go together in the next one.
  const next = (page: FetchedPage, job: PageJob) => (page.next !== null ? { window: job.window, cursor: page.next } : take());
  const commit = (page: FetchedPage, job: PageJob) => committer.commit(page, job.window).finally(() => pending.give(page.nodes));
  // The other readers start once a commit found the store waiting for the network (window-demand.ts). That commit
  // also proved an answer valid: a request the platform refuses (a wrong document, a page size too large) fails once,
  // not once per window in flight.
  return async (lead) => {
    if (!lead) {
      const stopped = signal.aborted ? Promise.resolve() : new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      await Promise.race([demand.widened(), stopped]);
    }
    const first = await take();
    try {
      if (first) await runPipeline<PageJob, FetchedPage>(first, { fetch, next, commit }, signal, MAX_PAGES_PER_COMMIT);
    } catch (error) {
      failure.fail(error);
    } finally {
      // The first reader is done (no window left, or the run stops): the others have nothing to wait for.
      if (lead) demand.release();
    }
  };
}
