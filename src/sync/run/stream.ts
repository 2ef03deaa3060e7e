import { messageOf } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import { globalSecrets } from '../../logger.ts';
import type { RunMode } from '../../store/types.ts';
import { toIsoUtc } from '../../time.ts';
import { tracer, type SpanHandle } from '../../tracing.ts';
import type { AnyStream } from '../stream.ts';
import { runFull } from './full.ts';
import type { RunIdentity, RunRequest, StreamOutcome, StreamRunContext } from './types.ts';
import { emptyCounts } from './parts.ts';
import { runWindowed } from './windowed.ts';
import { runPartitioned } from './partitioned.ts';
import { storedBackfill } from './stored-backfill.ts';

export type { OutcomeStatus, ProgressEvent, RunRequest, StreamOutcome, StreamRunContext } from './types.ts';

/** The state and lock key of a stream's run: its name, or `<name>#backfill` for a backfill. */
export function stateKey(stream: string, request: RunRequest): string {
  return request.mode === 'backfill' ? `${stream}#backfill` : stream;
}

/** Runs one stream for one customer (the caller holds the lock) and records the run in sync_runs. */
export async function runStream(ctx: StreamRunContext, stream: AnyStream, request: RunRequest): Promise<StreamOutcome> {
  const key = stateKey(stream.name, request);
  const mode: RunMode = request.mode === 'backfill' ? 'backfill' : stream.kind;
  const run: RunIdentity = { customerId: ctx.customerId, stream: stream.name, stateKey: key, mode };
  const log = ctx.logger.child({ customer: ctx.customerId, stream: stream.name, stateKey: key });
  const startedAt = toIsoUtc(ctx.clock.now());
  const stored = await ctx.store.getState(ctx.customerId, key);
  const refused = request.mode === 'backfill' && !request.restart ? storedBackfill(stored, request) : undefined;
  if (refused) return { ...run, ...emptyCounts(stored?.watermark ?? null), ...refused };
  const runId = await ctx.store.startRun({ customerId: ctx.customerId, stateKey: key, mode, startedAt });
  const span = tracer().start('sync.stream', { 'customer.id': ctx.customerId, 'stream.name': stream.name, 'stream.key': key, 'sync.mode': mode, 'sync.run_id': runId });
  // The runners return every failure of theirs in their result (with what they had committed); they do not throw.
  const result = await span.run(() =>
    stream.partition
      ? runPartitioned({ ctx, stream, request, run, runId, log, startedAt })
      : stream.kind === 'full'
        ? runFull({ ctx, stream, run, stored, startedAt, runId })
        : runWindowed({ ctx, stream, request, run, stored, runId, log }),
  );
  return recordEnd({ ctx, log, runId, span }, { ...run, ...result });
}

/** Records the run's end in sync_runs, logs it and ends its span; a failure to record a success fails the run. */
async function recordEnd(at: { ctx: StreamRunContext; log: Logger; runId: number; span: SpanHandle }, ran: StreamOutcome): Promise<StreamOutcome> {
  const { ctx, log, runId, span } = at;
  let outcome = ran;
  if (outcome.status !== 'failed') {
    try {
      await ctx.store.finishRun(runId, { status: outcome.status as 'succeeded' | 'interrupted', finishedAt: toIsoUtc(ctx.clock.now()) });
      if (outcome.rejected > 0) {
        log.warn(
          { rejected: outcome.rejected, runId },
          `${outcome.rejected} record(s) broke their declared types and were quarantined (table quarantined_records); the run went on`,
        );
      }
      log.info({ status: outcome.status, pages: outcome.pages, records: outcome.records, rejected: outcome.rejected, watermark: outcome.watermark, note: outcome.note }, 'stream run finished');
    } catch (error) {
      outcome = { ...outcome, status: 'failed', error };
    }
  }
  if (outcome.status === 'failed') {
    const message = globalSecrets.scrub(messageOf(outcome.error));
    span.fail(new Error(message));
    log.error({ err: outcome.error, pages: outcome.pages }, `stream run failed: ${message}`);
    try {
      await ctx.store.finishRun(runId, { status: 'failed', finishedAt: toIsoUtc(ctx.clock.now()), error: message });
    } catch (finishError) {
      log.error({ err: finishError }, 'could not record the failed run');
    }
  }
  span.setAttributes({ 'sync.status': outcome.status, 'sync.pages': outcome.pages, 'sync.records': outcome.records, 'sync.rejected': outcome.rejected });
  span.end();
  return outcome;
}
