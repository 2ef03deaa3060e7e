import { ContractViolation, GraphQLResponseError, messageOf, type ContractRule } from '../errors.ts';
import { toIsoUtc, type IsoUtc } from '../time.ts';
import { PageContract, type ContractWindow } from './contract.ts';
import { fetchPage, type GraphQLRequester } from './fetch.ts';
import { effectivePageSize } from './paging/index.ts';
import { apiPathOf, compileRecord, partitionContext, type FieldSpec } from './records.ts';
import { limitsOf, validatorOf } from './run/parts.ts';
import { placeholderSettingsOf, type EngineSettings } from './settings.ts';
import { DEFAULT_WINDOW, keyFieldsOf, type AnyStream } from './stream.ts';
import { stepOffGrid } from './run/plan.ts';

/**
 * One real page of a stream, read and checked exactly as a run reads it (the stream's paging style, the page
 * contract, the record declaration), and nothing stored: what `occupancy-sync check` asks of every stream in force.
 * An incremental stream reads its most recent settled window (one step before now - settle delay), a full stream the
 * first page of its listing, both with a small page so the probe costs little; when a run asks for more a page, the
 * same first page is asked for once more at that size, which the API may refuse (a documented limit of 100, say).
 */

/** Records a probe page asks for at most (the stream's own page size when smaller, never above its maxPageSize). */
export const PROBE_PAGE_SIZE = 10;
/** How many rejection reasons a probe keeps: the first few say what is wrong; the count says how much. */
const REASONS_KEPT = 3;
/** How many distinct statuses a probe keeps: a status field with more is not a status. */
export const STATUSES_KEPT = 20;

export interface ProbeOptions {
  stream: AnyStream;
  client: GraphQLRequester;
  /** The stream's parsed document, as the client sends it. */
  document: unknown;
  settings: EngineSettings;
  now: () => number;
  signal: AbortSignal;
  /** A fan-out stream's parent key to probe with (one of its parent stream's records); required for such a stream. */
  parent?: string;
}

export interface ProbeResult {
  stream: string;
  /** The window read (incremental streams); `endInclusive`: the API reads records at `to` too. */
  window?: { from: IsoUtc; to: IsoUtc; endInclusive: boolean };
  /** Records asked for (a single page asks for none: the API answers all, up to its maxPageSize). */
  pageSize: number | undefined;
  /** Records in the answer, those that passed their declaration, and those rejected with the first reasons. */
  nodes: number;
  records: number;
  rejected: number;
  reasons: string[];
  /** The record fields (columns) the rejected records break, in the declaration's order. */
  fields: string[];
  /** The style found a next page. */
  more: boolean;
  /**
   * Streams of readings (sink occupancy): the distinct occupancy statuses the records read would be stored as (after
   * the value map), in the order first seen, from every page the probe read; at most STATUSES_KEPT. `check` names
   * those that are not canonical (src/statuses.ts).
   */
  statuses?: string[];
  /**
   * The page size a run asks for, when larger than the probe's: the first page was asked for once more at that size,
   * to see the API accepts it (a refusal is the `failure`).
   */
  runPageSize?: number;
  /** The first record that passed its declaration: a fan-out stream over this one probes with its parent key. */
  first?: Record<string, unknown>;
  /** A fan-out stream: the parent key it probed with. */
  parent?: string;
  /** The request was refused (GraphQL errors), failed, or its answer broke the page contract. */
  failure?: { kind: 'contract' | 'refused' | 'request'; reason?: ContractRule; message: string; fix?: string };
}

/** Reads one page of the stream; every failure is in the result, only an abort is thrown. */
export async function probeStream(options: ProbeOptions): Promise<ProbeResult> {
  const { stream, settings } = options;
  const style = stream.paging;
  const pageSize = Math.min(effectivePageSize(style, settings.pageSize), PROBE_PAGE_SIZE);
  const result: ProbeResult = { stream: stream.name, pageSize: 'pageSize' in style.roles ? pageSize : undefined, nodes: 0, records: 0, rejected: 0, reasons: [], fields: [], more: false };
  const windowed = probeWindow(options, result);
  if (windowed === null) return result;
  const partition = stream.partition && options.parent !== undefined ? { variable: stream.partition.variable, parent: options.parent } : undefined;
  if (partition) result.parent = partition.parent;
  const read = pageReader(options, result, windowed, partition);
  const sample = statusSampler(stream, result);
  try {
    const page = await read(pageSize);
    sample(page.records);
    result.nodes = page.nodes;
    result.records = page.records.length;
    result.rejected = page.rejected.length;
    result.reasons = [...new Set(page.rejected.map((r) => r.reason))].slice(0, REASONS_KEPT);
    result.fields = brokenFields(stream, page.rejected.slice(0, REASONS_KEPT).map((r) => r.raw));
    result.more = page.next !== null;
    if (page.records[0] !== undefined) result.first = page.records[0] as unknown as Record<string, unknown>;
  } catch (error) {
    options.signal.throwIfAborted();
    result.failure = failureOf(error);
    return result;
  }
  // A run asks for more records a page than the probe did: an API that refuses that many ("first must be between 1
  // and 100") would fail every run while the small probe passed. The same first page again, at the run's size.
  const runSize = effectivePageSize(style, settings.pageSize);
  if (runSize > pageSize && style.variableNames.pageSize !== undefined) {
    result.runPageSize = runSize;
    try {
      // The larger page samples more of the statuses, at no extra request.
      sample((await read(runSize)).records);
    } catch (error) {
      options.signal.throwIfAborted();
      const failure = failureOf(error);
      result.failure = { ...failure, message: `with the page size a run asks for (${runSize}): ${failure.message}` };
    }
  }
  return result;
}

type ProbeWindow = { window: ContractWindow; bounds: { from: number; to: number } } | undefined;

/**
 * The window an incremental stream's probe asks for: the last settled step before now (`result.window` names it);
 * undefined for a listing; null when the step is off the stream's grid (`result.failure` says so).
 */
function probeWindow(options: ProbeOptions, result: ProbeResult): ProbeWindow | null {
  const { stream, settings } = options;
  if (stream.kind !== 'incremental') return undefined;
  const spec = stream.window ?? DEFAULT_WINDOW;
  const stepMs = spec.stepMs ?? settings.stepMs;
  const offGrid = stepOffGrid(stepMs, spec.gridMs);
  if (offGrid) {
    result.failure = { kind: 'request', message: offGrid.detail, fix: offGrid.fix };
    return null;
  }
  const to = Math.floor((options.now() - settings.settleDelayMs) / spec.gridMs) * spec.gridMs;
  const bounds = { from: to - stepMs, to };
  const cursorField = stream.cursorField as string;
  const window: ContractWindow = { from: toIsoUtc(bounds.from), to: toIsoUtc(to), endSlackMs: spec.endSlackMs, cursorField, apiPath: apiPathOf(stream.record as never, cursorField as never) };
  result.window = { from: window.from, to: window.to, endInclusive: spec.endInclusive };
  return { window, bounds };
}

/** Reads the stream's first page at a given size, under the page contract a run reads it with (rejected records counted, not fatal). */
function pageReader(options: ProbeOptions, result: ProbeResult, windowed: ProbeWindow, partition: { variable: string; parent: string } | undefined) {
  const { stream, settings } = options;
  const window = windowed?.window;
  const bounds = windowed?.bounds;
  const validateNode = validatorOf(stream);
  const context = partition && partitionContext(partition.parent);
  return (size: number) =>
    fetchPage({
      stream,
      client: options.client,
      document: options.document,
      variables: {
        ...stream.variables({ settings: placeholderSettingsOf(settings), ...(bounds && { window: bounds }) }),
        ...(partition && { [partition.variable]: partition.parent }),
      },
      pageSize: size,
      position: null,
      signal: options.signal,
      contract: new PageContract<unknown>({
        where: window ? `probe window [${window.from}, ${window.to}${result.window!.endInclusive ? ']' : ')'}` : "the listing's first page",
        style: stream.paging,
        validate: context ? (node) => validateNode(node, context) : validateNode,
        keyFields: keyFieldsOf(stream),
        ...(window && { window }),
        startCursor: null,
        // Rejected records are counted and reported here, never a reason to stop reading the page.
        limits: { ...limitsOf(settings), onRejected: 'quarantine', maxRejectedShare: 1, minRejectedForShare: Number.POSITIVE_INFINITY },
      }),
      now: options.now,
    });
}

/** Keeps the occupancy statuses the probe's records carry in `result.statuses` (at most STATUSES_KEPT); a no-op for other sinks. */
function statusSampler(stream: AnyStream, result: ProbeResult): (records: readonly unknown[]) => void {
  const statuses = stream.sink === 'occupancy' ? new Set<string>() : undefined;
  return (records) => {
    if (!statuses) return;
    for (const r of records) {
      const status = (r as { occupancyStatus?: unknown }).occupancyStatus;
      if (typeof status === 'string' && statuses.size < STATUSES_KEPT) statuses.add(status);
    }
    result.statuses = [...statuses];
  };
}

/**
 * Which declared fields the rejected records break, field by field: a reason names the API path only, and two columns
 * may read the same path (a count mapped to the status field).
 */
function brokenFields(stream: AnyStream, raws: string[]): string[] {
  const nodes = raws.flatMap((raw) => {
    try {
      return [JSON.parse(raw) as unknown];
    } catch {
      return []; // cut at the quarantine's size limit: its reason still says what broke
    }
  });
  const broken = Object.entries(stream.record as Record<string, FieldSpec>).filter(([field, spec]) => {
    const validate = compileRecord<Record<string, unknown>>({ [field]: spec });
    return nodes.some((node) => !validate(node).ok);
  });
  return broken.map(([field]) => field);
}

function failureOf(error: unknown): NonNullable<ProbeResult['failure']> {
  if (error instanceof ContractViolation) {
    // The run's message says what happens to the window (nothing stored, retried); a probe stores nothing anyway.
    const fix = /\. Fix: (.*)$/s.exec(error.message)?.[1];
    return { kind: 'contract', reason: error.reason, message: `the answer broke the page contract (${error.reason}): ${error.detail}`, ...(fix && { fix }) };
  }
  // fetchPage names the stream; the probe's reader already knows it.
  const message = messageOf(error).replace(/^stream [^:]+: /, '');
  const [what, fix] = splitFix(message);
  return { kind: error instanceof GraphQLResponseError ? 'refused' : 'request', message: what, ...(fix && { fix }) };
}

/** `what. Fix: how` as its two parts (the fix, when the message has one). */
function splitFix(message: string): [string, string | undefined] {
  const at = message.lastIndexOf('. Fix: ');
  return at < 0 ? [message, undefined] : [message.slice(0, at), message.slice(at + '. Fix: '.length)];
}
