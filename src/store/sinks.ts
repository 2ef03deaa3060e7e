import { StoreError } from '../errors.ts';
import { canonicalTimestamp } from './timestamps.ts';
import type { BuildingRecord, IsoUtc, OccupancyRecord, OccupancySource, SinkName, SinkRecords } from './types.ts';

/**
 * The sink registry: how a stream's records become rows. Each dialect builds its one prepared upsert per sink from
 * this description (SQLite: INSERT ... VALUES per row; Postgres: INSERT ... SELECT FROM unnest per page), so the
 * columns, validation and conflict rules exist once. A new sink needs a migration and an entry here.
 */

export type ColumnType = 'text' | 'timestamptz' | 'int4';

export interface Column {
  name: string;
  /** The Postgres array element type used to pass the column through unnest. */
  type: ColumnType;
}

/** Values shared by every row of a page. */
export interface PageContext {
  customerId: string;
  at: IsoUtc;
  source: OccupancySource;
}

export interface SinkDef<R> {
  table: string;
  /** Columns with one value for the whole page (bound once, not per row). */
  pageColumns: readonly Column[];
  pageValues(page: PageContext): unknown[];
  /** Columns with one value per record. */
  rowColumns: readonly Column[];
  /** Indexes into rowColumns that, with the page columns, form the primary key (used to drop in-page duplicates). */
  rowKey: readonly number[];
  /** Validates one record and writes its row values into `out` from `offset` (no allocation on the hot path). */
  fill(record: R, out: unknown[], offset: number, index: number): void;
  /** The portable ON CONFLICT clause (SQLite and Postgres share the syntax, including `excluded`). */
  onConflict: string;
}

function text(value: unknown, table: string, field: string, index: number): string {
  if (typeof value === 'string' && value.length > 0) return value;
  throw new StoreError(`${table} record ${index}: ${field} must be a non-empty string, got ${JSON.stringify(value)}`);
}

/**
 * Occupancy: the measured values (status, headcount) take the latest arrival and are only rewritten when they differ,
 * so re-reading a lookback window touches nothing. Provenance (source, ingested_at, event_id) belongs to the first
 * arrival: a reading seen by webhook and then by polling stays one row with source 'webhook'. A missing event_id is
 * filled in by a later arrival that has one.
 */
const occupancy: SinkDef<OccupancyRecord> = {
  table: 'occupancy',
  pageColumns: [
    { name: 'customer_id', type: 'text' },
    { name: 'source', type: 'text' },
    { name: 'ingested_at', type: 'timestamptz' },
  ],
  pageValues: (page) => [page.customerId, page.source, page.at],
  rowColumns: [
    { name: 'floor_space_id', type: 'text' },
    { name: 'observed_at', type: 'timestamptz' },
    { name: 'occupancy_status', type: 'text' },
    { name: 'headcount', type: 'int4' },
    { name: 'event_id', type: 'text' },
  ],
  rowKey: [0, 1],
  fill(r, out, o, i) {
    out[o] = text(r.floorSpaceId, 'occupancy', 'floorSpaceId', i);
    out[o + 1] = canonicalTimestamp(r.observedAt, `occupancy record ${i}: observedAt`);
    out[o + 2] = text(r.occupancyStatus, 'occupancy', 'occupancyStatus', i);
    if (!Number.isInteger(r.headcount)) {
      throw new StoreError(`occupancy record ${i}: headcount must be an integer, got ${JSON.stringify(r.headcount)}`);
    }
    out[o + 3] = r.headcount;
    out[o + 4] = r.eventId ?? null;
  },
  onConflict:
    'ON CONFLICT (customer_id, floor_space_id, observed_at) DO UPDATE SET ' +
    'occupancy_status = excluded.occupancy_status, headcount = excluded.headcount, ' +
    'event_id = COALESCE(occupancy.event_id, excluded.event_id) ' +
    'WHERE occupancy.occupancy_status <> excluded.occupancy_status OR occupancy.headcount <> excluded.headcount ' +
    'OR (occupancy.event_id IS NULL AND excluded.event_id IS NOT NULL)',
};

/** Buildings: a listed building is (again) alive: refresh its name and last_seen_at, clear deleted_at. */
const buildings: SinkDef<BuildingRecord> = {
  table: 'buildings',
  pageColumns: [
    { name: 'customer_id', type: 'text' },
    { name: 'first_seen_at', type: 'timestamptz' },
    { name: 'last_seen_at', type: 'timestamptz' },
  ],
  pageValues: (page) => [page.customerId, page.at, page.at],
  rowColumns: [
    { name: 'id', type: 'text' },
    { name: 'name', type: 'text' },
  ],
  rowKey: [0],
  fill(r, out, o, i) {
    out[o] = text(r.id, 'buildings', 'id', i);
    if (typeof r.name !== 'string') {
      throw new StoreError(`buildings record ${i}: name must be a string, got ${JSON.stringify(r.name)}`);
    }
    out[o + 1] = r.name;
  },
  onConflict:
    'ON CONFLICT (customer_id, id) DO UPDATE SET ' +
    'name = excluded.name, last_seen_at = excluded.last_seen_at, deleted_at = NULL',
};

export const SINKS: { [S in SinkName]: SinkDef<SinkRecords[S]> } = { occupancy, buildings };

export function sinkDef<S extends SinkName>(sink: S): SinkDef<SinkRecords[S]> {
  const def = SINKS[sink] as SinkDef<SinkRecords[S]> | undefined;
  if (!def) throw new StoreError(`unknown sink "${String(sink)}"; known sinks: ${Object.keys(SINKS).join(', ')}`);
  return def;
}
