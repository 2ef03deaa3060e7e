import { canonicalOrNull, canonicalTimestamp } from './timestamps.ts';
import type { RunRecord, RunStatus, StateChangeRecord, SyncState, SyncStateUpdate, WindowCheckpoint } from './types.ts';

/** The rows of `sync_state`, `sync_runs` and `sync_state_changes` as the store reads and writes them. */

export type Normalised = Omit<SyncStateUpdate, 'windows'> & { windows: string | null };

export function normaliseState(s: SyncStateUpdate): Normalised {
  const field = (name: string) => `state ${s.customerId}/${s.stateKey}: ${name}`;
  const windows = (s.windows ?? []).map((w, i) => ({
    from: canonicalTimestamp(w.from, field(`windows[${i}].from`)),
    to: canonicalTimestamp(w.to, field(`windows[${i}].to`)),
    cursor: w.cursor ?? null,
    done: w.done === true,
  }));
  return {
    windows: windows.length ? JSON.stringify(windows) : null,
    customerId: s.customerId,
    stateKey: s.stateKey,
    watermark: canonicalOrNull(s.watermark, field('watermark')),
    windowStart: canonicalOrNull(s.windowStart, field('windowStart')),
    windowEnd: canonicalOrNull(s.windowEnd, field('windowEnd')),
    pageCursor: s.pageCursor ?? null,
    rangeStart: canonicalOrNull(s.rangeStart, field('rangeStart')),
    rangeEnd: canonicalOrNull(s.rangeEnd, field('rangeEnd')),
  };
}

/**
 * A state as `sync_state_changes.old_state`/`new_state` keep it: JSON whose state key is `stream`, as the table's
 * column is named (rows written before the field was called `stateKey` in code read the same).
 */
export function stateJson({ customerId, stateKey, ...rest }: SyncState): string {
  return JSON.stringify({ customerId, stream: stateKey, ...rest });
}

export function stateFromJson(text: string): SyncState {
  const { customerId, stream, ...rest } = JSON.parse(text) as Omit<SyncState, 'stateKey'> & { stream: string };
  return { customerId, stateKey: stream, ...rest };
}

export interface StateRow {
  customer_id: string;
  stream: string;
  watermark: string | null;
  window_start: string | null;
  window_end: string | null;
  page_cursor: string | null;
  windows?: string | null;
  range_start: string | null;
  range_end: string | null;
  updated_at: string;
}

export function toState(r: StateRow): SyncState {
  return {
    customerId: r.customer_id,
    stateKey: r.stream,
    watermark: r.watermark,
    windowStart: r.window_start,
    windowEnd: r.window_end,
    pageCursor: r.page_cursor,
    rangeStart: r.range_start,
    rangeEnd: r.range_end,
    ...(r.windows && { windows: JSON.parse(r.windows) as WindowCheckpoint[] }),
    updatedAt: r.updated_at,
  };
}

export interface RunRow {
  id: number;
  customer_id: string;
  stream: string;
  mode: RunRecord['mode'];
  started_at: string;
  finished_at: string | null;
  status: RunStatus;
  pages: number;
  records: number;
  rejected: number;
  error: string | null;
}

export function toRun(r: RunRow): RunRecord {
  return {
    id: Number(r.id),
    customerId: r.customer_id,
    stateKey: r.stream,
    mode: r.mode,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    status: r.status,
    pages: Number(r.pages),
    records: Number(r.records),
    rejected: Number(r.rejected),
    error: r.error,
  };
}

/** A row of `sync_state_changes`. */
export function toStateChange(r: Record<string, unknown>): StateChangeRecord {
  return {
    id: Number(r.id),
    customerId: String(r.customer_id),
    stateKey: String(r.stream),
    action: r.action as 'rewind' | 'reset',
    actor: String(r.actor),
    changedAt: String(r.changed_at),
    oldWatermark: (r.old_watermark as string | null) ?? null,
    newWatermark: (r.new_watermark as string | null) ?? null,
    before: r.old_state ? stateFromJson(String(r.old_state)) : undefined,
    after: r.new_state ? stateFromJson(String(r.new_state)) : undefined,
  };
}
