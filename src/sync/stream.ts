import type { Config } from '../config.ts';
import type { IsoUtc, SinkName, SinkRecords } from '../store/types.ts';
import type { RecordSpec } from './records.ts';

/**
 * A stream is declared in `jobs/streams.yaml` (or a user's definitions file; src/sync/definitions.ts turns either into
 * a StreamDefinition) and run by the generic engine (src/sync/engine.ts). Adding a stream for a new query means a
 * `.graphql` document and an entry in the definitions; the engine is not touched.
 */

/** How the stream's rows are selected on each run. */
export type StreamKind =
  /** The whole listing is read on every run; rows that vanished from a complete listing can be soft-deleted. */
  | 'full-refresh'
  /** Time windows from the watermark (minus a lookback) to now (minus a settle delay); see src/sync/windows.ts. */
  | 'incremental-window';

/**
 * Nested lists between the answer's list and the records (declarative definitions: `buildings[].floorSpaces[].readings`):
 * each entry leads from an element of the previous list to the next list. The records are the elements of the last
 * list, each carrying the element it was found in under `$parent` (src/sync/contract.ts `flattenNested`).
 */
export type NestedLists = ReadonlyArray<readonly string[]>;

export type Paging =
  /** One request returns everything; `path` leads from `data` to the list of nodes. */
  | { style: 'single'; path: readonly string[]; each?: NestedLists }
  /**
   * Relay-style connection: `connection` leads from `data` to an object with `nodes` and
   * `pageInfo { hasNextPage endCursor }`; the engine sets `pageSizeVar` and `cursorVar`.
   */
  | { style: 'relay'; connection: readonly string[]; pageSizeVar: string; cursorVar: string; each?: NestedLists }
  /**
   * Offset paging: `path` leads from `data` to the list; the engine sets `limitVar` (the page size) and `offsetVar`
   * (records read so far in the window), and stops at a page holding fewer records than the limit.
   */
  | { style: 'offset'; path: readonly string[]; offsetVar: string; limitVar: string; each?: NestedLists };

/** The part of the configuration a variables builder may use. */
export type StreamSettings = Config['sync'];

export interface VariablesInput {
  settings: StreamSettings;
  /** The half-open window [from, to) being read; only for incremental-window streams. */
  window?: { from: IsoUtc; to: IsoUtc };
}

export interface StreamDefinition<S extends SinkName = SinkName> {
  /** Unique; also the lock and state key (`occupancy`, and `occupancy#backfill` for backfills). */
  name: string;
  /** Absolute path of the GraphQL document (one named operation). */
  document: string;
  sink: S;
  kind: StreamKind;
  paging: Paging;
  /** Variables for one request, without the paging variables (the engine adds those). */
  variables(input: VariablesInput): Record<string, unknown>;
  /**
   * One API node to one row of the sink, declared field by field with types (src/sync/records.ts). A node that breaks
   * it is quarantined with the reason, never coerced.
   */
  record: RecordSpec<SinkRecords[S]>;
  /**
   * The record field the windows are cut on (incremental-window streams): every record of an answer must lie inside
   * the window it was asked for (the page contract).
   */
  cursorField?: keyof SinkRecords[S] & string;
  /**
   * Full-refresh streams: rows missing from a complete listing get `deleted_at`. `isComplete` decides from the
   * request variables whether the listing was complete (a filtered listing is not).
   */
  softDelete?: { isComplete(variables: Record<string, unknown>): boolean };
}

/** Any stream, whatever its sink: what the registry and the engine hold. */
export type AnyStream = { [S in SinkName]: StreamDefinition<S> }[SinkName];

/** Identity helper that ties the record declaration to the sink's row type in a job file. */
export function defineStream<S extends SinkName>(definition: StreamDefinition<S>): StreamDefinition<S> {
  if (definition.kind === 'incremental-window') {
    const cursor = definition.cursorField;
    if (!cursor) throw new Error(`stream ${definition.name}: an incremental-window stream needs a cursorField`);
    if ((definition.record as Record<string, { type: string }>)[cursor]?.type !== 'timestamp') {
      throw new Error(`stream ${definition.name}: cursorField ${cursor} must be a timestamp field of the record`);
    }
  }
  return definition;
}
