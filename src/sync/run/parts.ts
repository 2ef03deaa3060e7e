import type { PagingLimits } from './contract.ts';
import type { FetchedPage } from './fetch.ts';
import { compileRecord, type RecordValidator } from './records.ts';
import type { EngineSettings } from './settings.ts';
import type { AnyStream } from './stream.ts';
import type { StreamOutcome, StreamRunContext } from './stream-run.ts';
import { inSpan } from '../tracing.ts';

/** Small pieces shared by the full and the windowed runners. */

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

export function emit(ctx: StreamRunContext, outcome: StreamOutcome, windowsTotal: number, windowsDone = outcome.windows): void {
  ctx.onProgress?.({
    customerId: ctx.customerId,
    stream: outcome.stream,
    stateKey: outcome.stateKey,
    mode: outcome.mode,
    pages: outcome.pages,
    records: outcome.records,
    windowsDone,
    windowsTotal,
  });
}

export function counted(outcome: StreamOutcome, page: FetchedPage): void {
  outcome.pages += 1;
  outcome.records += page.records.length;
  outcome.rejected += page.rejected.length;
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
      ...(window && { 'window.from': new Date(window.from).toISOString(), 'window.to': new Date(window.to).toISOString() }),
    },
    () => commit(),
  );
}
