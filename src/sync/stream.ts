import type { Config } from '../config.ts';
import { CANONICAL_FAST } from '../store/timestamps.ts';
import type { IsoUtc, SinkName, SinkRecords } from '../store/types.ts';
import { toIsoUtc } from '../store/types.ts';

/**
 * A stream is declared in `jobs/` and run by the generic engine (src/sync/engine.ts). Adding a stream for a new
 * query means a `.graphql` document, a definition like `jobs/occupancy.ts` and a line in `jobs/index.ts`; the engine
 * is not touched.
 */

/** How the stream's rows are selected on each run. */
export type StreamKind =
  /** The whole listing is read on every run; rows that vanished from a complete listing can be soft-deleted. */
  | 'full-refresh'
  /** Time windows from the watermark (minus a lookback) to now (minus a settle delay); see src/sync/windows.ts. */
  | 'incremental-window';

export type Paging =
  /** One request returns everything; `path` leads from `data` to the list of nodes. */
  | { style: 'single'; path: readonly string[] }
  /**
   * Relay-style connection: `connection` leads from `data` to an object with `nodes` and
   * `pageInfo { hasNextPage endCursor }`; the engine sets `pageSizeVar` and `cursorVar`.
   */
  | { style: 'relay'; connection: readonly string[]; pageSizeVar: string; cursorVar: string };

/** The part of the configuration a variables builder may use. */
export type StreamSettings = Config['sync'];

export interface VariablesInput {
  settings: StreamSettings;
  /** The half-open window [from, to) being read; only for incremental-window streams. */
  window?: { from: IsoUtc; to: IsoUtc };
}

export interface StreamDefinition<S extends SinkName = SinkName, N = any> {
  /** Unique; also the lock and state key (`occupancy`, and `occupancy#backfill` for backfills). */
  name: string;
  /** Absolute path of the GraphQL document (one named operation). */
  document: string;
  sink: S;
  kind: StreamKind;
  paging: Paging;
  /** Variables for one request, without the paging variables (the engine adds those). */
  variables(input: VariablesInput): Record<string, unknown>;
  /** One API node to one row of the sink. Timestamps go through `apiTimestamp()`. */
  map(node: N): SinkRecords[S];
  /** The sink's key: rows with equal keys within one page are collapsed (last wins) before the upsert. */
  keyFields: ReadonlyArray<keyof SinkRecords[S] & string>;
  /** The field the windows are cut on (incremental-window streams). */
  cursorField?: keyof SinkRecords[S] & string;
  /**
   * Full-refresh streams: rows missing from a complete listing get `deleted_at`. `isComplete` decides from the
   * request variables whether the listing was complete (a filtered listing is not).
   */
  softDelete?: { isComplete(variables: Record<string, unknown>): boolean };
}

/** Any stream, whatever its sink: what the registry and the engine hold. */
export type AnyStream = { [S in SinkName]: StreamDefinition<S, any> }[SinkName];

/** Identity helper that keeps the node type and sink type tied together in a job file. */
export function defineStream<S extends SinkName, N>(definition: StreamDefinition<S, N>): StreamDefinition<S, N> {
  if (definition.kind === 'incremental-window' && !definition.cursorField) {
    throw new Error(`stream ${definition.name}: an incremental-window stream needs a cursorField`);
  }
  return definition;
}

const ZONE = /(Z|[+-]\d{2}:?\d{2})$/i;

/**
 * Canonical UTC form of an API timestamp. A timestamp without a zone is taken as UTC (never as the machine's local
 * time, the classic cursor bug); precision beyond milliseconds is cut, which cannot reorder rows across windows
 * because windows are cut on the same millisecond values.
 */
export function apiTimestamp(value: unknown, field = 'timestamp'): IsoUtc {
  // Hot path (every row): a string already in toIsoUtc's form is returned as is, without a Date round trip.
  if (typeof value === 'string' && CANONICAL_FAST.test(value)) return value;
  if (typeof value !== 'string' && typeof value !== 'number') {
    throw new TypeError(`${field}: expected an ISO 8601 timestamp, got ${JSON.stringify(value)}`);
  }
  const text = typeof value === 'string' && !ZONE.test(value.trim()) && value.includes('T') ? `${value.trim()}Z` : value;
  try {
    return toIsoUtc(text);
  } catch (error) {
    throw new TypeError(`${field}: not a valid timestamp: ${JSON.stringify(value)}`, { cause: error });
  }
}

/** Follows `path` from a GraphQL `data` object, with an error naming the missing step. */
export function atPath(data: unknown, path: readonly string[], stream: string): unknown {
  let value: unknown = data;
  for (const [i, key] of path.entries()) {
    if (value === null || typeof value !== 'object' || !(key in value)) {
      throw new TypeError(`stream ${stream}: the response has no ${['data', ...path.slice(0, i + 1)].join('.')}`);
    }
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}
