import type { Clock } from '../clock.ts';
import { UsageError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { globalSecrets } from '../logger.ts';
import type { IsoUtc, RunMode, Store, SyncState, SyncStateUpdate } from '../store/types.ts';
import { sinkKey } from '../store/sinks.ts';
import { epochMsOrNull, toIsoUtc } from '../time.ts';
import { PageContract } from './contract.ts';
import { fetchPage, type FetchedPage, type GraphQLRequester } from './fetch.ts';
import { effectivePageSize } from './paging/index.ts';
import { runPipeline } from './pipeline.ts';
import { commitSpan, counted, emit, limitsOf, validatorOf } from './run-parts.ts';
import { tracer } from '../tracing.ts';
import { streamSettingsOf, type EngineSettings } from './settings.ts';
import type { AnyStream } from './stream.ts';
import { runWindowed } from './windowed-run.ts';

/** `restart`: a backfill starts over even when a backfill of another (or the same, complete) range is stored. */
export type RunRequest = { mode: 'incremental' } | { mode: 'backfill'; from: number; to: number; restart?: boolean };

/** `skipped`: not run because a concurrent run holds an optional lock (a backfill's refresh of buildings). */
export type OutcomeStatus = 'succeeded' | 'failed' | 'interrupted' | 'locked' | 'skipped';

export interface StreamOutcome {
  customerId: string;
  /** The stream's name (`occupancy`). */
  stream: string;
  /** Its state and lock key: the name, or `occupancy#backfill` for a backfill (see `stateKey`). */
  stateKey: string;
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
  /** The stream's name (`occupancy`). */
  stream: string;
  /** Its state and lock key (`occupancy#backfill` for a backfill). */
  stateKey: string;
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
  settings: EngineSettings;
  signal?: AbortSignal;
  customerId: string;
  client: GraphQLRequester;
  document: unknown;
  onProgress?(event: ProgressEvent): void;
}

/** The state and lock key of a stream's run: its name, or `<name>#backfill` for a backfill. */
export function stateKey(stream: string, request: RunRequest): string {
  return request.mode === 'backfill' ? `${stream}#backfill` : stream;
}


/** Runs one stream for one customer (the caller holds the lock) and records the run in sync_runs. */
export async function runStream(ctx: StreamRunContext, stream: AnyStream, request: RunRequest): Promise<StreamOutcome> {
  const key = stateKey(stream.name, request);
  const mode: RunMode = request.mode === 'backfill' ? 'backfill' : stream.kind;
  const log = ctx.logger.child({ customer: ctx.customerId, stream: stream.name, stateKey: key });
  const startedAt = toIsoUtc(ctx.clock.now());
  const state = await ctx.store.getState(ctx.customerId, key);
  const outcome: StreamOutcome = {
    customerId: ctx.customerId,
    stream: stream.name,
    stateKey: key,
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
  const span = tracer().start('sync.stream', { 'customer.id': ctx.customerId, 'stream.name': stream.name, 'stream.key': key, 'sync.mode': mode, 'sync.run_id': runId });
  try {
    const result = await span.run(() =>
      stream.kind === 'full' ? fullRefresh(ctx, stream, state, startedAt, runId, outcome) : runWindowed(ctx, stream, request, key, state, runId, outcome, log),
    );
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
    span.fail(new Error(message));
    log.error({ err: error, pages: outcome.pages }, `stream run failed: ${message}`);
    try {
      await ctx.store.finishRun(runId, { status: 'failed', finishedAt: toIsoUtc(ctx.clock.now()), error: message });
    } catch (finishError) {
      log.error({ err: finishError }, 'could not record the failed run');
    }
  } finally {
    span.setAttributes({ 'sync.status': outcome.status, 'sync.pages': outcome.pages, 'sync.records': outcome.records, 'sync.rejected': outcome.rejected });
    span.end();
  }
  return outcome;
}

async function fullRefresh(
  ctx: StreamRunContext,
  stream: AnyStream,
  state: SyncState | undefined,
  startedAt: IsoUtc,
  runId: number,
  outcome: StreamOutcome,
): Promise<'done' | 'interrupted'> {
  const variables = stream.variables({ settings: streamSettingsOf(ctx.settings) });
  // The watermark of a full stream is the start of its last complete listing; forward only.
  const finalWatermark = state?.watermark && state.watermark > startedAt ? state.watermark : startedAt;
  const contract = new PageContract({
    where: 'the listing',
    style: stream.paging,
    validate: validatorOf(stream),
    keyFields: sinkKey(stream.sink),
    startCursor: null,
    limits: limitsOf(ctx.settings),
  });
  const pageSize = effectivePageSize(stream.paging, ctx.settings.pageSize);
  let rejected = 0;
  const result = await runPipeline<string | null, FetchedPage>(null, {
    fetch: (cursor, signal) =>
      fetchPage({ stream, client: ctx.client, document: ctx.document, variables, pageSize, cursor, signal, contract, now: () => ctx.clock.now() }),
    next: (page) => page.next ?? undefined,
    commit: async (page) => {
      const last = page.next === null;
      await commitSpan(page, null, () => ctx.store.commitPage({
        customerId: ctx.customerId,
        sink: stream.sink,
        records: page.records,
        // Every row of this listing is stamped with the run start, so "not seen since the run start" is exact.
        at: startedAt,
        checkpoint: checkpointOf(ctx.customerId, stream.name, state, { watermark: last ? finalWatermark : (state?.watermark ?? null) }),
        runId,
        quarantine: { stream: stream.name, window: null, records: page.rejected },
      }));
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

function checkpointOf(customerId: string, stateKey: string, state: SyncState | undefined, patch: Partial<SyncStateUpdate>): SyncStateUpdate {
  return {
    customerId,
    stream: stateKey,
    watermark: state?.watermark ?? null,
    windowStart: null,
    windowEnd: null,
    pageCursor: null,
    rangeStart: state?.rangeStart ?? null,
    rangeEnd: state?.rangeEnd ?? null,
    ...patch,
  };
}
