import { sql } from '../../db/schema/drizzle.ts';
import { StoreError } from '../errors.ts';
import type { Executor } from './adapter.ts';
import { stateJson, toState, type StateRow } from './state-rows.ts';
import type { IsoUtc, StateChange, StateChangeRecord, SyncState } from './types.ts';

/**
 * An operator's (or the engine's) change of sync state in the caller's transaction, recorded in `sync_state_changes`:
 * the only way a watermark or a backfill's progress moves backwards (Store.changeState). Its times are canonical.
 */
export async function applyStateChange(
  tx: Executor,
  change: StateChange,
  { at, to, progress }: { at: IsoUtc; to: IsoUtc | null; progress: { windowStart: IsoUtc; windowEnd: IsoUtc } | null },
): Promise<StateChangeRecord> {
  const [row] = await tx.all<StateRow>(sql`SELECT * FROM sync_state WHERE customer_id = ${change.customerId} AND stream = ${change.stateKey}`);
  const before = row && toState(row);
  if (!before) throw new StoreError(`there is no sync state for customer ${change.customerId} and stream ${change.stateKey}`);
  let after: SyncState | undefined;
  if (progress) {
    // A backfill's progress: its next window (none once every window is done, with its range still recorded).
    if (before.windowStart === null ? before.rangeStart === null : !(progress.windowStart < before.windowStart)) {
      throw new StoreError(
        `moving the progress of ${change.customerId}/${change.stateKey} to ${progress.windowStart} would not move it backwards (it is at ${before.windowStart ?? 'nothing'})`,
      );
    }
    await tx.run(sql`
      UPDATE sync_state SET window_start = ${progress.windowStart}, window_end = ${progress.windowEnd}, page_cursor = NULL, windows = NULL, updated_at = ${at}
      WHERE customer_id = ${change.customerId} AND stream = ${change.stateKey}`);
    const { windows: _dropped, ...rest } = before;
    after = { ...rest, windowStart: progress.windowStart, windowEnd: progress.windowEnd, pageCursor: null, updatedAt: at };
  } else if (change.action === 'rewind') {
    if (!before.watermark) {
      throw new StoreError(`${change.customerId}/${change.stateKey} has no watermark to rewind (a backfill keeps its progress as a window: reset it instead)`);
    }
    if (!(to! < before.watermark)) {
      throw new StoreError(`rewinding to ${to} would not move the watermark ${before.watermark} backwards`);
    }
    // The one statement that moves a watermark backwards: not through #writeState and its forward-only guard.
    await tx.run(sql`
      UPDATE sync_state SET watermark = ${to}, window_start = NULL, window_end = NULL, page_cursor = NULL, windows = NULL, updated_at = ${at}
      WHERE customer_id = ${change.customerId} AND stream = ${change.stateKey}`);
    const { windows: _dropped, ...rest } = before;
    after = { ...rest, watermark: to, windowStart: null, windowEnd: null, pageCursor: null, updatedAt: at };
  } else {
    await tx.run(sql`DELETE FROM sync_state WHERE customer_id = ${change.customerId} AND stream = ${change.stateKey}`);
  }
  const [inserted] = await tx.all<{ id: number }>(sql`
    INSERT INTO sync_state_changes (customer_id, stream, action, actor, changed_at, old_watermark, new_watermark, old_state, new_state)
    VALUES (${change.customerId}, ${change.stateKey}, ${change.action}, ${change.actor}, ${at}, ${before.watermark},
            ${after?.watermark ?? null}, ${stateJson(before)}, ${after ? stateJson(after) : null})
    RETURNING id`);
  return {
    id: Number(inserted!.id),
    customerId: change.customerId,
    stateKey: change.stateKey,
    action: change.action,
    actor: change.actor,
    changedAt: at,
    oldWatermark: before.watermark,
    newWatermark: after?.watermark ?? null,
    before,
    after,
  };
}
