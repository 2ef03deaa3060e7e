import { ConfigError, ContractViolation } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { SyncState, SyncStateUpdate } from '../store/types.ts';
import { epochMsOrNull, isoUtcOrNull, toIsoUtc } from '../time.ts';
import { PageContract } from './contract.ts';
import { fetchPage, type FetchedPage } from './fetch.ts';
import { Frontier, type WindowProgress } from './frontier.ts';
import { effectivePageSize } from './paging/index.ts';
import { runPipeline } from './pipeline.ts';
import { apiPathOf } from './records.ts';
import { streamSettingsOf } from './settings.ts';
import { DEFAULT_WINDOW, type AnyStream } from './stream.ts';
import type { RunRequest, StreamOutcome, StreamRunContext } from './stream-run.ts';
import { commitSpan, counted, emit, limitsOf, validatorOf } from './run-parts.ts';
import { sinkKey } from '../store/sinks.ts';
import { tracer, type SpanHandle } from '../tracing.ts';
import { advanceWatermark, nextBackfillWindow, planBackfill, planIncremental, stepOffGrid, trustedServerTime, watermarkLimit, type Plan, type SyncWindow } from './windows.ts';

/** The stored state in the engine's terms: instants as epoch ms (converted once, here, at the store boundary). */
interface EngineState {
  watermark: number | null;
  head: { from: number; to: number; cursor: string | null } | null;
  /** Windows after the head read at the same time: started (a cursor) or complete. */
  beyond: ReadonlyArray<{ from: number; to: number; cursor: string | null; done: boolean }>;
}

function fromStore(state: SyncState | undefined): EngineState {
  const from = epochMsOrNull(state?.windowStart);
  const to = epochMsOrNull(state?.windowEnd);
  return {
    watermark: epochMsOrNull(state?.watermark),
    head: from !== null && to !== null ? { from, to, cursor: state?.pageCursor ?? null } : null,
    beyond: (state?.windows ?? []).map((w) => ({ from: epochMsOrNull(w.from)!, to: epochMsOrNull(w.to)!, cursor: w.cursor, done: w.done })),
  };
}

function toStore(state: EngineState): Pick<SyncStateUpdate, 'watermark' | 'windowStart' | 'windowEnd' | 'pageCursor' | 'windows'> {
  return {
    watermark: isoUtcOrNull(state.watermark),
    windowStart: isoUtcOrNull(state.head?.from ?? null),
    windowEnd: isoUtcOrNull(state.head?.to ?? null),
    pageCursor: state.head?.cursor ?? null,
    ...(state.beyond.length && { windows: state.beyond.map((w) => ({ from: toIsoUtc(w.from), to: toIsoUtc(w.to), cursor: w.cursor, done: w.done })) }),
  };
}

/** The windows a stopped run read ahead, carried onto this run's plan where their bounds are the same. */
function resumed(windows: ReadonlyArray<SyncWindow>, beyond: EngineState['beyond']): Array<SyncWindow & { done: boolean }> {
  const progress = new Map(beyond.map((w) => [`${w.from}/${w.to}`, w]));
  return windows.map((w) => {
    const stored = progress.get(`${w.from}/${w.to}`);
    return stored && w.cursor === null ? { ...w, cursor: stored.done ? null : stored.cursor, done: stored.done } : { ...w, done: false };
  });
}

/** The plan of one run and what its checkpoint is after each commit. */
interface RunPlan extends Plan {
  windowsTotal: number;
  windowsDone: number;
  /** What the state becomes after a commit: the frontier's head, and the watermark after the windows just completed. */
  checkpoint(frontier: Frontier, completed: WindowProgress[], page: FetchedPage): Omit<EngineState, 'beyond'>;
}

function head(frontier: Frontier, always: boolean): EngineState['head'] {
  const h = frontier.head;
  return h && (always || h.cursor !== null) ? { from: h.from, to: h.to, cursor: h.cursor } : null;
}

/**
 * Reads an incremental stream's windows (or a backfill's) and keeps the state exact: each page commits with its
 * checkpoint; the watermark (a backfill's progress) moves only over the completed windows from the first. Windows are
 * read `windowConcurrency` at a time, each page by page in order.
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
  const now = ctx.clock.now();
  const stored = fromStore(state);
  const base = { customerId: ctx.customerId, stream: stateKey };
  let watermark = stored.watermark;
  let skewWarned = false;
  let newest: number | undefined;
  const windowSettings = { ...ctx.settings, stepMs, gridMs: spec.gridMs };
  let plan: RunPlan;
  let readAhead = stored.beyond;
  let range: { rangeStart: string | null; rangeEnd: string | null };

  if (request.mode === 'backfill') {
    const backfill = planBackfill({
      now,
      range: { from: request.from, to: request.to },
      state: state && !request.restart ? { inFlight: stored.head && { windowStart: stored.head.from, windowEnd: stored.head.to, pageCursor: stored.head.cursor }, rangeStart: epochMsOrNull(state.rangeStart), rangeEnd: epochMsOrNull(state.rangeEnd) } : null,
      settings: windowSettings,
    });
    range = { rangeStart: toIsoUtc(request.from), rangeEnd: toIsoUtc(request.to) };
    if (backfill.restart) readAhead = [];
    if (backfill.restart && state?.rangeStart) {
      log.info({ previous: [state.rangeStart, state.rangeEnd] }, 'starting the backfill over (--restart): the stored progress is dropped');
    } else if (!backfill.restart && stored.head) {
      outcome.note = `resumed at ${toIsoUtc(stored.head.from)}${stored.head.cursor ? ' (mid-window, at its last committed page)' : ''}: ${backfill.windowsDone} of ${backfill.windowsTotal} windows were done`;
      log.info({ windowStart: toIsoUtc(stored.head.from), windowsDone: backfill.windowsDone, windowsTotal: backfill.windowsTotal }, `backfill ${outcome.note}`);
    }
    plan = {
      ...backfill,
      checkpoint: (frontier) => {
        const h = head(frontier, true);
        if (h) return { watermark, head: h };
        // Every planned window is done; the range may go on beyond now - settle delay: the next run starts there.
        const last = frontier.windows.at(-1)!;
        const next = nextBackfillWindow(last.to, request, stepMs, spec.gridMs);
        return { watermark, head: next && { from: next.windowStart, to: next.windowEnd, cursor: null } };
      },
    };
  } else {
    const incremental = planIncremental({ now, watermark, inFlight: stored.head && { windowStart: stored.head.from, windowEnd: stored.head.to, pageCursor: stored.head.cursor }, settings: windowSettings });
    range = { rangeStart: state?.rangeStart ?? null, rangeEnd: state?.rangeEnd ?? null };
    plan = {
      ...incremental,
      windowsTotal: incremental.windows.length,
      windowsDone: 0,
      checkpoint: (frontier, completed, page) => {
        const last = completed.at(-1);
        if (last) {
          // The platform's time of the latest answer: the window holds nothing the platform had not produced then.
          const server = trustedServerTime(page.serverTime, page.localTime, ctx.settings.maxClockSkewMs);
          let limit = watermarkLimit(incremental.limit, server.time, ctx.settings.settleDelayMs);
          if (server.ignored) {
            // Neither clock can be trusted: only the data proves how far the platform has produced. No record, no move.
            limit = Math.min(limit, newest ?? Number.NEGATIVE_INFINITY);
            if (!skewWarned) {
              skewWarned = true;
              log.warn(
                { platformTime: isoUtcOrNull(page.serverTime!), localTime: isoUtcOrNull(page.localTime), maxClockSkewMs: ctx.settings.maxClockSkewMs, newestRecord: isoUtcOrNull(newest ?? null) },
                `the platform's Date header is ${Math.round(Math.abs(page.serverTime! - page.localTime) / 1000)} s away from the local clock, ` +
                  'more than SYNC_MAX_CLOCK_SKEW: neither clock moves the watermark, only the newest record read does (check both clocks; keep NTP on here)',
              );
            }
          }
          if (Number.isFinite(limit)) watermark = advanceWatermark(watermark, last.to, limit);
        }
        return { watermark, head: head(frontier, false) };
      },
    };
  }

  if (plan.windows.length === 0) {
    outcome.note = plan.reason;
    if (plan.reason === 'clock-behind') {
      log.warn({ watermark: state?.watermark, limit: isoUtcOrNull(plan.limit) }, 'the clock is behind the watermark (clock moved backwards?): nothing to read until it catches up');
    }
    emit(ctx, outcome, plan.windowsTotal, plan.windowsDone);
    return 'done';
  }

  const frontier = new Frontier(resumed(plan.windows, readAhead));
  const validate = validatorOf(stream);
  const cursorField = stream.cursorField as string;
  const apiPath = apiPathOf(stream.record as never, cursorField as never);
  const limits = limitsOf(ctx.settings);
  const pageSize = effectivePageSize(stream.paging, ctx.settings.pageSize);
  const streamSettings = streamSettingsOf(ctx.settings);
  const contracts = new Map<number, PageContract<unknown>>();
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

  // One span per window, from its first request to its last commit; the requests and commits are its children.
  const spans = new Map<number, SpanHandle>();
  const windowSpan = (w: WindowProgress): SpanHandle => {
    let span = spans.get(w.index);
    if (!span) {
      span = tracer().start('sync.window', { 'window.from': toIsoUtc(w.from), 'window.to': toIsoUtc(w.to), 'window.resumed': w.cursor !== null });
      spans.set(w.index, span);
    }
    return span;
  };
  const endWindowSpan = (w: WindowProgress, how: string, error?: unknown) => {
    const span = spans.get(w.index);
    if (!span) return;
    spans.delete(w.index);
    span.setAttributes({ 'window.outcome': how });
    if (error) span.fail(error);
    span.end();
  };

  type Job = { window: WindowProgress; cursor: string | null };
  const queue = frontier.windows.filter((w) => !w.done);
  const concurrency = Math.max(1, Math.min(ctx.settings.windowConcurrency ?? 1, queue.length));
  // Windows read ahead of the first incomplete one are kept in the checkpoint until it completes: a slow window must
  // not let the others run unboundedly far ahead of it.
  const maxAhead = 4 * concurrency;
  const waiting: Array<() => void> = [];
  const headMoved = () => {
    for (const wake of waiting.splice(0)) wake();
  };
  const take = async (): Promise<Job | undefined> => {
    while (queue.length && !signal.aborted && queue[0]!.index - (frontier.head?.index ?? 0) > maxAhead) {
      await new Promise<void>((resolve) => waiting.push(resolve));
    }
    const window = signal.aborted ? undefined : queue.shift();
    return window && { window, cursor: window.cursor };
  };
  // Commits are taken one at a time, in the order pages arrive: each checkpoint is computed from the frontier as
  // it is after every earlier commit.
  let commits: Promise<unknown> = Promise.resolve();
  let broken: { error: unknown } | undefined;
  const commit = (page: FetchedPage, job: Job) => {
    const run = commits.then(async () => {
      // Stopping (SIGTERM, or another window failed): the pages waiting for their turn are not committed, so a
      // shutdown waits for one commit at most; the next run fetches them again.
      if (signal.aborted) throw new Error('stopped before this page was committed', { cause: signal.reason });
      // A commit that failed had already counted its page in the frontier: no checkpoint computed after it may be
      // written (it could claim that page), whatever the database answers next.
      if (broken) throw new Error('an earlier page of this run was not committed', { cause: broken.error });
      const completed = frontier.page(job.window.index, page.next);
      if (completed.length) headMoved();
      if (page.newest !== undefined && (newest === undefined || page.newest > newest)) newest = page.newest;
      const after = plan.checkpoint(frontier, completed, page);
      const beyond = frontier.beyondHead.map((w) => ({ from: w.from, to: w.to, cursor: w.cursor, done: w.done }));
      const checkpoint: SyncStateUpdate = { ...base, ...range, ...toStore({ ...after, beyond }) };
      // Singer's rule: the checkpoint goes in the same transaction as the rows it covers, never before them.
      const span = windowSpan(job.window);
      try {
        await span.run(() => commitSpan(page, job.window, () => ctx.store.commitPage({
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
      if (page.next === null) endWindowSpan(job.window, 'complete');
      outcome.watermark = checkpoint.watermark;
      counted(outcome, page);
      if (page.next === null) outcome.windows += 1;
      emit(ctx, outcome, plan.windowsTotal, plan.windowsDone + outcome.windows);
    });
    commits = run.catch(() => {});
    return run;
  };

  const stop = new AbortController();
  const signal = ctx.signal ? AbortSignal.any([ctx.signal, stop.signal]) : stop.signal;
  signal.addEventListener('abort', () => headMoved(), { once: true });
  let failure: { error: unknown } | undefined;
  // The other readers start once one answer came back valid: a request the platform refuses (a wrong document, a
  // page size too large) fails once, not once per window in flight.
  let proven!: () => void;
  const firstAnswer = new Promise<void>((resolve) => (proven = resolve));
  const worker = async (lead: boolean): Promise<void> => {
    if (!lead) {
      const stopped = signal.aborted ? Promise.resolve() : new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      await Promise.race([firstAnswer, stopped]);
    }
    const first = await take();
    if (!first) return;
    try {
      await runPipeline<Job, FetchedPage>(
        first,
        {
          fetch: (job, fetchSignal) =>
            windowSpan(job.window).run(() => fetchPage({
              stream,
              client: ctx.client,
              document: ctx.document,
              variables: stream.variables({ settings: streamSettings, window: { from: job.window.from, to: job.window.to } }),
              pageSize,
              cursor: job.cursor,
              signal: fetchSignal,
              contract: contractOf(job.window),
              now: () => ctx.clock.now(),
            }).then((page) => {
              proven();
              return page;
            })),
          // The next page of this window, or the first page of the next window nobody reads yet: fetched while this
          // page commits.
          next: (page, job) => (page.next !== null ? { window: job.window, cursor: page.next } : take()),
          commit,
        },
        signal,
      );
    } catch (error) {
      if (!failure) failure = { error };
      stop.abort();
      headMoved();
    }
  };
  emit(ctx, outcome, plan.windowsTotal, plan.windowsDone);
  await Promise.all(Array.from({ length: concurrency }, (_, i) => worker(i === 0)));
  await commits;
  for (const [index] of spans) endWindowSpan(frontier.windows[index]!, failure ? 'failed' : 'interrupted', failure?.error);
  if (failure) {
    if (failure.error instanceof ContractViolation && failure.error.outside) {
      await rewindOnEvidence(ctx, stream, request, stateKey, state, plan, failure.error, log, stepMs, spec.gridMs);
    }
    throw failure.error;
  }
  return ctx.signal?.aborted && frontier.head ? 'interrupted' : 'done';
}

/**
 * An answer holding records outside the window asked for proves the platform reads the bounds otherwise than sent
 * (a time zone, a unit): every window this run committed may have been read wrongly, and so may the time the stray
 * records come from. The state goes back over both (recorded in sync_state_changes for a watermark), so the next
 * runs read them again once the cause is fixed; upserts make the re-read harmless.
 */
async function rewindOnEvidence(
  ctx: StreamRunContext,
  stream: AnyStream,
  request: RunRequest,
  stateKey: string,
  state: SyncState | undefined,
  plan: RunPlan,
  violation: ContractViolation,
  log: Logger,
  stepMs: number,
  gridMs: number,
): Promise<void> {
  const target = Math.floor(Math.min(plan.windows[0]!.from, violation.outside!.earliest) / gridMs) * gridMs;
  const current = await ctx.store.getState(ctx.customerId, stateKey);
  const at = toIsoUtc(ctx.clock.now());
  try {
    if (request.mode === 'backfill') {
      const progress = epochMsOrNull(current?.windowStart) ?? (current?.rangeStart ? Number.POSITIVE_INFINITY : null);
      const from = Math.max(request.from, Math.floor((target - request.from) / stepMs) * stepMs + request.from);
      if (progress === null || progress <= from || !current) return;
      const first = nextBackfillWindow(from, { from: request.from, to: request.to }, stepMs, gridMs);
      if (!first) return;
      // Recorded like the watermark's rewind below; the windows read ahead of the old progress go too (the store drops
      // them): they are read again after it.
      const change = await ctx.store.changeState({
        customerId: ctx.customerId,
        stream: stateKey,
        actor: `occupancy-sync (page contract: ${violation.rule})`,
        at,
        action: 'rewind',
        progress: { windowStart: toIsoUtc(first.windowStart), windowEnd: toIsoUtc(first.windowEnd) },
      });
      log.warn(
        { from: change.before?.windowStart ?? null, to: change.after?.windowStart ?? null, change: change.id, evidence: violation.detail },
        `the answer proves windows already loaded may be incomplete: the backfill's progress went back to ${toIsoUtc(from)} (sync_state_changes #${change.id}), so the next run reads them again`,
      );
      return;
    }
    const watermark = epochMsOrNull(current?.watermark);
    if (watermark === null || watermark <= target) return;
    const change = await ctx.store.changeState({ customerId: ctx.customerId, stream: stateKey, actor: `occupancy-sync (page contract: ${violation.rule})`, at, action: 'rewind', to: toIsoUtc(target) });
    log.warn(
      { from: change.oldWatermark, to: change.newWatermark, change: change.id, evidence: violation.detail },
      `the answer proves windows already committed may be incomplete: the watermark went back from ${change.oldWatermark} to ${change.newWatermark} (sync_state_changes #${change.id}), so the next runs read them again`,
    );
  } catch (error) {
    log.error({ err: error, state: state?.watermark }, 'could not move the state back over the windows the answer puts in doubt');
  }
}
