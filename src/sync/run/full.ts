import type { IsoUtc, SyncState, SyncStateUpdate } from '../../store/types.ts';
import { PageContract } from '../contract.ts';
import { fetchPage, type FetchedPage } from '../fetch.ts';
import { effectivePageSize } from '../paging/index.ts';
import { partitionContext } from '../records.ts';
import { placeholderSettingsOf } from '../settings.ts';
import { keyFieldsOf, targetOf, type AnyStream } from '../stream.ts';
import { commitSpan, limitsOf, Tally, validatorOf } from './parts.ts';
import { runPipeline } from './pipeline.ts';
import type { RunIdentity, RunResult, StreamRunContext } from './types.ts';

export interface FullRunInput {
  ctx: StreamRunContext;
  stream: AnyStream;
  run: RunIdentity;
  /** The stream's stored state, as read before the run. */
  stored: SyncState | undefined;
  /** When the run started: every row of this listing is stamped with it. */
  startedAt: IsoUtc;
  runId: number;
  /**
   * A fan-out stream's partition: the parent key this listing is read for (its state is under `run.stateKey`). Its
   * listing is one parent's children, so it soft-deletes nothing: the stream does once every parent's is complete.
   */
  parent?: string;
}

/**
 * Reads a full stream's whole listing page by page, each page committed as it comes; a complete listing may then mark
 * the rows it did not hold deleted. Returns what it committed and how it ended.
 */
export async function runFull(input: FullRunInput): Promise<RunResult> {
  const tally = new Tally(input.ctx, input.run, input.stored?.watermark ?? null, input.stream.sink);
  try {
    return tally.result(await readListing(input, tally));
  } catch (error) {
    return tally.result('failed', { error });
  }
}

async function readListing(input: FullRunInput, tally: Tally): Promise<'succeeded' | 'interrupted'> {
  const { ctx, stream, stored, startedAt, runId, parent } = input;
  const variables = {
    ...stream.variables({ settings: placeholderSettingsOf(ctx.settings) }),
    ...(parent !== undefined && stream.partition && { [stream.partition.variable]: parent }),
  };
  const validate = validatorOf(stream);
  const context = parent === undefined ? undefined : partitionContext(parent);
  // The watermark of a full stream is the start of its last complete listing; forward only.
  const finalWatermark = stored?.watermark && stored.watermark > startedAt ? stored.watermark : startedAt;
  const contract = new PageContract({
    where: parent === undefined ? 'the listing' : `the listing of ${stream.partition?.variable} ${parent}`,
    style: stream.paging,
    validate: context ? (node) => validate(node, context) : validate,
    keyFields: keyFieldsOf(stream),
    startCursor: null,
    limits: limitsOf(ctx.settings),
  });
  const pageSize = effectivePageSize(stream.paging, ctx.settings.pageSize);
  let rejected = 0;
  const result = await runPipeline<string | null, FetchedPage>(null, {
    fetch: (cursor, signal) =>
      fetchPage({ stream, client: ctx.client, document: ctx.document, variables, pageSize, position: cursor, signal, contract, now: () => ctx.clock.now() }),
    next: (page) => page.next ?? undefined,
    commit: async (page) => {
      const last = page.next === null;
      await commitSpan(page, null, () => ctx.store.commitPage({
        customerId: ctx.customerId,
        sink: stream.sink,
        ...(stream.table && { table: stream.table }),
        records: page.records,
        // Every row of this listing is stamped with the run start, so "not seen since the run start" is exact.
        at: startedAt,
        checkpoint: checkpointOf(ctx.customerId, input.run.stateKey, stored, { watermark: last ? finalWatermark : (stored?.watermark ?? null) }),
        runId,
        quarantine: { stream: stream.name, window: null, records: page.rejected },
      }));
      rejected += page.rejected.length;
      tally.committed(page, last ? finalWatermark : tally.watermark);
      tally.emit(1, last ? 1 : 0);
    },
  }, ctx.signal);
  if (result === 'done' && parent === undefined && stream.softDelete?.isComplete(variables)) await softDelete(input, rejected);
  return result === 'done' ? 'succeeded' : 'interrupted';
}

/** Marks the rows a complete listing (a fan-out stream's: every parent's) did not hold deleted, unless some were rejected. */
export async function softDelete(input: Pick<FullRunInput, 'ctx' | 'stream' | 'startedAt'>, rejected: number): Promise<void> {
  const { ctx, stream, startedAt } = input;
  if (rejected > 0) {
    // A rejected row is not a missing row: its building may well exist. Deleting on this listing would invent it.
    ctx.logger.warn({ customer: ctx.customerId, stream: stream.name, rejected }, 'the listing had rejected records: soft deletes skipped this run');
    return;
  }
  const deleted = await ctx.store.markDeleted(targetOf(stream), ctx.customerId, startedAt, startedAt);
  if (deleted) ctx.logger.info({ customer: ctx.customerId, stream: stream.name, deleted }, 'rows missing from the complete listing marked deleted');
}

function checkpointOf(customerId: string, stateKey: string, state: SyncState | undefined, patch: Partial<SyncStateUpdate>): SyncStateUpdate {
  return {
    customerId,
    stateKey: stateKey,
    watermark: state?.watermark ?? null,
    windowStart: null,
    windowEnd: null,
    pageCursor: null,
    rangeStart: state?.rangeStart ?? null,
    rangeEnd: state?.rangeEnd ?? null,
    ...patch,
  };
}
