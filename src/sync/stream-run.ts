import type { Clock } from '../clock.ts';
import type { Logger } from '../logger.ts';
import { globalSecrets } from '../logger.ts';
import type { IsoUtc, RunMode, SinkName, Store, SyncState, SyncStateUpdate } from '../store/types.ts';
import { toIsoUtc } from '../store/types.ts';
import { fetchPage, type FetchedPage, type GraphQLRequester } from './fetch.ts';
import { runPipeline } from './pipeline.ts';
import { softDeleters } from './sinks.ts';
import type { AnyStream, StreamSettings } from './stream.ts';
import { advanceWatermark, nextBackfillWindow, planBackfill, planIncremental, watermarkLimit, type Plan, type SyncWindow } from './windows.ts';

export type RunRequest = { mode: 'incremental' } | { mode: 'backfill'; from: number; to: number };

export type OutcomeStatus = 'succeeded' | 'failed' | 'interrupted' | 'locked';

export interface StreamOutcome {
  customerId: string;
  stream: string;
  mode: RunMode;
  status: OutcomeStatus;
  pages: number;
  records: number;
  /** Windows completed in this run (incremental-window streams). */
  windows: number;
  watermark: IsoUtc | null;
  /** Why nothing ran, when nothing did. */
  note?: string;
  error?: unknown;
}

export interface ProgressEvent {
  customerId: string;
  stream: string;
  mode: RunMode;
  pages: number;
  records: number;
  windowsDone: number;
  windowsTotal: number;
}

export interface StreamRunContext {
  store: Store;
  clock: Clock;
  logger: Logger;
  settings: StreamSettings;
  signal?: AbortSignal;
  customerId: string;
  client: GraphQLRequester;
  document: unknown;
  onProgress?(event: ProgressEvent): void;
}

export function stateKey(stream: string, request: RunRequest): string {
  return request.mode === 'backfill' ? `${stream}#backfill` : stream;
}

const ms = (iso: IsoUtc | null | undefined): number | null => (iso ? Date.parse(iso) : null);
const iso = (value: number | null): IsoUtc | null => (value === null ? null : toIsoUtc(value));

/** Runs one stream for one customer (the caller holds the lock) and records the run in sync_runs. */
export async function runStream(ctx: StreamRunContext, stream: AnyStream, request: RunRequest): Promise<StreamOutcome> {
  const key = stateKey(stream.name, request);
  const mode: RunMode = request.mode === 'backfill' ? 'backfill' : stream.kind === 'full-refresh' ? 'full' : 'incremental';
  const log = ctx.logger.child({ customer: ctx.customerId, stream: key });
  const startedAt = toIsoUtc(ctx.clock.now());
  const state = await ctx.store.getState(ctx.customerId, key);
  const outcome: StreamOutcome = {
    customerId: ctx.customerId,
    stream: key,
    mode,
    status: 'succeeded',
    pages: 0,
    records: 0,
    windows: 0,
    watermark: state?.watermark ?? null,
  };
  const runId = await ctx.store.startRun({ customerId: ctx.customerId, stream: key, mode, startedAt });
  try {
    const result =
      stream.kind === 'full-refresh'
        ? await fullRefresh(ctx, stream, state, startedAt, runId, outcome)
        : await windowed(ctx, stream, request, key, state, runId, outcome, log);
    outcome.status = result === 'interrupted' ? 'interrupted' : 'succeeded';
    await ctx.store.finishRun(runId, { status: outcome.status, finishedAt: toIsoUtc(ctx.clock.now()) });
    log.info({ status: outcome.status, pages: outcome.pages, records: outcome.records, watermark: outcome.watermark, note: outcome.note }, 'stream run finished');
  } catch (error) {
    outcome.status = 'failed';
    outcome.error = error;
    const message = globalSecrets.scrub(error instanceof Error ? error.message : String(error));
    log.error({ err: error, pages: outcome.pages }, `stream run failed: ${message}`);
    try {
      await ctx.store.finishRun(runId, { status: 'failed', finishedAt: toIsoUtc(ctx.clock.now()), error: message });
    } catch (finishError) {
      log.error({ err: finishError }, 'could not record the failed run');
    }
  }
  return outcome;
}

function emit(ctx: StreamRunContext, outcome: StreamOutcome, windowsTotal: number, windowsDone = outcome.windows): void {
  ctx.onProgress?.({
    customerId: ctx.customerId,
    stream: outcome.stream,
    mode: outcome.mode,
    pages: outcome.pages,
    records: outcome.records,
    windowsDone,
    windowsTotal,
  });
}

async function fullRefresh(
  ctx: StreamRunContext,
  stream: AnyStream,
  state: SyncState | undefined,
  startedAt: IsoUtc,
  runId: number,
  outcome: StreamOutcome,
): Promise<'done' | 'interrupted'> {
  const variables = stream.variables({ settings: ctx.settings });
  // The watermark of a full-refresh stream is the start of its last complete listing; forward only.
  const finalWatermark = state?.watermark && state.watermark > startedAt ? state.watermark : startedAt;
  const result = await runPipeline<string | null, FetchedPage>(null, {
    fetch: (cursor, signal) => fetchPage({ stream, client: ctx.client, document: ctx.document, variables, pageSize: ctx.settings.pageSize, cursor, signal }),
    next: (page) => (page.hasNextPage ? page.endCursor : undefined),
    commit: async (page) => {
      const last = !page.hasNextPage;
      await ctx.store.commitPage({
        customerId: ctx.customerId,
        sink: stream.sink,
        records: page.records,
        // Every row of this listing is stamped with the run start, so "not seen since the run start" is exact.
        at: startedAt,
        checkpoint: checkpointOf(ctx.customerId, stream.name, state, { watermark: last ? finalWatermark : (state?.watermark ?? null) }),
        runId,
      });
      outcome.pages += 1;
      outcome.records += page.records.length;
      if (last) outcome.watermark = finalWatermark;
      emit(ctx, outcome, 1, last ? 1 : 0);
    },
  }, ctx.signal);
  if (result === 'done' && stream.softDelete?.isComplete(variables)) {
    const markDeleted = softDeleters[stream.sink as SinkName];
    if (!markDeleted) throw new Error(`stream ${stream.name}: sink ${stream.sink} has no soft-delete support in the store`);
    const deleted = await markDeleted(ctx.store, ctx.customerId, startedAt, startedAt);
    if (deleted) ctx.logger.info({ customer: ctx.customerId, stream: stream.name, deleted }, 'rows missing from the complete listing marked deleted');
  }
  return result;
}

function checkpointOf(customerId: string, key: string, state: SyncState | undefined, patch: Partial<SyncStateUpdate>): SyncStateUpdate {
  return {
    customerId,
    stream: key,
    watermark: state?.watermark ?? null,
    windowStart: null,
    windowEnd: null,
    pageCursor: null,
    rangeStart: state?.rangeStart ?? null,
    rangeEnd: state?.rangeEnd ?? null,
    ...patch,
  };
}

interface WindowJob {
  index: number;
  window: SyncWindow;
  cursor: string | null;
}

async function windowed(
  ctx: StreamRunContext,
  stream: AnyStream,
  request: RunRequest,
  key: string,
  state: SyncState | undefined,
  runId: number,
  outcome: StreamOutcome,
  log: Logger,
): Promise<'done' | 'interrupted'> {
  const now = ctx.clock.now();
  const inFlight =
    state?.windowStart && state.windowEnd
      ? { windowStart: ms(state.windowStart)!, windowEnd: ms(state.windowEnd)!, pageCursor: state.pageCursor }
      : null;
  let plan: Plan;
  let windowsTotal: number;
  let windowsDoneBefore = 0;
  let range: { rangeStart: IsoUtc | null; rangeEnd: IsoUtc | null };
  let watermark = ms(state?.watermark);
  // What the state says after the last page of a window: incremental streams move the watermark; a backfill
  // moves its in-flight pointer to the next window (see BackfillState for why).
  type WindowState = Pick<SyncStateUpdate, 'watermark' | 'windowStart' | 'windowEnd' | 'pageCursor'>;
  let afterWindow: (window: SyncWindow, page: FetchedPage) => { state: WindowState; watermark: number | null };
  if (request.mode === 'backfill') {
    const backfill = planBackfill({
      now,
      range: { from: request.from, to: request.to },
      state: state ? { inFlight, rangeStart: ms(state.rangeStart), rangeEnd: ms(state.rangeEnd) } : null,
      settings: ctx.settings,
    });
    plan = backfill;
    windowsTotal = backfill.windowsTotal;
    windowsDoneBefore = backfill.windowsDone;
    range = { rangeStart: toIsoUtc(request.from), rangeEnd: toIsoUtc(request.to) };
    if (backfill.restart && state?.rangeStart) log.info({ previous: [state.rangeStart, state.rangeEnd] }, 'a backfill of another range was stored: starting over for the new range');
    afterWindow = (window) => {
      const next = nextBackfillWindow(window.to, request, ctx.settings.stepMs);
      return {
        state: { watermark: iso(watermark), windowStart: iso(next?.windowStart ?? null), windowEnd: iso(next?.windowEnd ?? null), pageCursor: null },
        watermark,
      };
    };
  } else {
    plan = planIncremental({ now, watermark, inFlight, settings: ctx.settings });
    windowsTotal = plan.windows.length;
    range = { rangeStart: state?.rangeStart ?? null, rangeEnd: state?.rangeEnd ?? null };
    afterWindow = (window, page) => {
      // The platform's time of the window's last answer: the window holds nothing the platform had not produced then.
      const limit = watermarkLimit(plan.limit, page.serverTime, ctx.settings.settleDelayMs);
      const next = advanceWatermark(watermark, window.to, limit);
      return { state: { watermark: iso(next), windowStart: null, windowEnd: null, pageCursor: null }, watermark: next };
    };
  }
  if (plan.windows.length === 0) {
    outcome.note = plan.reason;
    if (plan.reason === 'clock-behind') {
      log.warn({ watermark: state?.watermark, limit: iso(plan.limit) }, 'the clock is behind the watermark (clock moved backwards?): nothing to read until it catches up');
    }
    emit(ctx, outcome, windowsTotal, windowsDoneBefore);
    return 'done';
  }
  const { windows } = plan;
  const base = { customerId: ctx.customerId, stream: key, ...range };
  const first: WindowJob = { index: 0, window: windows[0]!, cursor: windows[0]!.cursor };
  emit(ctx, outcome, windowsTotal, windowsDoneBefore);
  return runPipeline<WindowJob, FetchedPage>(first, {
    fetch: (job, signal) =>
      fetchPage({
        stream,
        client: ctx.client,
        document: ctx.document,
        variables: stream.variables({ settings: ctx.settings, window: { from: toIsoUtc(job.window.from), to: toIsoUtc(job.window.to) } }),
        pageSize: ctx.settings.pageSize,
        cursor: job.cursor,
        signal,
      }),
    next: (page, job) => {
      if (page.hasNextPage) return { ...job, cursor: page.endCursor };
      const window = windows[job.index + 1];
      return window ? { index: job.index + 1, window, cursor: window.cursor } : undefined;
    },
    commit: async (page, job) => {
      const complete = !page.hasNextPage;
      const after = complete
        ? afterWindow(job.window, page)
        : {
            state: { watermark: iso(watermark), windowStart: toIsoUtc(job.window.from), windowEnd: toIsoUtc(job.window.to), pageCursor: page.endCursor },
            watermark,
          };
      // Singer's rule: the checkpoint goes in the same transaction as the rows it covers, never before them.
      const checkpoint: SyncStateUpdate = { ...base, ...after.state };
      await ctx.store.commitPage({
        customerId: ctx.customerId,
        sink: stream.sink,
        records: page.records,
        at: toIsoUtc(ctx.clock.now()),
        checkpoint,
        runId,
      });
      watermark = after.watermark;
      outcome.watermark = iso(watermark);
      outcome.pages += 1;
      outcome.records += page.records.length;
      if (complete) outcome.windows += 1;
      emit(ctx, outcome, windowsTotal, windowsDoneBefore + outcome.windows);
    },
  }, ctx.signal);
}
