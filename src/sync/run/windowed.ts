import { ConfigError, ContractViolation } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { SyncState, SyncStateUpdate } from '../store/types.ts';
import { isoUtcOrNull, toIsoUtc } from '../time.ts';
import { PageContract } from './contract.ts';
import { PendingRecords } from './pending-records.ts';
import { fetchPage, type FetchedPage } from './fetch.ts';
import { Frontier, type WindowProgress } from './frontier.ts';
import { effectivePageSize } from './paging/index.ts';
import { runPipeline } from './pipeline.ts';
import { apiPathOf } from './records.ts';
import { planRun, rewindOnEvidence, toStore, type RunPlan } from './run-plan.ts';
import { streamSettingsOf } from './settings.ts';
import { DEFAULT_WINDOW, type AnyStream } from './stream.ts';
import type { RunRequest, StreamOutcome, StreamRunContext } from './stream-run.ts';
import { commitSpan, counted, emit, limitsOf, validatorOf } from './run-parts.ts';
import { sinkKey } from '../store/sinks.ts';
import { tracer, type SpanHandle } from '../tracing.ts';
import { WindowDemand } from './window-demand.ts';
import { WindowQueue } from './window-queue.ts';
import { stepOffGrid } from './windows.ts';

/**
 * Reads an incremental stream's windows (or a backfill's) and keeps the state exact: each page commits with its
 * checkpoint (run-plan.ts decides what it holds); the watermark (a backfill's progress) moves only over the completed
 * windows from the first. Up to `windowConcurrency` windows are read at once, each page by page in order, once the
 * store has waited for the network (window-demand.ts).
 */
export async function runWindowed(
  ctx: StreamRunContext,
  stream: AnyStream,
  request: RunRequest,
  stateKey: string,
  state: SyncState | undefined,
  runId: number,
  outcome: StreamOutcome,
  log: Logger,
): Promise<'done' | 'interrupted'> {
  const spec = stream.window ?? DEFAULT_WINDOW;
  const stepMs = spec.stepMs ?? ctx.settings.stepMs;
  const offGrid = stepOffGrid(stepMs, spec.gridMs);
  if (offGrid) throw new ConfigError(`stream ${stream.name}: ${offGrid.detail}. Fix: ${offGrid.fix}`);
  const plan = planRun({ request, state, now: ctx.clock.now(), settings: { ...ctx.settings, stepMs, gridMs: spec.gridMs } });
  if (plan.restarted) {
    log.info({ previous: [plan.restarted.rangeStart, plan.restarted.rangeEnd] }, 'starting the backfill over (--restart): the stored progress is dropped');
  } else if (plan.resumed) {
    outcome.note = `resumed at ${toIsoUtc(plan.resumed.windowStart)}${plan.resumed.mid ? ' (mid-window, at its last committed page)' : ''}: ${plan.windowsDone} of ${plan.windowsTotal} windows were done`;
    log.info({ windowStart: toIsoUtc(plan.resumed.windowStart), windowsDone: plan.windowsDone, windowsTotal: plan.windowsTotal }, `backfill ${outcome.note}`);
  }
  if (plan.windows.length === 0) {
    outcome.note = plan.reason;
    if (plan.reason === 'clock-behind') {
      log.warn({ watermark: state?.watermark, limit: isoUtcOrNull(plan.limit) }, 'the clock is behind the watermark (clock moved backwards?): nothing to read until it catches up');
    }
    emit(ctx, outcome, plan.windowsTotal, plan.windowsDone);
    return 'done';
  }

  const frontier = new Frontier(plan.windows);
  const windowed = windowParts(ctx, stream, spec);
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
  const demand = new WindowDemand(() => performance.now());
  const base = { customerId: ctx.customerId, stream: stateKey, ...plan.range };
  type Job = { window: WindowProgress; cursor: string | null };
  const take = async (): Promise<Job | undefined> => {
    const window = await queue.take();
    return window && { window, cursor: window.cursor };
  };

  // Commits are taken one at a time, in the order pages arrive: each checkpoint is computed from the frontier as
  // it is after every earlier commit.
  let commits: Promise<unknown> = Promise.resolve();
  let broken: { error: unknown } | undefined;
  let failure: { error: unknown } | undefined;
  const commit = (page: FetchedPage, job: Job) => {
    const run = commits.then(async () => {
      // Stopping (SIGTERM, or another window failed): the pages waiting for their turn are not committed, so a
      // shutdown waits for one commit at most; the next run fetches them again.
      if (signal.aborted) throw new Error('stopped before this page was committed', { cause: signal.reason });
      // A commit that failed had already counted its page in the frontier: no checkpoint computed after it may be
      // written (it could claim that page), whatever the database answers next.
      if (broken) throw new Error('an earlier page of this run was not committed', { cause: broken.error });
      const completed = frontier.page(job.window.index, page.next);
      if (completed.length) queue.moved();
      const after = plan.checkpoint(frontier, completed, page);
      if (after.untrustedClocks) warnUntrustedClocks(log, after.untrustedClocks, ctx.settings.maxClockSkewMs);
      const beyond = frontier.beyondHead.map((w) => ({ from: w.from, to: w.to, cursor: w.cursor, done: w.done }));
      const checkpoint: SyncStateUpdate = { ...base, ...toStore({ ...after.state, beyond }) };
      const begun = demand.begin();
      try {
        // Singer's rule: the checkpoint goes in the same transaction as the rows it covers, never before them.
        await windowed.span(job.window).run(() => commitSpan(page, job.window, () => ctx.store.commitPage({
          customerId: ctx.customerId,
          sink: stream.sink,
          records: page.records,
          at: toIsoUtc(ctx.clock.now()),
          checkpoint,
          runId,
          quarantine: { stream: stream.name, window: { from: toIsoUtc(job.window.from), to: toIsoUtc(job.window.to) }, records: page.rejected },
        })));
      } catch (error) {
        broken = { error };
        // A commit cancelled by SIGTERM leaves the run interrupted; any other failure fails it.
        if (!ctx.signal?.aborted && !failure) failure = { error };
        stop.abort();
        throw error;
      }
      const opened = demand.end(begun);
      if (opened && concurrency > 1) {
        log.debug({ waitedMs: Math.round(begun.waitedMs), commitMs: Math.round(opened.tookMs), windows: concurrency }, 'the store waited for the API: reading windows in parallel');
      }
      if (page.next === null) windowed.end(job.window, 'complete');
      outcome.watermark = checkpoint.watermark;
      counted(outcome, page);
      if (page.next === null) outcome.windows += 1;
      emit(ctx, outcome, plan.windowsTotal, plan.windowsDone + outcome.windows);
    });
    commits = run.catch(() => {});
    return run.finally(() => pending.give(page.nodes));
  };

  const fetch = async (job: Job, fetchSignal: AbortSignal): Promise<FetchedPage> => {
    await pending.take(windowed.pageSize);
    let page: FetchedPage;
    try {
      page = await windowed.span(job.window).run(() => windowed.fetch(job, fetchSignal));
    } catch (error) {
      pending.give(windowed.pageSize);
      throw error;
    }
    pending.answered(windowed.pageSize, page.nodes);
    return page;
  };
  // The next page of this window, or the first page of the next window nobody reads yet: fetched while this page
  // commits.
  const next = (page: FetchedPage, job: Job) => (page.next !== null ? { window: job.window, cursor: page.next } : take());
  // The other readers start once a commit found the store waiting for the network (window-demand.ts). That commit
  // also proved an answer valid: a request the platform refuses (a wrong document, a page size too large) fails once,
  // not once per window in flight.
  const worker = async (lead: boolean): Promise<void> => {
    if (!lead) {
      const stopped = signal.aborted ? Promise.resolve() : new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      await Promise.race([demand.widened(), stopped]);
    }
    const first = await take();
    try {
      if (first) await runPipeline<Job, FetchedPage>(first, { fetch, next, commit }, signal);
    } catch (error) {
      if (!failure) failure = { error };
      stop.abort();
    } finally {
      // The first reader is done (no window left, or the run stops): the others have nothing to wait for.
      if (lead) demand.release();
    }
  };
  emit(ctx, outcome, plan.windowsTotal, plan.windowsDone);
  await Promise.all(Array.from({ length: concurrency }, (_, i) => worker(i === 0)));
  await commits;
  windowed.endAll(failure ? 'failed' : 'interrupted', failure?.error);
  if (failure) {
    if (failure.error instanceof ContractViolation && failure.error.outside) {
      await rewind(ctx, stateKey, request, plan, failure.error, log, { stepMs, gridMs: spec.gridMs });
    }
    throw failure.error;
  }
  return ctx.signal?.aborted && frontier.head ? 'interrupted' : 'done';
}

/**
 * What each window of a run has of its own while it is read: its page contract (built at its first page, dropped
 * when it completes) and its span, from its first request to its last commit (the requests and commits are its
 * children).
 */
function windowParts(ctx: StreamRunContext, stream: AnyStream, spec: typeof DEFAULT_WINDOW) {
  const validate = validatorOf(stream);
  const cursorField = stream.cursorField as string;
  const apiPath = apiPathOf(stream.record as never, cursorField as never);
  const limits = limitsOf(ctx.settings);
  const pageSize = effectivePageSize(stream.paging, ctx.settings.pageSize);
  const streamSettings = streamSettingsOf(ctx.settings);
  const contracts = new Map<number, PageContract<unknown>>();
  const spans = new Map<number, { window: WindowProgress; span: SpanHandle }>();
  const contractOf = (w: WindowProgress) => {
    let contract = contracts.get(w.index);
    if (!contract) {
      const from = toIsoUtc(w.from);
      const to = toIsoUtc(w.to);
      contract = new PageContract({
        where: `window [${from}, ${to}${spec.endInclusive ? ']' : ')'}`,
        style: stream.paging,
        validate,
        keyFields: sinkKey(stream.sink),
        window: { from, to, endSlackMs: spec.endSlackMs, cursorField, apiPath },
        startCursor: w.cursor,
        limits,
      });
      contracts.set(w.index, contract);
    }
    return contract;
  };
  const end = (w: WindowProgress, how: string, error?: unknown) => {
    contracts.delete(w.index);
    const entry = spans.get(w.index);
    if (!entry) return;
    spans.delete(w.index);
    entry.span.setAttributes({ 'window.outcome': how });
    if (error) entry.span.fail(error);
    entry.span.end();
  };
  return {
    /** Records asked for per page. */
    pageSize,
    span(w: WindowProgress): SpanHandle {
      let entry = spans.get(w.index);
      if (!entry) {
        entry = { window: w, span: tracer().start('sync.window', { 'window.from': toIsoUtc(w.from), 'window.to': toIsoUtc(w.to), 'window.resumed': w.cursor !== null }) };
        spans.set(w.index, entry);
      }
      return entry.span;
    },
    fetch(job: { window: WindowProgress; cursor: string | null }, signal: AbortSignal): Promise<FetchedPage> {
      return fetchPage({
        stream,
        client: ctx.client,
        document: ctx.document,
        variables: stream.variables({ settings: streamSettings, window: { from: job.window.from, to: job.window.to } }),
        pageSize,
        cursor: job.cursor,
        signal,
        contract: contractOf(job.window),
        now: () => ctx.clock.now(),
      });
    },
    end,
    /** The windows still open when the run ends: failed, or interrupted. */
    endAll(how: string, error?: unknown): void {
      for (const { window } of [...spans.values()]) end(window, how, error);
    },
  };
}

function warnUntrustedClocks(log: Logger, clocks: { platformTime: number; localTime: number; newest: number | undefined }, maxClockSkewMs: number): void {
  log.warn(
    { platformTime: isoUtcOrNull(clocks.platformTime), localTime: isoUtcOrNull(clocks.localTime), maxClockSkewMs, newestRecord: isoUtcOrNull(clocks.newest ?? null) },
    `the platform's Date header is ${Math.round(Math.abs(clocks.platformTime - clocks.localTime) / 1000)} s away from the local clock, ` +
      'more than SYNC_MAX_CLOCK_SKEW: neither clock moves the watermark, only the newest record read does (check both clocks; keep NTP on here)',
  );
}

/**
 * The answer proved that windows already committed may be incomplete (run-plan.ts, `rewindOnEvidence`): the state goes
 * back over them, recorded in sync_state_changes, so the next runs read them again once the cause is fixed; upserts
 * make the re-read harmless. The windows read ahead of the old progress go too (the store drops them).
 */
async function rewind(ctx: StreamRunContext, stateKey: string, request: RunRequest, plan: RunPlan, violation: ContractViolation, log: Logger, grid: { stepMs: number; gridMs: number }): Promise<void> {
  try {
    const current = await ctx.store.getState(ctx.customerId, stateKey);
    const to = rewindOnEvidence({ request, plan, earliest: violation.outside!.earliest, current, ...grid });
    if (!to) return;
    const change = await ctx.store.changeState({
      customerId: ctx.customerId,
      stream: stateKey,
      actor: `occupancy-sync (page contract: ${violation.rule})`,
      at: toIsoUtc(ctx.clock.now()),
      action: 'rewind',
      ...('progress' in to ? { progress: { windowStart: toIsoUtc(to.progress.windowStart), windowEnd: toIsoUtc(to.progress.windowEnd) } } : { to: toIsoUtc(to.watermark) }),
    });
    if ('progress' in to) {
      log.warn(
        { from: change.before?.windowStart ?? null, to: change.after?.windowStart ?? null, change: change.id, evidence: violation.detail },
        `the answer proves windows already loaded may be incomplete: the backfill's progress went back to ${toIsoUtc(to.progress.windowStart)} (sync_state_changes #${change.id}), so the next run reads them again`,
      );
    } else {
      log.warn(
        { from: change.oldWatermark, to: change.newWatermark, change: change.id, evidence: violation.detail },
        `the answer proves windows already committed may be incomplete: the watermark went back from ${change.oldWatermark} to ${change.newWatermark} (sync_state_changes #${change.id}), so the next runs read them again`,
      );
    }
  } catch (error) {
    log.error({ err: error }, 'could not move the state back over the windows the answer puts in doubt');
  }
}
