import { sql } from '../../db/schema/drizzle.ts';
import type { Dialect } from '../config.ts';
import { StoreError } from '../errors.ts';
import type { KeyScope } from './key-cache.ts';
import type { Column, PrepareInput, SinkDef } from './sinks.ts';
import { canonicalTimestamp } from './timestamps.ts';
import type { OccupancyRecord } from './types.ts';

/**
 * The occupancy sink over the compact layout (db/schema/pg.ts): a page first makes sure its floor spaces and statuses
 * have dictionary keys and records its arrival (source and time, once per page), then upserts one narrow row per
 * reading. The measured values (status, headcount) take the latest arrival and are only rewritten when they differ,
 * so re-reading a lookback window touches nothing. The first arrival by polling and by webhook are kept (the earlier
 * of the two is the reading's source and ingested_at); a missing event id is filled in by a later arrival that has
 * one. The `occupancy` view shows these rows exactly as the documented table did.
 */

/** The event ids stored as 16 bytes: exactly the lowercase form, so the view gives back the very same text. */
const LOWER_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Values per dictionary statement: well under both dialects' parameter limits. */
const CHUNK = 1000;

interface Prepared {
  spaces: Map<string, number>;
  statuses: Map<string, number>;
  arrival: number;
}

interface Dictionary {
  table: string;
  key: string;
  value: string;
  /** Extra fixed column (the customer), or none. */
  scope?: { column: string; value: string };
}

/**
 * The keys of `values` in `dictionary`: inserted when missing (ON CONFLICT DO NOTHING: another process may insert
 * the same value at once), then read back. Keys found here are learnt by the transaction's scope.
 */
async function ensureKeys(input: PrepareInput, dictionary: Dictionary, cacheName: string, values: readonly string[]): Promise<Map<string, number>> {
  const { tx, keys } = input;
  const found = new Map<string, number>();
  const table = sql.identifier(dictionary.table);
  const valueColumn = sql.identifier(dictionary.value);
  for (let i = 0; i < values.length; i += CHUNK) {
    const chunk = values.slice(i, i + CHUNK);
    const scope = dictionary.scope;
    const rows = scope
      ? sql.join(chunk.map((v) => sql`(${scope.value}, ${v})`), sql`, `)
      : sql.join(chunk.map((v) => sql`(${v})`), sql`, `);
    const columns = scope ? sql`(${sql.identifier(scope.column)}, ${valueColumn})` : sql`(${valueColumn})`;
    await tx.run(sql`INSERT INTO ${table} ${columns} VALUES ${rows} ON CONFLICT DO NOTHING`);
    const where = scope ? sql`${sql.identifier(scope.column)} = ${scope.value} AND ` : sql``;
    const read = await tx.all<{ k: number | string; v: string }>(
      sql`SELECT ${sql.identifier(dictionary.key)} AS k, ${valueColumn} AS v FROM ${table} WHERE ${where}${valueColumn} IN (${sql.join(chunk.map((v) => sql`${v}`), sql`, `)})`,
    );
    for (const row of read) {
      const key = Number(row.k);
      found.set(row.v, key);
      keys.learn(cacheName, row.v, key);
    }
  }
  for (const value of values) {
    if (!found.has(value)) throw new StoreError(`${dictionary.table}: no key for ${JSON.stringify(value)} after inserting it`);
  }
  return found;
}

/** This page's view of a dictionary: the committed keys, plus those found or made for it (no copy when none). */
async function keysFor(input: PrepareInput, dictionary: Dictionary, values: Iterable<unknown>): Promise<Map<string, number>> {
  const cacheName = dictionary.scope ? `${dictionary.table}\u0000${dictionary.scope.value}` : dictionary.table;
  const committed = (input.keys as KeyScope).committed(cacheName);
  let missing: Set<string> | undefined;
  for (const value of values) {
    if (typeof value === 'string' && value.length > 0 && !committed.has(value)) (missing ??= new Set()).add(value);
  }
  if (!missing) return committed;
  const found = await ensureKeys(input, dictionary, cacheName, [...missing]);
  return new Map([...committed, ...found]);
}

function* field<K extends keyof OccupancyRecord>(records: ReadonlyArray<OccupancyRecord>, key: K): Generator<OccupancyRecord[K]> {
  for (const record of records) yield record[key];
}

async function prepare(input: PrepareInput, records: ReadonlyArray<OccupancyRecord>): Promise<Prepared> {
  const spaces = await keysFor(
    input,
    { table: 'floor_spaces', key: 'floor_space_key', value: 'floor_space_id', scope: { column: 'customer_id', value: input.page.customerId } },
    field(records, 'floorSpaceId'),
  );
  const statuses = await keysFor(input, { table: 'occupancy_statuses', key: 'status_code', value: 'occupancy_status' }, field(records, 'occupancyStatus'));
  const [row] = await input.tx.all<{ k: number | string }>(
    sql`INSERT INTO occupancy_arrivals (source, arrived_at) VALUES (${input.page.source}, ${input.page.at}) RETURNING arrival_key AS k`,
  );
  return { spaces, statuses, arrival: Number(row!.k) };
}

function invalid(index: number, field: string, what: string, value: unknown): StoreError {
  return new StoreError(`occupancy record ${index}: ${field} must be ${what}, got ${JSON.stringify(value) ?? String(value)}`);
}

/**
 * Writes a record's floor space key, observation time (canonical), status code and headcount at out[offset..+3],
 * checked; returns its event id. Shared by both dialects' fill, allocation-free on the hot path.
 */
function fillCommon(record: OccupancyRecord, out: unknown[], offset: number, index: number, prepared: Prepared): string | null {
  const space = prepared.spaces.get(record.floorSpaceId);
  if (space === undefined) throw invalid(index, 'floorSpaceId', 'a non-empty string', record.floorSpaceId);
  const status = prepared.statuses.get(record.occupancyStatus);
  if (status === undefined) throw invalid(index, 'occupancyStatus', 'a non-empty string', record.occupancyStatus);
  if (!Number.isInteger(record.headcount)) throw invalid(index, 'headcount', 'an integer', record.headcount);
  const eventId = record.eventId;
  if (eventId !== null && eventId !== undefined && typeof eventId !== 'string') throw invalid(index, 'eventId', 'a string or null', eventId);
  out[offset] = space;
  out[offset + 1] = canonicalTimestamp(record.observedAt, `occupancy record ${index}: observedAt`);
  out[offset + 2] = status;
  out[offset + 3] = record.headcount;
  return eventId ?? null;
}

const PAGE_COLUMNS: Column[] = [
  { name: 'polled_arrival', type: 'int4' },
  { name: 'delivered_arrival', type: 'int4' },
];
const pageValues = (page: { source: string }, prepared: Prepared): unknown[] =>
  page.source === 'poll' ? [prepared.arrival, null] : [null, prepared.arrival];

const READ_COLUMNS = {
  floorSpaceId: { name: 'floor_space_id', type: 'text' },
  observedAt: { name: 'observed_at', type: 'timestamptz' },
  occupancyStatus: { name: 'occupancy_status', type: 'text' },
  headcount: { name: 'headcount', type: 'int4' },
  eventId: { name: 'event_id', type: 'text' },
} as const;

const conflict = (observed: string, eventMissing: (t: string) => string, eventSet: string) =>
  `ON CONFLICT (floor_space_key, ${observed}) DO UPDATE SET ` +
  'status_code = excluded.status_code, headcount = excluded.headcount, ' +
  `${eventSet}, ` +
  'polled_arrival = COALESCE(occupancy_readings.polled_arrival, excluded.polled_arrival), ' +
  'delivered_arrival = COALESCE(occupancy_readings.delivered_arrival, excluded.delivered_arrival) ' +
  'WHERE occupancy_readings.status_code <> excluded.status_code OR occupancy_readings.headcount <> excluded.headcount ' +
  `OR (${eventMissing('occupancy_readings')} AND NOT ${eventMissing('excluded')}) ` +
  'OR (occupancy_readings.polled_arrival IS NULL AND excluded.polled_arrival IS NOT NULL) ' +
  'OR (occupancy_readings.delivered_arrival IS NULL AND excluded.delivered_arrival IS NOT NULL)';

/** What both dialects share: the readable view, the page values, the key, and five fields as six bound values. */
function common(observed: { name: string; type: 'int4' | 'timestamptz' }, event: 'text' | 'uuid') {
  return {
    table: 'occupancy',
    writeTable: 'occupancy_readings',
    readColumns: READ_COLUMNS,
    prepare,
    pageColumns: PAGE_COLUMNS,
    pageValues,
    rowColumns: [
      { name: 'floor_space_key', type: 'int4' },
      observed,
      { name: 'status_code', type: 'int4' },
      { name: 'headcount', type: 'int4' },
      { name: 'event_uuid', type: event },
      { name: 'event_text', type: 'text' },
    ] satisfies Column[],
    rowFields: ['floorSpaceId', 'observedAt', 'occupancyStatus', 'headcount', 'eventId'] as Array<keyof OccupancyRecord>,
    key: ['floorSpaceId', 'observedAt'] as Array<keyof OccupancyRecord>,
    rowKey: [0, 1],
    softDelete: false,
  };
}

/** Writes the event id as two values: a lowercase UUID (stored compactly) or any other id (stored as text). */
function fillEvent(eventId: string | null, out: unknown[], offset: number): void {
  const uuid = eventId !== null && LOWER_UUID.test(eventId);
  out[offset + 4] = uuid ? eventId : null;
  out[offset + 5] = uuid ? null : eventId;
}

/**
 * SQLite: observed_ms as integer epoch ms, the event id as 16 bytes or text in one column. The two event values are
 * bound as text and become that column in the statement: SQLite makes the 16 bytes (unhex, on the writer thread),
 * as a string crosses threads for less than a Buffer.
 */
function sqliteSink(): SinkDef<OccupancyRecord, Prepared> {
  return {
    ...common({ name: 'observed_ms', type: 'int4' }, 'text'),
    insertValues: (placeholders) => [...placeholders.slice(0, -2), `COALESCE(unhex(${placeholders.at(-2)}, '-'), ${placeholders.at(-1)})`],
    insertColumns: (columns) => [...columns.slice(0, -2), 'event_id'],
    fill(record, out, offset, index, prepared) {
      fillEvent(fillCommon(record, out, offset, index, prepared), out, offset);
      out[offset + 1] = Date.parse(out[offset + 1] as string);
    },
    onConflict: conflict('observed_ms', (t) => `${t}.event_id IS NULL`, 'event_id = COALESCE(occupancy_readings.event_id, excluded.event_id)'),
  };
}

/** Postgres: observed_at as timestamptz, the event id in event_uuid (a lowercase UUID) or event_text. */
function postgresSink(): SinkDef<OccupancyRecord, Prepared> {
  const missing = (t: string) => `(${t}.event_uuid IS NULL AND ${t}.event_text IS NULL)`;
  return {
    ...common({ name: 'observed_at', type: 'timestamptz' }, 'uuid'),
    fill(record, out, offset, index, prepared) {
      fillEvent(fillCommon(record, out, offset, index, prepared), out, offset);
    },
    onConflict: conflict(
      'observed_at',
      missing,
      `event_uuid = CASE WHEN ${missing('occupancy_readings')} THEN excluded.event_uuid ELSE occupancy_readings.event_uuid END, ` +
        `event_text = CASE WHEN ${missing('occupancy_readings')} THEN excluded.event_text ELSE occupancy_readings.event_text END`,
    ),
  };
}

export function occupancySink(dialect: Dialect): SinkDef<OccupancyRecord, Prepared> {
  return dialect === 'sqlite' ? sqliteSink() : postgresSink();
}
