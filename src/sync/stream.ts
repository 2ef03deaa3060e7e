import { defaultMaxHold, type Sampling } from '../time-weight.ts';
import type { DeclaredTable, SinkRecords, SinkTarget, StreamRecords, StreamSink } from '../store/types.ts';
import { sinkKey } from '../store/columns.ts';
import type { PagingStyle } from './paging/index.ts';
import type { RecordSpec } from './records.ts';
import type { VariablesInput } from './variables.ts';

export type { VariablesInput } from './variables.ts';

/**
 * A stream is declared in `jobs/streams.yaml` (or a user's definitions file; src/sync/definitions.ts turns either into
 * a StreamDefinition) and run by the generic engine (src/sync/engine.ts). Adding a stream for a new query means a
 * `.graphql` document and an entry in the definitions; the engine is not touched.
 */

/** How the stream's rows are selected on each run: the same words as a run's mode (`sync_runs.mode`). */
export type StreamKind =
  /** The whole listing is read on every run; rows that vanished from a complete listing can be soft-deleted. */
  | 'full'
  /** Time windows from the watermark (minus a lookback) to now (minus a settle delay); see src/sync/run/plan.ts. */
  | 'incremental';

/** How an incremental stream's windows are cut and sent. */
export interface WindowSpec {
  /** The API includes records at the end bound (`from <= t <= to`): they are left to the next window, which reads them. */
  endInclusive: boolean;
  /** Window length for this stream; unset: SYNC_STEP. */
  stepMs: number | undefined;
  /** Bounds lie on this grid (epoch ms), so they are exact in the formats they are sent in (a date: whole days). */
  gridMs: number;
  /** With an inclusive end, records in [to, to + endSlackMs) belong to the next window (the end bound's precision). */
  endSlackMs: number;
}

/** Where webhook deliveries of an event type carry this stream's records (validated by the stream's own declaration). */
export interface StreamDeliveries {
  /** The delivery's `Type`, e.g. `Occupancy`. */
  type: string;
  /** The stream's record declaration with the items' paths (`$delivery.` reads the envelope). */
  record: RecordSpec<SinkRecords['occupancy']>;
}

/**
 * A fan-out stream's parents (Airbyte's substream partition router): the query is sent once per parent, with the
 * parent's key in `variable`, and pages that parent's children. The parents are the rows of the parent stream's sink
 * that a listing has seen and not soft-deleted, as stored when the run starts (the parent stream runs first in every
 * run, so a parent listed in this run is read in this run). Each parent is a partition with its own state key
 * (`partitionStateKey`): its watermark, window in flight and cursor.
 */
export interface PartitionSpec {
  /** The parent stream's name (`floor-spaces`). */
  parent: string;
  /** Its sink or declared table, whose stored rows are the parents. */
  parentSink: SinkTarget;
  /** The field of the parent's records whose value each partition sends and stores (`id`). */
  parentKey: string;
  /** The query's variable that takes it (`floorSpaceId`). */
  variable: string;
}

export interface StreamDefinition<S extends StreamSink = StreamSink> {
  /** Unique; also the lock and state key (`occupancy`, and `occupancy#backfill` for backfills). */
  name: string;
  /** Absolute path of the GraphQL document (one named operation). */
  document: string;
  sink: S;
  /** Sink `table`: the table the stream declares, whose columns are its record's fields (docs/tables.md). */
  table?: DeclaredTable;
  kind: StreamKind;
  /** How the listing is paged (src/sync/paging/). */
  paging: PagingStyle;
  /** Variables for one request, without the paging variables (the style adds those). */
  variables(input: VariablesInput): Record<string, unknown>;
  /**
   * One API node to one row of the sink, declared field by field with types (src/sync/records.ts). A node that breaks
   * it is quarantined with the reason, never coerced.
   */
  record: RecordSpec<StreamRecords[S]>;
  /**
   * The record field the windows are cut on (incremental streams): every record of an answer must lie inside the
   * window it was asked for (the page contract).
   */
  cursorField?: keyof StreamRecords[S] & string;
  /** Incremental streams: how windows are cut and what their bounds mean. */
  window?: WindowSpec;
  /**
   * Full streams: rows missing from a complete listing get `deleted_at`. `isComplete` decides from the request
   * variables whether the listing was complete (a filtered listing is not).
   */
  softDelete?: { isComplete(variables: Record<string, unknown>): boolean };
  /** Webhook deliveries that carry this stream's records, when the platform sends them. */
  deliveries?: StreamDeliveries;
  /**
   * How the sensors report (`sampling:` in the definitions; docs/reporting.md, "The hold rule"). Set on every stream
   * that stores readings (sink `occupancy`; `interval` when none is declared), unset on the others.
   */
  sampling?: Sampling;
  /** Interval sensors: the declared `samplingInterval`; unset when none was declared or the sensors report on change. */
  samplingIntervalMs?: number;
  /**
   * How long one reading holds at most (`maxHold:`), in milliseconds: a reading holds until the space's next one or
   * this long, whichever is first; the time beyond is unknown. Default `defaultMaxHold(sampling, samplingIntervalMs)`.
   * Set whenever `sampling` is.
   */
  maxHoldMs?: number;
  /** A fan-out stream: one query per parent, each parent with its own state. */
  partition?: PartitionSpec;
  /**
   * `ifOffered: true`: the API may not offer what the document asks for (an assumed query such as `floors`). When
   * the live schema lacks it, the stream is skipped, with one warning line, instead of failing every run
   * (src/app/offered-streams.ts).
   */
  ifOffered?: boolean;
}

/**
 * The state key of one partition of a fan-out stream: the run's key (`space-readings`, `space-readings#backfill`), a
 * slash and the parent's key. Stream names hold no slash, so the key names its stream and its parent unambiguously.
 */
export function partitionStateKey(runKey: string, parent: string): string {
  return `${runKey}/${parent}`;
}

/** The run key a state key belongs to: a partition's key without its parent, any other key as it is. */
export function runKeyOf(stateKey: string): string {
  const slash = stateKey.indexOf('/');
  return slash === -1 ? stateKey : stateKey.slice(0, slash);
}

/** Any stream, whatever its sink: what the registry and the engine hold. */
export type AnyStream = { [S in StreamSink]: StreamDefinition<S> }[StreamSink];

/** The record fields that, with the customer, identify a row of the stream's sink or table. */
export function keyFieldsOf(stream: AnyStream): readonly string[] {
  return stream.sink === 'table' ? (stream.table?.key ?? []) : sinkKey(stream.sink);
}

/** Where a stream's rows are: its built-in sink, or the table it declares (what the store's reads and writes take). */
export function targetOf(stream: AnyStream): SinkTarget {
  if (stream.sink !== 'table') return stream.sink;
  if (!stream.table) throw new Error(`stream ${stream.name}: sink table without its table declaration`);
  return stream.table;
}

/** The window settings of an incremental stream (exclusive end on the millisecond grid when it declares none). */
export const DEFAULT_WINDOW: WindowSpec = { endInclusive: false, stepMs: undefined, gridMs: 1, endSlackMs: 0 };

/**
 * Ties the record declaration to the sink's row type in a job file, and gives a stream that stores readings the
 * default sampling when it declares none, so `sampling` and `maxHoldMs` are always set on those.
 */
export function defineStream<S extends StreamSink>(definition: StreamDefinition<S>): StreamDefinition<S> {
  if (definition.kind === 'incremental') {
    const cursor = definition.cursorField;
    if (!cursor) throw new Error(`stream ${definition.name}: an incremental stream needs a cursorField`);
    if ((definition.record as Record<string, { type: string }>)[cursor]?.type !== 'timestamp') {
      throw new Error(`stream ${definition.name}: cursorField ${cursor} must be a timestamp field of the record`);
    }
  }
  if (definition.sink === 'occupancy') {
    const sampling = definition.sampling ?? 'interval';
    const maxHoldMs = definition.maxHoldMs ?? defaultMaxHold(sampling, definition.samplingIntervalMs);
    if (definition.sampling !== sampling || definition.maxHoldMs !== maxHoldMs) return { ...definition, sampling, maxHoldMs };
  }
  return definition;
}
