import { toIsoUtc } from '../../time.ts';
import { tracer, type SpanHandle } from '../../tracing.ts';
import { PageContract } from '../contract.ts';
import { fetchPage, type FetchedPage } from '../fetch.ts';
import { effectivePageSize } from '../paging/index.ts';
import { apiPathOf, partitionContext } from '../records.ts';
import { placeholderSettingsOf } from '../settings.ts';
import { keyFieldsOf, type AnyStream, type WindowSpec } from '../stream.ts';
import { limitsOf, validatorOf } from './parts.ts';
import type { StreamRunContext, WindowProgress } from './types.ts';

/** A page to read: its window, and the checkpoint of the page (null: the window's first). */
export interface PageJob {
  window: WindowProgress;
  cursor: string | null;
}

export interface WindowParts {
  /** Records asked for per page. */
  readonly pageSize: number;
  /** The window's span, from its first request to its last commit (the requests and commits are its children). */
  span(window: WindowProgress): SpanHandle;
  /** One page of a window, checked against the window's page contract. */
  fetch(job: PageJob, signal: AbortSignal): Promise<FetchedPage>;
  /** The window is done with (`how`: complete, failed, interrupted): its contract and span go. */
  end(window: WindowProgress, how: string, error?: unknown): void;
  /** The windows still open when the run ends: failed, or interrupted. */
  endAll(how: string, error?: unknown): void;
}

/**
 * What each window of a run has of its own while it is read: its page contract (built at its first page, dropped
 * when it completes) and its span.
 */
export function windowParts(ctx: StreamRunContext, stream: AnyStream, spec: WindowSpec, parent?: string): WindowParts {
  const validateNode = validatorOf(stream);
  // A fan-out stream's partition: its parent's key goes in the partition's variable and is what `$partition` reads.
  const context = parent === undefined ? undefined : partitionContext(parent);
  const validate = context ? (node: unknown) => validateNode(node, context) : validateNode;
  const partitionVariables = parent !== undefined && stream.partition ? { [stream.partition.variable]: parent } : undefined;
  const cursorField = stream.cursorField as string;
  const apiPath = apiPathOf(stream.record as never, cursorField as never);
  const limits = limitsOf(ctx.settings);
  const pageSize = effectivePageSize(stream.paging, ctx.settings.pageSize);
  const placeholderSettings = placeholderSettingsOf(ctx.settings);
  const contracts = new Map<number, PageContract<unknown>>();
  const spans = new Map<number, { window: WindowProgress; span: SpanHandle }>();
  const contractOf = (w: WindowProgress) => {
    let contract = contracts.get(w.index);
    if (!contract) {
      const from = toIsoUtc(w.from);
      const to = toIsoUtc(w.to);
      contract = new PageContract({
        where: `${parent === undefined ? '' : `${stream.partition?.variable} ${parent}, `}window [${from}, ${to}${spec.endInclusive ? ']' : ')'}`,
        style: stream.paging,
        validate,
        keyFields: keyFieldsOf(stream),
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
    pageSize,
    span(w) {
      let entry = spans.get(w.index);
      if (!entry) {
        entry = { window: w, span: tracer().start('sync.window', { 'window.from': toIsoUtc(w.from), 'window.to': toIsoUtc(w.to), 'window.resumed': w.cursor !== null }) };
        spans.set(w.index, entry);
      }
      return entry.span;
    },
    fetch(job, signal) {
      return fetchPage({
        stream,
        client: ctx.client,
        document: ctx.document,
        variables: {
          ...stream.variables({ settings: placeholderSettings, window: { from: job.window.from, to: job.window.to } }),
          ...partitionVariables,
        },
        pageSize,
        position: job.cursor,
        signal,
        contract: contractOf(job.window),
        now: () => ctx.clock.now(),
      });
    },
    end,
    endAll(how, error) {
      for (const { window } of [...spans.values()]) end(window, how, error);
    },
  };
}
