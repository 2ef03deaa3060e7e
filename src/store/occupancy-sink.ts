import { sql } from '../../db/schema/drizzle.ts';
import type { Dialect } from '../config.ts';
import { StoreError } from '../errors.ts';
import { sinkColumns, sinkKey } from './columns.ts';
import type { KeyScope } from './key-cache.ts';
import { textIn } from './key-list.ts';
import { fill as fillIn, OCCUPANCY_LAYOUTS, type OccupancyLayout } from './occupancy-layout.ts';
import { INT4_RULE, invalid, isInt4 } from './checks.ts';
import type { Column, PrepareInput, SinkDef } from './sink-def.ts';
import { canonicalTimestamp } from './timestamps.ts';
import { END_READING, FIRST_READING } from '../time.ts';
import type { OccupancyRecord } from './types.ts';

/**
 * The occupancy sink over the compact layout (db/schema/pg.ts): a page first makes sure its floor spaces and statuses
 * have dictionary keys and records its arrival (source and time, once per page), then upserts one narrow row per
 * reading. The measured values (status, headcount) take the latest arrival and are only rewritten when they differ,
 * so re-reading a lookback window touches nothing. The first arrival by polling and by webhook are kept (the earlier
 * of the two is the reading's source and ingested_at); a missing event id is filled in by a later arrival that has
 * one. The `occupancy` view shows these rows exactly as the documented table did. One sink for both dialects: what
 * their tables store differently is data (occupancy-layout.ts).
 */

/** The event ids stored as 16 bytes: exactly the lowercase form, so the view gives back the very same text. */
const LOWER_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Values per dictionary statement: well under both dialects' parameter limits. */
const CHUNK = 1000;

interface Prepared {
  spaces: Map<string, number>;
  statuses: Map<string, number>;
  arrival: number;
  /** Per floor space key, the first and last canonical instant of the page's records (filled by fill). */
  spans: Map<number, [string, string]>;
}

interface Dictionary {
  table: string;
  key: string;
  value: string;
  /** Extra fixed column (the customer), or none. */
  scope?: { column: string; value: string };
}

/**
 * The keys of `values` in `dictionary`: read, and only the values not found inserted (ON CONFLICT DO NOTHING: another
 * process may insert the same value at once), then read back. Inserting only what is missing keeps a Postgres
 * identity's sequence from drawing a value for every row that was already there (a fresh process knows no keys).
 * Keys found here are learnt by the transaction's scope.
 */
async function ensureKeys(input: PrepareInput, dictionary: Dictionary, cacheName: string, values: readonly string[]): Promise<Map<string, number>> {
  const { tx, keys, dialect } = input;
  const found = new Map<string, number>();
  const table = sql.identifier(dictionary.table);
  const valueColumn = sql.identifier(dictionary.value);
  const scope = dictionary.scope;
  const read = async (chunk: readonly string[]) => {
    const where = scope ? sql`${sql.identifier(scope.column)} = ${scope.value} AND ` : sql``;
    const rows = await tx.all<{ k: number | string; v: string }>(
      sql`SELECT ${sql.identifier(dictionary.key)} AS k, ${valueColumn} AS v FROM ${table} WHERE ${where}${textIn(dialect, sql`${valueColumn}`, chunk)}`,
    );
    for (const row of rows) {
      const key = Number(row.k);
      found.set(row.v, key);
      keys.learn(cacheName, row.v, key);
    }
  };
  for (let i = 0; i < values.length; i += CHUNK) {
    const chunk = values.slice(i, i + CHUNK);
    await read(chunk);
    const missing = chunk.filter((v) => !found.has(v));
    if (missing.length === 0) continue;
    const rows = scope
      ? sql.join(missing.map((v) => sql`(${scope.value}, ${v})`), sql`, `)
      : sql.join(missing.map((v) => sql`(${v})`), sql`, `);
    const columns = scope ? sql`(${sql.identifier(scope.column)}, ${valueColumn})` : sql`(${valueColumn})`;
    await tx.run(sql`INSERT INTO ${table} ${columns} VALUES ${rows} ON CONFLICT DO NOTHING`);
    await read(missing);
  }
  for (const value of values) {
    if (!found.has(value)) throw new StoreError(`${dictionary.table}: no key for ${JSON.stringify(value)} after inserting it`);
  }
  return found;
}

/** This page's view of a dictionary: the committed keys, plus those found or made for it (no copy when none). */
async function keysFor<R>(input: PrepareInput, dictionary: Dictionary, records: ReadonlyArray<R>, pick: (record: R) => unknown): Promise<Map<string, number>> {
  const cacheName = dictionary.scope ? `${dictionary.table}\u0000${dictionary.scope.value}` : dictionary.table;
  const committed = (input.keys as KeyScope).committed(cacheName);
  let missing: Set<string> | undefined;
  // A plain loop over the page (no iterator per value): it runs for every record of every page.
  for (let i = 0; i < records.length; i++) {
    const value = pick(records[i]!);
    if (typeof value === 'string' && value.length > 0 && !committed.has(value)) (missing ??= new Set()).add(value);
  }
  if (!missing) return committed;
  const found = await ensureKeys(input, dictionary, cacheName, [...missing]);
  return new Map([...committed, ...found]);
}

/**
 * The customer's floor space keys of a page's records (`pick` gives each one's floor space id), found or made: one
 * dictionary and one cache for readings and the floor space dimension, so both name a space by the same key.
 */
export function floorSpaceKeys<R>(input: PrepareInput, records: ReadonlyArray<R>, pick: (record: R) => unknown): Promise<Map<string, number>> {
  const dictionary = { table: 'floor_spaces', key: 'floor_space_key', value: 'floor_space_id', scope: { column: 'customer_id', value: input.page.customerId } };
  return keysFor(input, dictionary, records, pick);
}

async function prepare(input: PrepareInput, records: ReadonlyArray<OccupancyRecord>): Promise<Prepared> {
  const spaces = await floorSpaceKeys(input, records, (r) => r.floorSpaceId);
  const statuses = await keysFor(input, { table: 'occupancy_statuses', key: 'status_code', value: 'occupancy_status' }, records, (r) => r.occupancyStatus);
  const [row] = await input.tx.all<{ k: number | string }>(
    sql`INSERT INTO occupancy_arrivals (source, arrived_at) VALUES (${input.page.source}, ${input.page.at}) RETURNING arrival_key AS k`,
  );
  return { spaces, statuses, arrival: Number(row!.k), spans: new Map() };
}

/**
 * Writes a record's floor space key, observation time, status code, headcount (or NULL) and event id (as a lowercase
 * UUID or other text, in two values) at out[offset..+5], checked. Allocation-free on the hot path.
 */
function fill(record: OccupancyRecord, out: unknown[], offset: number, index: number, prepared: Prepared, epochMs: ((iso: string) => number) | undefined): void {
  const space = prepared.spaces.get(record.floorSpaceId);
  if (space === undefined) throw invalid('occupancy', index, 'floorSpaceId', 'a non-empty string', record.floorSpaceId);
  const status = prepared.statuses.get(record.occupancyStatus);
  if (status === undefined) throw invalid('occupancy', index, 'occupancyStatus', 'a non-empty string', record.occupancyStatus);
  // Null: the sensor sent no headcount (presence-only), stored as NULL and never as 0. A negative one is refused by
  // the table's constraint (occupancy_readings_headcount_non_negative), in the page's transaction.
  const headcount = record.headcount ?? null;
  if (headcount !== null && !isInt4(headcount)) throw invalid('occupancy', index, 'headcount', INT4_RULE, record.headcount);
  const eventId = record.eventId ?? null;
  if (eventId !== null && typeof eventId !== 'string') throw invalid('occupancy', index, 'eventId', 'a string or null', eventId);
  const observed = canonicalTimestamp(record.observedAt, `occupancy record ${index}: observedAt`);
  if (observed < FIRST_READING || observed >= END_READING) throw invalid('occupancy', index, 'observedAt', 'in the years 1970 to 2199 (no sensor measured before or will after)', observed, 'check the source\'s clock, or the field mapped to observedAt');
  const uuid = eventId !== null && LOWER_UUID.test(eventId);
  // The page's spans for the aggregates (aggregate-page-invalidations.ts), kept here where each record's key and
  // canonical time are at hand: a second pass over the page cost the commit as much again (docs/performance.md).
  // Canonical texts sort as their instants.
  const span = prepared.spans.get(space);
  if (span === undefined) prepared.spans.set(space, [observed, observed]);
  else if (observed < span[0]) span[0] = observed;
  else if (observed > span[1]) span[1] = observed;
  out[offset] = space;
  out[offset + 1] = epochMs ? epochMs(observed) : observed;
  out[offset + 2] = status;
  out[offset + 3] = headcount;
  out[offset + 4] = uuid ? eventId : null;
  out[offset + 5] = uuid ? null : eventId;
}


/** Date.parse, remembering the last text: a page's rows come tick by tick, so most repeat the time before. */
function lastParsed(): (iso: string) => number {
  let text = '';
  let ms = 0;
  return (iso) => (iso === text ? ms : (ms = Date.parse((text = iso))));
}

const PAGE_COLUMNS: Column[] = [
  { name: 'polled_arrival', type: 'int4' },
  { name: 'delivered_arrival', type: 'int4' },
];
const pageValues = (page: { source: string }, prepared: Prepared): unknown[] =>
  page.source === 'poll' ? [prepared.arrival, null] : [null, prepared.arrival];

/**
 * The measured values take the latest arrival and are rewritten only when they differ; the first arrival by polling
 * and by webhook are kept; a missing event id is filled in by an arrival that has one.
 */
function onConflict(layout: OccupancyLayout): string {
  const missing = (t: string) => fillIn(layout.eventMissing, 't', t);
  return (
    `ON CONFLICT (floor_space_key, ${layout.observed.name}) DO UPDATE SET ` +
    'status_code = excluded.status_code, headcount = excluded.headcount, ' +
    `${layout.eventKeep}, ` +
    'polled_arrival = COALESCE(occupancy_readings.polled_arrival, excluded.polled_arrival), ' +
    'delivered_arrival = COALESCE(occupancy_readings.delivered_arrival, excluded.delivered_arrival) ' +
    // IS DISTINCT FROM: a headcount that becomes NULL, or stops being NULL, is a change (<> says neither).
    'WHERE occupancy_readings.status_code <> excluded.status_code OR occupancy_readings.headcount IS DISTINCT FROM excluded.headcount ' +
    `OR (${missing('occupancy_readings')} AND NOT ${missing('excluded')}) ` +
    'OR (occupancy_readings.polled_arrival IS NULL AND excluded.polled_arrival IS NOT NULL) ' +
    'OR (occupancy_readings.delivered_arrival IS NULL AND excluded.delivered_arrival IS NOT NULL)'
  );
}

/** The occupancy sink over a dialect's layout of the compact tables (occupancy-layout.ts). */
export function occupancySink(dialect: Dialect): SinkDef<OccupancyRecord, Prepared> {
  const layout = OCCUPANCY_LAYOUTS[dialect];
  const shape = sinkColumns('occupancy');
  const epochMs = layout.observed.type === 'int8' ? lastParsed() : undefined;
  return {
    table: shape.relation,
    writeTable: 'occupancy_readings',
    prepare,
    floorSpaceKeys: (prepared) => prepared.spaces,
    readingSpans: (prepared) => prepared.spans,
    pageColumns: PAGE_COLUMNS,
    pageValues,
    rowColumns: [{ name: 'floor_space_key', type: 'int4' }, layout.observed, { name: 'status_code', type: 'int4' }, { name: 'headcount', type: 'int4' }, ...layout.event],
    computed: layout.computed,
    rowFields: shape.columns.map((c) => c.field),
    key: sinkKey('occupancy'),
    // The floor space key and the observation time identify a reading.
    rowKey: [0, 1],
    fill: (record, out, offset, index, prepared) => fill(record, out, offset, index, prepared, epochMs),
    onConflict: onConflict(layout),
    softDelete: false,
  };
}
