import { sql } from '../../db/schema/drizzle.ts';
import { StoreError } from '../errors.ts';
import type { Adapter } from './adapter.ts';
import { toRun, type RunRow } from './state-rows.ts';
import { ABANDONED_RUN_ERROR, type RunRecord, type RunStatus } from './types.ts';

/**
 * The runs' records (`sync_runs`, and `sync_last_runs`, which health and status read the latest run from instead of
 * the whole history). The store checks and canonicalises the instants; these write them.
 */

/** Runs of a stream left running by a process that ended: interrupted, with ABANDONED_RUN_ERROR. Their ids, sorted. */
export async function closeAbandonedRuns(db: Adapter, customerId: string, stateKey: string, finishedAt: string): Promise<number[]> {
  const rows = await db.all<{ id: number | string }>(sql`
    UPDATE sync_runs SET status = 'interrupted', finished_at = ${finishedAt}, error = ${ABANDONED_RUN_ERROR}
    WHERE customer_id = ${customerId} AND stream = ${stateKey} AND status = 'running' RETURNING id`);
  return rows.map((r) => Number(r.id)).sort((a, b) => a - b);
}

export function startRun(db: Adapter, run: { customerId: string; stateKey: string; mode: RunRecord['mode']; startedAt: string }): Promise<number> {
  return db.transaction(async (tx) => {
    const rows = await tx.all<{ id: number }>(sql`
      INSERT INTO sync_runs (customer_id, stream, mode, started_at, status, pages, records)
      VALUES (${run.customerId}, ${run.stateKey}, ${run.mode}, ${run.startedAt}, 'running', 0, 0) RETURNING id`);
    const id = Number(rows[0]!.id);
    // Health and status read the latest run from here, not from the whole history.
    await tx.run(sql`
      INSERT INTO sync_last_runs (customer_id, stream, last_run_id) VALUES (${run.customerId}, ${run.stateKey}, ${id})
      ON CONFLICT (customer_id, stream) DO UPDATE SET last_run_id = excluded.last_run_id`);
    return id;
  });
}

export async function finishRun(db: Adapter, id: number, outcome: { status: Exclude<RunStatus, 'running'>; finishedAt: string; error?: string | null }): Promise<void> {
  await db.transaction(async (tx) => {
    const rows = await tx.all<{ customer_id: string; stream: string }>(sql`
      UPDATE sync_runs SET status = ${outcome.status}, finished_at = ${outcome.finishedAt}, error = ${outcome.error ?? null}
      WHERE id = ${id} RETURNING customer_id, stream`);
    const run = rows[0];
    if (!run) throw new StoreError(`run ${id} does not exist`);
    if (outcome.status === 'succeeded') {
      await tx.run(sql`
        UPDATE sync_last_runs SET last_success_run_id = ${id}
        WHERE customer_id = ${run.customer_id} AND stream = ${run.stream} AND (last_success_run_id IS NULL OR last_success_run_id < ${id})`);
    }
  });
}

/** Finished runs before `cutoff`, none a stream's latest or latest success: oldest first, at most `limit`. */
export function pruneRuns(db: Adapter, cutoff: string, limit: number): Promise<number> {
  // Oldest first through the primary key, in bounded batches so no statement holds the table for long.
  return db.run(sql`
    DELETE FROM sync_runs WHERE id IN (
      SELECT r.id FROM sync_runs r
       WHERE r.status <> 'running' AND r.finished_at < ${cutoff}
         AND NOT EXISTS (SELECT 1 FROM sync_last_runs l WHERE l.last_run_id = r.id OR l.last_success_run_id = r.id)
       ORDER BY r.id LIMIT ${limit})`);
}

/**
 * The latest run of each (customer, stream), ordered by customer and stream. A run recorded as running whose lock
 * no live process holds (killed with kill -9, its session cut off by a database restart) is shown as what it is, an
 * interrupted run with ABANDONED_RUN_ERROR, without writing: the next run of the stream records it so.
 */
export async function lastRuns(db: Adapter, customerId?: string): Promise<RunRecord[]> {
  const where = customerId === undefined ? sql`` : sql`WHERE l.customer_id = ${customerId}`;
  const rows = await db.all<RunRow>(sql`
    SELECT r.* FROM sync_last_runs l JOIN sync_runs r ON r.id = l.last_run_id ${where}
    ORDER BY r.customer_id, r.stream`);
  const runs = rows.map(toRun);
  for (const run of runs) {
    if (run.status === 'running' && !(await db.runLockHeld(run.customerId, run.stateKey))) {
      Object.assign(run, { status: 'interrupted', error: ABANDONED_RUN_ERROR });
    }
  }
  return runs;
}
