import { UsageError, messageOf } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import { globalSecrets } from '../../logger.ts';
import type { IsoUtc, SyncState } from '../../store/types.ts';
import { partitionStateKey, runKeyOf, type AnyStream } from '../stream.ts';
import { storedBackfill } from './stored-backfill.ts';
import type { ProgressEvent, RunIdentity, RunRequest, RunResult, StreamRunContext } from './types.ts';
import { emptyCounts, mergeUnmapped } from './parts.ts';
import { runWindowed } from './windowed.ts';
import { runFull, softDelete } from './full.ts';
import { placeholderSettingsOf } from '../settings.ts';

export interface PartitionedRunInput {
  ctx: StreamRunContext;
  stream: AnyStream;
  request: RunRequest;
  /** The stream's run: its state key is the partitions' run key (`space-readings`, `space-readings#backfill`). */
  run: RunIdentity;
  runId: number;
  log: Logger;
  /** When the run started: a full stream's listings are stamped with it, and rows not seen since are soft-deleted. */
  startedAt: IsoUtc;
}

/** Parents tried one after the other, alone, before the run gives up on a request nobody can answer. */
const MAX_LEADS = 3;
/** Parents named in a failed run's note. */
const NAMED = 5;

interface Partition {
  parent: string;
  key: string;
  stored: SyncState | undefined;
}

type PartitionResult = Partition & { result: RunResult };

/**
 * Reads a fan-out stream (docs/sync.md, "Fan-out streams"): one windowed run (windowed.ts) per parent, each under its
 * own state key (`<run key>/<parent>`), so each parent has its own watermark, window in flight and cursor. The parents
 * are the parent stream's listed rows as stored now (`store.listedValues`): a new parent has no state and starts where
 * a new stream does (SYNC_INITIAL_HISTORY, or the backfill's range), a soft-deleted one is not read (its state stays).
 *
 * The parents share the stream's SYNC_WINDOW_CONCURRENCY: up to that many parents at once, each with its share of the
 * windows and of SYNC_MAX_PENDING_RECORDS, so a thousand spaces are never a thousand requests in flight. One parent is
 * read alone until a page commits (a request the platform refuses fails once, not once per parent); if the first
 * MAX_LEADS parents fail before any commit, the rest wait for the next run. Otherwise a parent's failure stops only that
 * parent: the others are read and committed, and the run fails naming the parents that did. Parents are taken from an
 * offset that moves with the run, so a parent that always fails cannot always be first. Does not throw.
 */
export async function runPartitioned(input: PartitionedRunInput): Promise<RunResult> {
  const { ctx, stream } = input;
  const spec = stream.partition!;
  const found = await partitionsToRead(input);
  if ('status' in found) return found;
  const total = Math.max(1, ctx.settings.windowConcurrency ?? 1);
  const pool = Math.min(total, found.queue.length);
  const read = await readPartitions(input, found.queue, pool);
  const result = combine(read.results, { parents: found.parents, unread: found.queue.length, halted: read.halted, interrupted: ctx.signal?.aborted === true, variable: spec.variable });
  // A full fan-out's listing is complete only when every parent's is: then the children of parents gone go too.
  if (stream.kind === 'full' && result.status === 'succeeded' && found.queue.length === 0 && stream.softDelete?.isComplete(stream.variables({ settings: placeholderSettingsOf(ctx.settings) }))) {
    try {
      await softDelete(input, result.rejected);
    } catch (error) {
      return { ...result, status: 'failed', error };
    }
  }
  return result;
}

/**
 * The partitions this run reads, in the order it takes them (from an offset that moves with the run), and how many
 * parents are listed; or the run's result when there is nothing to read or a backfill of another range is stored.
 */
async function partitionsToRead(input: PartitionedRunInput): Promise<{ parents: number; queue: Partition[] } | RunResult> {
  const { ctx, stream, request, run, log } = input;
  const spec = stream.partition!;
  const empty = emptyCounts(null);
  let parents: string[];
  let states: Map<string, SyncState>;
  try {
    parents = await ctx.store.listedValues(spec.parentSink, spec.parentKey, ctx.customerId);
    const stored = await ctx.store.listStates(ctx.customerId);
    states = new Map(stored.filter((s) => s.stateKey !== run.stateKey && runKeyOf(s.stateKey) === run.stateKey).map((s) => [s.stateKey, s]));
  } catch (error) {
    return { ...empty, status: 'failed', error };
  }
  if (parents.length === 0) {
    const note = `no parents: stream ${spec.parent} has listed none`;
    log.warn({ parent: spec.parent }, `${note}, so there is nothing to read (it runs before ${stream.name} in a full sync; check its listing)`);
    return { ...empty, status: 'succeeded', note };
  }
  const todo: Partition[] = [];
  for (const parent of parents) {
    const key = partitionStateKey(run.stateKey, parent);
    const stored = states.get(key);
    if (request.mode === 'backfill' && !request.restart) {
      const refused = storedBackfill(stored, request);
      if (refused?.status === 'failed') {
        const error = new UsageError(`${key}: ${(refused.error as Error).message}`, { cause: refused.error });
        return { ...empty, status: 'failed', error };
      }
      if (refused) continue;
    }
    todo.push({ parent, key, stored });
  }
  if (todo.length === 0) return { ...empty, status: 'succeeded', note: 'complete' };
  const offset = input.runId % todo.length;
  return { parents: parents.length, queue: [...todo.slice(offset), ...todo.slice(0, offset)] };
}

/**
 * Reads the queue's partitions with `pool` readers, each partition with its share of the stream's windows and pending
 * records; the first reader alone until a page commits. Takes the partitions it reads off `queue`.
 */
async function readPartitions(input: PartitionedRunInput, queue: Partition[], pool: number): Promise<{ results: PartitionResult[]; halted: boolean }> {
  const { ctx, stream, request, run, log } = input;
  const spec = stream.partition!;
  const settings = shareOf(ctx.settings, pool);
  const progress = new ProgressSum((sum) => ctx.onProgress?.({ ...run, ...sum }));
  const gate = new Gate();
  const results: PartitionResult[] = [];
  let leadFailures = 0;
  let halted = false;

  const readOne = async (p: Partition): Promise<RunResult> => {
    const onProgress = (event: ProgressEvent) => {
      if (event.pages > 0) gate.open();
      progress.set(p.parent, event);
    };
    const partCtx: StreamRunContext = { ...ctx, settings, onProgress };
    const partRun = { ...run, stateKey: p.key };
    const result =
      stream.kind === 'full'
        ? await runFull({ ctx: partCtx, stream, run: partRun, stored: p.stored, startedAt: input.startedAt, runId: input.runId, parent: p.parent })
        : await runWindowed({ ctx: partCtx, stream, request, run: partRun, stored: p.stored, runId: input.runId, log: log.child({ stateKey: p.key }), parent: p.parent });
    results.push({ ...p, result });
    if (result.status === 'failed') {
      const message = globalSecrets.scrub(messageOf(result.error));
      log.error({ err: result.error, stateKey: p.key, pages: result.pages }, `${spec.variable} ${p.parent} failed: ${message}`);
    }
    return result;
  };
  const worker = async (lead: boolean) => {
    if (!lead) await gate.opened(ctx.signal);
    while (!halted && ctx.signal?.aborted !== true && queue.length > 0) {
      const result = await readOne(queue.shift()!);
      if (gate.isOpen) continue;
      // Still alone: a parent that read nothing and failed may have met a request the platform refuses to anyone.
      if (result.status === 'failed' && result.pages === 0) {
        leadFailures += 1;
        if (leadFailures >= MAX_LEADS) halted = true;
        else continue;
      }
      gate.open();
    }
  };
  await Promise.all(Array.from({ length: pool }, (_, i) => worker(i === 0)));
  return { results, halted };
}

/** A partition's share of the stream's windows in parallel and of its pending records, `pool` partitions at once. */
function shareOf(settings: StreamRunContext['settings'], pool: number): StreamRunContext['settings'] {
  const total = Math.max(1, settings.windowConcurrency ?? 1);
  const maxPending = settings.maxPendingRecords;
  return {
    ...settings,
    windowConcurrency: Math.max(1, Math.floor(total / pool)),
    ...(maxPending !== undefined && { maxPendingRecords: Math.max(1, Math.floor(maxPending / pool)) }),
  };
}

/** The stream's progress: the partitions' latest events summed, as one stream's (what a progress line and metrics read). */
class ProgressSum {
  readonly #events = new Map<string, ProgressEvent>();
  constructor(readonly emit: (sum: Pick<ProgressEvent, 'pages' | 'records' | 'windowsDone' | 'windowsTotal'>) => void) {}

  set(parent: string, event: ProgressEvent): void {
    this.#events.set(parent, event);
    const sum = { pages: 0, records: 0, windowsDone: 0, windowsTotal: 0 };
    for (const e of this.#events.values()) {
      sum.pages += e.pages;
      sum.records += e.records;
      sum.windowsDone += e.windowsDone;
      sum.windowsTotal += e.windowsTotal;
    }
    this.emit(sum);
  }
}

/** The stream's result from its partitions': counts summed, the lowest watermark, and the parents that failed. */
function combine(
  results: ReadonlyArray<PartitionResult>,
  how: { parents: number; unread: number; halted: boolean; interrupted: boolean; variable: string },
): RunResult {
  const counts = { pages: 0, records: 0, rejected: 0, unmapped: 0, windows: 0 };
  const unmappedStatuses: string[] = [];
  let watermark: IsoUtc | null | undefined;
  for (const { result } of results) {
    counts.pages += result.pages;
    counts.records += result.records;
    counts.rejected += result.rejected;
    counts.unmapped += result.unmapped;
    mergeUnmapped(unmappedStatuses, result.unmappedStatuses);
    counts.windows += result.windows;
    // Everything before the stream's watermark is stored for every parent read: the lowest, null when one has none.
    watermark = watermark === undefined ? result.watermark : watermark === null || result.watermark === null ? null : result.watermark < watermark ? result.watermark : watermark;
  }
  const base = { ...counts, unmappedStatuses, watermark: watermark ?? null };
  const failed = results.filter((r) => r.result.status === 'failed');
  const read = `${results.length} of ${how.parents} parent(s) read`;
  if (failed.length > 0) {
    const names = failed.slice(0, NAMED).map((f) => f.parent).join(', ') + (failed.length > NAMED ? ', …' : '');
    const unread = how.halted ? `; the other ${how.unread} wait for the next run: the first ${failed.length} failed before any page committed` : '';
    const note = `${read}, ${failed.length} failed (${how.variable} ${names}): what every parent committed before is stored${unread}`;
    return { ...base, status: 'failed', note, error: failed[0]!.result.error };
  }
  if (how.interrupted && (how.unread > 0 || results.some((r) => r.result.status === 'interrupted'))) {
    return { ...base, status: 'interrupted', note: `${read}; the next run resumes every parent at its last committed page` };
  }
  return { ...base, status: 'succeeded', note: read };
}

/** Opens once; the readers after the first wait on it (or on the run's signal). */
class Gate {
  #open = false;
  #resolve!: () => void;
  readonly #opened = new Promise<void>((resolve) => (this.#resolve = resolve));

  get isOpen(): boolean {
    return this.#open;
  }

  open(): void {
    this.#open = true;
    this.#resolve();
  }

  opened(signal: AbortSignal | undefined): Promise<void> {
    if (!signal) return this.#opened;
    if (signal.aborted) return Promise.resolve();
    return Promise.race([this.#opened, new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))]);
  }
}
