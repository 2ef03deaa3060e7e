import { sql, type SQL } from '../../db/schema/drizzle.ts';
import type { Dialect } from '../config.ts';
import { StoreError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { Executor } from './adapter.ts';
import { fill, OCCUPANCY_LAYOUTS, type OccupancyLayout } from './occupancy-layout.ts';

/**
 * Moves occupancy rows from the old wide table (occupancy_legacy, left by migration 0008) into the compact tables,
 * in batches that each commit: the batch's floor spaces and statuses get their dictionary keys, its rows are
 * inserted with the arrivals 0008 recorded, and the same rows are deleted from the old table, all in one
 * transaction. A conversion that is stopped (kill -9 included) loses nothing and resumes with the rows still in the
 * old table; readers see every row throughout, through the `occupancy` view. Migration 0009 runs only once the old
 * table is empty.
 */

/** The migration that may only run when every row has moved. */
export const CONVERSION_DONE_MIGRATION = '0009_compact_done';

/** Rows per committed batch: a few seconds of work per transaction at most, so a stop loses little. */
export const CONVERSION_BATCH = 50_000;

export interface ConversionOptions {
  batch?: number;
  logger?: Logger;
  /** After each committed batch: rows moved in it and in all (tests stop a conversion half-way with it). */
  onBatch?(moved: number, total: number): void;
}

/** The arrival of a legacy row by polling and by webhook, as 0008 recorded them (see its INSERT). */
const POLLED = sql.raw(`COALESCE(l.polled_at, CASE WHEN l.source = 'poll' THEN l.ingested_at END)`);
const DELIVERED = sql.raw(`COALESCE(l.delivered_at, CASE WHEN l.source = 'webhook' THEN l.ingested_at END)`);

function insertRows(layout: OccupancyLayout, within: SQL): SQL {
  const columns = ['floor_space_key', layout.observed.name, 'status_code', 'headcount', 'polled_arrival', 'delivered_arrival', ...layout.eventFromText.map((e) => e.column)];
  const values = [
    'f.floor_space_key',
    fill(layout.observedFromText, 'v', 'l.observed_at'),
    's.status_code',
    'l.headcount',
    'p.arrival_key',
    'd.arrival_key',
    ...layout.eventFromText.map((e) => fill(e.sql, 'v', 'l.event_id')),
  ];
  // A row the new version already wrote (it can only come from the platform again) keeps what it has.
  return sql`
    INSERT INTO occupancy_readings (${sql.raw(columns.join(', '))})
    SELECT ${sql.raw(values.join(', '))}
      FROM occupancy_legacy l
      JOIN floor_spaces f ON f.customer_id = l.customer_id AND f.floor_space_id = l.floor_space_id
      JOIN occupancy_statuses s ON s.occupancy_status = l.occupancy_status
      LEFT JOIN occupancy_arrivals p ON p.source = 'poll' AND p.arrived_at = ${POLLED}
      LEFT JOIN occupancy_arrivals d ON d.source = 'webhook' AND d.arrived_at = ${DELIVERED}
     WHERE ${within}
    ON CONFLICT DO NOTHING`;
}

/** Moves one batch in the caller's transaction; resolves to the rows moved (0: nothing was left). */
export async function moveBatch(tx: Executor, dialect: Dialect, batch: number): Promise<number> {
  const layout = OCCUPANCY_LAYOUTS[dialect];
  // The batch is the first `batch` rows in primary-key order: the old table's key index finds its last row.
  const [last] = await tx.all<{ customer_id: string; floor_space_id: string; observed_at: string }>(sql`
    SELECT customer_id, floor_space_id, observed_at FROM occupancy_legacy
     ORDER BY customer_id, floor_space_id, observed_at LIMIT 1 OFFSET ${batch - 1}`);
  const within = last
    ? sql`(l.customer_id, l.floor_space_id, l.observed_at) <= (${last.customer_id}, ${last.floor_space_id}, ${last.observed_at})`
    : sql`1 = 1`;
  await tx.run(sql`
    INSERT INTO floor_spaces (customer_id, floor_space_id)
    SELECT DISTINCT l.customer_id, l.floor_space_id FROM occupancy_legacy l WHERE ${within}
    ON CONFLICT DO NOTHING`);
  await tx.run(sql`
    INSERT INTO occupancy_statuses (occupancy_status)
    SELECT DISTINCT l.occupancy_status FROM occupancy_legacy l WHERE ${within}
    ON CONFLICT DO NOTHING`);
  await tx.run(insertRows(layout, within));
  // Nothing leaves the old table unless it is in the new one, with its arrival.
  const observed = sql.raw(fill(layout.observedFromText, 'v', 'l.observed_at'));
  const observedColumn = sql.raw(`r.${layout.observed.name}`);
  const [missing] = await tx.all<{ rows: number | string }>(sql`
    SELECT count(*) AS rows
      FROM occupancy_legacy l
      JOIN floor_spaces f ON f.customer_id = l.customer_id AND f.floor_space_id = l.floor_space_id
      LEFT JOIN occupancy_readings r ON r.floor_space_key = f.floor_space_key AND ${observedColumn} = ${observed}
     WHERE ${within} AND (r.floor_space_key IS NULL OR (r.polled_arrival IS NULL AND r.delivered_arrival IS NULL))`);
  if (Number(missing?.rows ?? 0) > 0) {
    throw new StoreError(
      `occupancy conversion: ${missing!.rows} old rows did not arrive in the new tables with their arrival; nothing was moved and the old table is intact. ` +
        'Fix: keep this version from writing and report the failure with the database\'s migration history',
    );
  }
  return tx.run(sql`DELETE FROM occupancy_legacy AS l WHERE ${within}`);
}

/** The rows still to move (0 once done, or when the old table is gone). */
export async function rowsToMove(tx: Executor): Promise<number> {
  const [row] = await tx.all<{ n: number | string }>(sql`SELECT count(*) AS n FROM occupancy_legacy`);
  return Number(row?.n ?? 0);
}

/**
 * One step of the conversion in its own transaction, run only while migration 0009 is still to be applied; undefined
 * when another process has applied it meanwhile (the old table is gone: nothing is left to do).
 */
export type ConversionStep = (fn: (tx: Executor) => Promise<number>) => Promise<number | undefined>;

/**
 * Runs batches until the old table is empty, each a step of its own (one transaction, serialised with every other
 * process's migration steps). Resolves to the rows moved here. Throws (StoreError) before 0009 could drop a table that
 * still holds rows.
 */
export async function convertLegacyOccupancy(step: ConversionStep, dialect: Dialect, options: ConversionOptions = {}): Promise<number> {
  const batch = options.batch ?? CONVERSION_BATCH;
  const toMove = await step(rowsToMove);
  if (toMove === undefined) return 0;
  if (toMove > 0) options.logger?.info({ rows: toMove }, 'converting occupancy to the compact layout (resumable: each batch commits)');
  let total = 0;
  for (;;) {
    const moved = await step((tx) => moveBatch(tx, dialect, batch));
    if (moved === undefined) return total;
    if (moved === 0) break;
    total += moved;
    options.logger?.info({ moved: total, of: toMove }, 'occupancy conversion: rows moved');
    options.onBatch?.(moved, total);
  }
  const left = await step(rowsToMove);
  if (left) throw new StoreError(`occupancy conversion: ${left} rows are still in occupancy_legacy after the conversion; migration 0009 would drop them`);
  return total;
}
