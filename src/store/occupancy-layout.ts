import type { Dialect } from '../config.ts';
import type { Column, ComputedColumn } from './sink-def.ts';

/**
 * How each dialect lays out a reading (db/schema/{pg,sqlite}.ts, migrations 0008 and 0009), as data for the one
 * occupancy sink (occupancy-sink.ts) and the one conversion (compact-occupancy.ts). The two layouts differ by
 * design: SQLite keeps the observation time as integer epoch milliseconds and an event id as 16 bytes or text in
 * one column; Postgres keeps a timestamptz and a uuid column beside a text one. `{t}` stands for a table alias and
 * `{v}` for a value in the SQL fragments below.
 */
export interface OccupancyLayout {
  /** The observation time's column: epoch ms in an int8, or the canonical text as a timestamptz. */
  observed: Column;
  /** The same time computed from canonical text (the old wide table's observed_at). */
  observedFromText: string;
  /** The event id as bound per record: a lowercase UUID, or any other id (each null when the other applies). */
  event: readonly [uuid: Column, text: Column];
  /** Written columns made from the bound values, when the table does not store them as bound. */
  computed: readonly ComputedColumn[];
  /** The event id's columns computed from text (the old table's event_id), for the conversion. */
  eventFromText: ReadonlyArray<{ column: string; sql: string }>;
  /** True when the row `{t}` has no event id. */
  eventMissing: string;
  /** The ON CONFLICT assignment that keeps a stored event id and fills in a missing one. */
  eventKeep: string;
}

const UUID_GLOB = `'${[8, 4, 4, 4, 12].map((n) => '[0-9a-f]'.repeat(n)).join('-')}'`;
const UUID_RE = `'^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'`;
const PG_MISSING = '({t}.event_uuid IS NULL AND {t}.event_text IS NULL)';
const keepPg = (column: string) =>
  `${column} = CASE WHEN ${PG_MISSING.replaceAll('{t}', 'occupancy_readings')} THEN excluded.${column} ELSE occupancy_readings.${column} END`;

export const OCCUPANCY_LAYOUTS: Readonly<Record<Dialect, OccupancyLayout>> = {
  sqlite: {
    observed: { name: 'observed_ms', type: 'int8' },
    observedFromText: `CAST(round(unixepoch({v}, 'subsec') * 1000) AS INTEGER)`,
    // Both bound as text: SQLite makes the 16 bytes (on the writer thread), as a string crosses threads for less
    // than a Buffer.
    event: [
      { name: 'event_uuid', type: 'text' },
      { name: 'event_text', type: 'text' },
    ],
    computed: [{ column: 'event_id', sql: `COALESCE(unhex(:event_uuid, '-'), :event_text)` }],
    eventFromText: [{ column: 'event_id', sql: `CASE WHEN {v} GLOB ${UUID_GLOB} THEN unhex(replace({v}, '-', '')) ELSE {v} END` }],
    eventMissing: '{t}.event_id IS NULL',
    eventKeep: 'event_id = COALESCE(occupancy_readings.event_id, excluded.event_id)',
  },
  postgres: {
    observed: { name: 'observed_at', type: 'timestamptz' },
    observedFromText: '{v}',
    event: [
      { name: 'event_uuid', type: 'uuid' },
      { name: 'event_text', type: 'text' },
    ],
    computed: [],
    eventFromText: [
      { column: 'event_uuid', sql: `CASE WHEN {v} ~ ${UUID_RE} THEN {v}::uuid END` },
      { column: 'event_text', sql: `CASE WHEN {v} !~ ${UUID_RE} THEN {v} END` },
    ],
    eventMissing: PG_MISSING,
    eventKeep: `${keepPg('event_uuid')}, ${keepPg('event_text')}`,
  },
};

/** A fragment with `{t}` or `{v}` filled in. */
export function fill(fragment: string, name: 't' | 'v', value: string): string {
  return fragment.replaceAll(`{${name}}`, value);
}
