import { isCanonicalStatus } from '../../statuses.ts';
import type { IsoUtc, StreamSink } from '../../store/types.ts';
import { toIsoUtc } from '../../time.ts';
import { inSpan } from '../../tracing.ts';
import type { PagingLimits } from '../contract.ts';
import type { FetchedPage } from '../fetch.ts';
import { compileRecord, type RecordValidator } from '../records.ts';
import type { EngineSettings } from '../settings.ts';
import type { AnyStream } from '../stream.ts';
import type { RunCounts, RunIdentity, RunResult, StreamRunContext } from './types.ts';

/** Small pieces shared by the full and the windowed runners (and the probe, which reads a page as a run does). */

/** What a run that committed nothing counted (`unmappedStatuses` a fresh list each time). */
export const EMPTY_COUNTS: Readonly<Omit<RunCounts, 'watermark' | 'unmappedStatuses'>> = { pages: 0, records: 0, rejected: 0, unmapped: 0, windows: 0 };
export const emptyCounts = (watermark: IsoUtc | null): RunCounts => ({ ...EMPTY_COUNTS, unmappedStatuses: [], watermark });

/** How many distinct unmapped statuses a run names: enough to write the map, not a list without end. */
export const UNMAPPED_STATUSES_KEPT = 5;

/** Adds the readings whose stored status is not canonical (nothing mapped it) to a run's counts. */
export function countUnmapped(counts: Pick<RunCounts, 'unmapped' | 'unmappedStatuses'>, records: ReadonlyArray<{ occupancyStatus?: unknown }>): void {
  for (const r of records) {
    const status = r.occupancyStatus;
    if (isCanonicalStatus(status)) continue;
    counts.unmapped += 1;
    const text = String(status);
    if (counts.unmappedStatuses.length < UNMAPPED_STATUSES_KEPT && !counts.unmappedStatuses.includes(text)) counts.unmappedStatuses.push(text);
  }
}

/** Merges another run's unmapped statuses into `into` (a fan-out stream's partitions), keeping the first few. */
export function mergeUnmapped(into: string[], from: readonly string[]): void {
  for (const s of from) if (into.length < UNMAPPED_STATUSES_KEPT && !into.includes(s)) into.push(s);
}

const validators = new WeakMap<AnyStream, RecordValidator<unknown>>();
/** The stream's record declaration compiled once per stream (it runs for every node). */
export function validatorOf(stream: AnyStream): RecordValidator<unknown> {
  let validate = validators.get(stream);
  if (!validate) {
    validate = compileRecord(stream.record as never) as RecordValidator<unknown>;
    validators.set(stream, validate);
  }
  return validate;
}

export function limitsOf(settings: EngineSettings): PagingLimits {
  return {
    maxEmptyPages: 3,
    maxPages: settings.maxPagesPerWindow,
    maxRejectedShare: settings.maxRejectedShare,
    minRejectedForShare: 10,
    onRejected: settings.rejectedRecords,
  };
}

/**
 * What a run has committed so far, and its progress events. Owned by the runner that commits: the caller gets a
 * copy in the run's result (`result`), never this object.
 */
export class Tally {
  readonly #ctx: StreamRunContext;
  readonly #run: RunIdentity;
  readonly #counts: RunCounts;

  readonly #readings: boolean;

  constructor(ctx: StreamRunContext, run: RunIdentity, watermark: IsoUtc | null, sink: StreamSink) {
    this.#ctx = ctx;
    this.#run = run;
    this.#readings = sink === 'occupancy';
    this.#counts = { ...EMPTY_COUNTS, unmappedStatuses: [], watermark };
  }

  get windows(): number {
    return this.#counts.windows;
  }

  get watermark(): IsoUtc | null {
    return this.#counts.watermark;
  }

  /** A page committed; `watermark`: what its checkpoint stored; `windowDone`: its window completed with it. */
  committed(page: FetchedPage, watermark: IsoUtc | null, windowDone = false): void {
    this.#counts.pages += 1;
    this.#counts.records += page.records.length;
    this.#counts.rejected += page.rejected.length;
    if (this.#readings) countUnmapped(this.#counts, page.records as ReadonlyArray<{ occupancyStatus?: unknown }>);
    this.#counts.watermark = watermark;
    if (windowDone) this.#counts.windows += 1;
  }

  emit(windowsTotal: number, windowsDone = this.#counts.windows): void {
    this.#ctx.onProgress?.({ ...this.#run, pages: this.#counts.pages, records: this.#counts.records, windowsDone, windowsTotal });
  }

  result(status: RunResult['status'], extra: { note?: string | undefined; error?: unknown } = {}): RunResult {
    return {
      ...this.#counts,
      unmappedStatuses: [...this.#counts.unmappedStatuses],
      status,
      ...(extra.note !== undefined && { note: extra.note }),
      ...(status === 'failed' && { error: extra.error }),
    };
  }
}

/** A page's commit as a span (rows, quarantined records and checkpoint in one transaction). */
export function commitSpan(page: FetchedPage, window: { from: number; to: number } | null, commit: () => Promise<void>): Promise<void> {
  return inSpan(
    'store.commit',
    {
      'page.number': page.number,
      'page.records': page.records.length,
      'page.rejected': page.rejected.length,
      'page.last': page.next === null,
      ...(window && { 'window.from': toIsoUtc(window.from), 'window.to': toIsoUtc(window.to) }),
    },
    () => commit(),
  );
}
