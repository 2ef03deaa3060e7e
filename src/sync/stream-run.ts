import type { Clock } from '../clock.ts';
import { UsageError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { globalSecrets } from '../logger.ts';
import type { IsoUtc, RunMode, SinkName, Store, SyncState, SyncStateUpdate } from '../store/types.ts';
import { sinkKey } from '../store/sinks.ts';
import { epochMsOrNull, isoUtcOrNull, toIsoUtc } from '../time.ts';
import { WindowPaging, type PagingLimits } from './contract.ts';
import { fetchPage, type FetchedPage, type GraphQLRequester } from './fetch.ts';
import { runPipeline } from './pipeline.ts';
import { apiPathOf, compileRecord, type RecordValidator } from './records.ts';
import type { AnyStream, StreamSettings } from './stream.ts';
import {
  advanceWatermark,
  nextBackfillWindow,
  planBackfill,
  planIncremental,
  trustedServerTime,
  watermarkLimit,
  type Plan,
  type SyncWindow,
} from './windows.ts';

/** `restart`: a backfill starts over even when a backfill of another (or the same, complete) range is stored. */
export type RunRequest = { mode: 'incremental' } | { mode: 'backfill'; from: number; to: number; restart?: boolean };

/** `skipped`: not run because a concurrent run holds an optional lock (a backfill's refresh of buildings). */
export type OutcomeStatus = 'succeeded' | 'failed' | 'interrupted' | 'locked' | 'skipped';

export interface StreamOutcome {
  customerId: string;
  stream: string;
  mode: RunMode;
  status: OutcomeStatus;
  pages: number;
  records: number;
  /** Records that broke their declared types, quarantined (committed with their pages). */
  rejected: number;
  /** Windows completed in this run (incremental-window streams). */
  windows: number;
  watermark: IsoUtc | null;
  /** Why nothing ran, when nothing did. */
  note?: string;
  error?: unknown;
  /** How long the run took, lock to last commit (absent when it never started). */
  durationMs?: number;
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


const validators = new WeakMap<AnyStream, RecordValidator<unknown>>();
function validatorOf(stream: AnyStream): RecordValidator<unknown> {
  let validate = validators.get(stream);
  if (!validate) {
    validate = compileRecord(stream.record as never) as RecordValidator<unknown>;
    validators.set(stream, validate);
  }
  return validate;
}

function limitsOf(settings: StreamSettings): PagingLimits {
  return {
    maxPagesWithoutNew: 3,
    maxPages: settings.maxPagesPerWindow,
    maxRejectedShare: settings.maxRejectedShare,
    minRejectedForShare: 10,
    onRejected: settings.rejectedRecords,
  };
}

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
    rejected: 0,
    windows: 0,
    watermark: state?.watermark ?? null,
  };
  if (request.mode === 'backfill' && state && !request.restart) {
    // Decided before a run is recorded: a re-run of a complete range is not a run, and must not hide the real one
    // in `status`; a different range needs the operator to say the stored progress may go.
    const stored = { from: epochMsOrNull(state.rangeStart), to: epochMsOrNull(state.rangeEnd) };
    const sameRange = stored.from === request.from && stored.to === request.to;
    if (sameRange && !state.windowStart) {
      outcome.note = 'complete';
      return outcome;
    }
    if (!sameRange && state.rangeStart && state.rangeEnd) {
      outcome.status = 'failed';
      const progress = state.windowStart ? `in progress, next window ${state.windowStart}` : 'complete';
      outcome.error = new UsageError(
        `a backfill of [${state.rangeStart}, ${state.rangeEnd}) is stored (${progress}); this one asks for ` +
          `[${toIsoUtc(request.from)}, ${toIsoUtc(request.to)}). Fix: add --restart to start over for the new range (the ` +
          `stored progress is dropped; rows already loaded stay), or give the stored --from and --to to finish it`,
      );
      return outcome;
    }
  }
  const runId = await ctx.store.startRun({ customerId: ctx.customerId, stream: key, mode, startedAt });
  try {
    const result =
      stream.kind === 'full-refresh'
        ? await fullRefresh(ctx, stream, state, startedAt, runId, outcome)
        : await windowed(ctx, stream, request, key, state, runId, outcome, log);
    outcome.status = result === 'interrupted' ? 'interrupted' : 'succeeded';
    await ctx.store.finishRun(runId, { status: outcome.status, finishedAt: toIsoUtc(ctx.clock.now()) });
    if (outcome.rejected > 0) {
      log.warn(
        { rejected: outcome.rejected, runId },
        `${outcome.rejected} record(s) broke their declared types and were quarantined (table quarantined_records); the run went on`,
      );
    }
    log.info({ status: outcome.status, pages: outcome.pages, records: outcome.records, rejected: outcome.rejected, watermark: outcome.watermark, note: outcome.note }, 'stream run finished');
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

function counted(outcome: StreamOutcome, page: FetchedPage): void {
  outcome.pages += 1;
  outcome.records += page.records.length;
  outcome.rejected += page.rejected.length;
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
  const paging = new WindowPaging({
    where: 'the listing',
    validate: validatorOf(stream),
    keyFields: sinkKey(stream.sink),
    startCursor: null,
    limits: limitsOf(ctx.settings),
  });
  let rejected = 0;
  const result = await runPipeline<string | null, FetchedPage>(null, {
    fetch: (cursor, signal) =>
      fetchPage({ stream, client: ctx.client, document: ctx.document, variables, pageSize: ctx.settings.pageSize, cursor, signal, paging, now: () => ctx.clock.now() }),
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
        quarantine: { stream: stream.name, window: null, records: page.rejected },
      });
      rejected += page.rejected.length;
      counted(outcome, page);
      if (last) outcome.watermark = finalWatermark;
      emit(ctx, outcome, 1, last ? 1 : 0);
    },
  }, ctx.signal);
  if (result === 'done' && stream.softDelete?.isComplete(variables)) {
    if (rejected > 0) {
      // A rejected row is not a missing row: its building may well exist. Deleting on this listing would invent it.
      ctx.logger.warn({ customer: ctx.customerId, stream: stream.name, rejected }, 'the listing had rejected records: soft deletes skipped this run');
      return result;
    }
    const deleted = await ctx.store.markDeleted(stream.sink, ctx.customerId, startedAt, startedAt);
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
  /** The contract state of the window, shared by all its pages. */
  paging: WindowPaging<unknown>;
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
      ? { windowStart: epochMsOrNull(state.windowStart)!, windowEnd: epochMsOrNull(state.windowEnd)!, pageCursor: state.pageCursor }
      : null;
  let plan: Plan;
  let windowsTotal: number;
  let windowsDoneBefore = 0;
  let range: { rangeStart: IsoUtc | null; rangeEnd: IsoUtc | null };
  let watermark = epochMsOrNull(state?.watermark);
  let skewWarned = false;
  // What the state says after the last page of a window: incremental streams move the watermark; a backfill
  // moves its in-flight pointer to the next window (see BackfillState for why).
  type WindowState = Pick<SyncStateUpdate, 'watermark' | 'windowStart' | 'windowEnd' | 'pageCursor'>;
  let afterWindow: (window: SyncWindow, page: FetchedPage) => { state: WindowState; watermark: number | null };
  if (request.mode === 'backfill') {
    const backfill = planBackfill({
      now,
      range: { from: request.from, to: request.to },
      state: state && !request.restart ? { inFlight, rangeStart: epochMsOrNull(state.rangeStart), rangeEnd: epochMsOrNull(state.rangeEnd) } : null,
      settings: ctx.settings,
    });
    plan = backfill;
    windowsTotal = backfill.windowsTotal;
    windowsDoneBefore = backfill.windowsDone;
    range = { rangeStart: toIsoUtc(request.from), rangeEnd: toIsoUtc(request.to) };
    if (backfill.restart && state?.rangeStart) {
      log.info({ previous: [state.rangeStart, state.rangeEnd] }, 'starting the backfill over (--restart): the stored progress is dropped');
    } else if (!backfill.restart && inFlight) {
      outcome.note = `resumed at ${toIsoUtc(inFlight.windowStart)}${inFlight.pageCursor ? ' (mid-window, at its last committed page)' : ''}: ${backfill.windowsDone} of ${backfill.windowsTotal} windows were done`;
      log.info({ windowStart: toIsoUtc(inFlight.windowStart), windowsDone: backfill.windowsDone, windowsTotal: backfill.windowsTotal }, `backfill ${outcome.note}`);
    }
    afterWindow = (window) => {
      const next = nextBackfillWindow(window.to, request, ctx.settings.stepMs);
      return {
        state: { watermark: isoUtcOrNull(watermark), windowStart: isoUtcOrNull(next?.windowStart ?? null), windowEnd: isoUtcOrNull(next?.windowEnd ?? null), pageCursor: null },
        watermark,
      };
    };
  } else {
    plan = planIncremental({ now, watermark, inFlight, settings: ctx.settings });
    windowsTotal = plan.windows.length;
    range = { rangeStart: state?.rangeStart ?? null, rangeEnd: state?.rangeEnd ?? null };
    afterWindow = (window, page) => {
      // The platform's time of the window's last answer: the window holds nothing the platform had not produced then.
      const server = trustedServerTime(page.serverTime, page.localTime, ctx.settings.maxClockSkewMs);
      if (server.ignored && !skewWarned) {
        skewWarned = true;
        log.warn(
          { platformTime: isoUtcOrNull(page.serverTime!), localTime: isoUtcOrNull(page.localTime), maxClockSkewMs: ctx.settings.maxClockSkewMs },
          `the platform's Date header is ${Math.round(Math.abs(page.serverTime! - page.localTime) / 1000)} s away from the local clock, ` +
            'more than SYNC_MAX_CLOCK_SKEW: it is ignored and the local clock caps the watermark (check both clocks; keep NTP on here)',
        );
      }
      const limit = watermarkLimit(plan.limit, server.time, ctx.settings.settleDelayMs);
      const next = advanceWatermark(watermark, window.to, limit);
      return { state: { watermark: isoUtcOrNull(next), windowStart: null, windowEnd: null, pageCursor: null }, watermark: next };
    };
  }
  if (plan.windows.length === 0) {
    outcome.note = plan.reason;
    if (plan.reason === 'clock-behind') {
      log.warn({ watermark: state?.watermark, limit: isoUtcOrNull(plan.limit) }, 'the clock is behind the watermark (clock moved backwards?): nothing to read until it catches up');
    }
    emit(ctx, outcome, windowsTotal, windowsDoneBefore);
    return 'done';
  }
  const { windows } = plan;
  const base = { customerId: ctx.customerId, stream: key, ...range };
  const validate = validatorOf(stream);
  const cursorField = stream.cursorField as string;
  const apiPath = apiPathOf(stream.record as never, cursorField as never);
  const limits = limitsOf(ctx.settings);
  const jobFor = (index: number, window: SyncWindow): WindowJob => {
    const from = toIsoUtc(window.from);
    const to = toIsoUtc(window.to);
    return {
      index,
      window,
      cursor: window.cursor,
      paging: new WindowPaging({
        where: `window [${from}, ${to})`,
        validate,
        keyFields: sinkKey(stream.sink),
        window: { from, to, cursorField, apiPath },
        startCursor: window.cursor,
        limits,
      }),
    };
  };
  emit(ctx, outcome, windowsTotal, windowsDoneBefore);
  return runPipeline<WindowJob, FetchedPage>(jobFor(0, windows[0]!), {
    fetch: (job, signal) =>
      fetchPage({
        stream,
        client: ctx.client,
        document: ctx.document,
        variables: stream.variables({ settings: ctx.settings, window: { from: toIsoUtc(job.window.from), to: toIsoUtc(job.window.to) } }),
        pageSize: ctx.settings.pageSize,
        cursor: job.cursor,
        signal,
        paging: job.paging,
        now: () => ctx.clock.now(),
      }),
    next: (page, job) => {
      if (page.hasNextPage) return { ...job, cursor: page.endCursor };
      const window = windows[job.index + 1];
      return window ? jobFor(job.index + 1, window) : undefined;
    },
    commit: async (page, job) => {
      const complete = !page.hasNextPage;
      const after = complete
        ? afterWindow(job.window, page)
        : {
            state: { watermark: isoUtcOrNull(watermark), windowStart: toIsoUtc(job.window.from), windowEnd: toIsoUtc(job.window.to), pageCursor: page.endCursor },
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
        quarantine: { stream: stream.name, window: { from: toIsoUtc(job.window.from), to: toIsoUtc(job.window.to) }, records: page.rejected },
      });
      watermark = after.watermark;
      outcome.watermark = isoUtcOrNull(watermark);
      counted(outcome, page);
      if (complete) outcome.windows += 1;
      emit(ctx, outcome, windowsTotal, windowsDoneBefore + outcome.windows);
    },
  }, ctx.signal);
}
