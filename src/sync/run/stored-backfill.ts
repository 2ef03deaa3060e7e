import { UsageError } from '../../errors.ts';
import type { SyncState } from '../../store/types.ts';
import { toIsoUtc } from '../../time.ts';
import { fromStore } from './plan.ts';
import type { RunRequest, StreamOutcome } from './types.ts';

/**
 * A backfill whose range is stored already, decided before a run is recorded: a re-run of a complete range is not a
 * run, and must not hide the real one in `status`; a different range needs the operator to say the stored progress
 * may go. Undefined: the backfill runs.
 */
export function storedBackfill(stored: SyncState | undefined, request: Extract<RunRequest, { mode: 'backfill' }>): Pick<StreamOutcome, 'status' | 'note' | 'error'> | undefined {
  if (!stored) return undefined;
  const range = fromStore(stored).range;
  const sameRange = range.from === request.from && range.to === request.to;
  if (sameRange && !stored.windowStart) return { status: 'succeeded', note: 'complete' };
  if (sameRange || !stored.rangeStart || !stored.rangeEnd) return undefined;
  const progress = stored.windowStart ? `in progress, next window ${stored.windowStart}` : 'complete';
  const error = new UsageError(
    `a backfill of [${stored.rangeStart}, ${stored.rangeEnd}) is stored (${progress}); this one asks for ` +
      `[${toIsoUtc(request.from)}, ${toIsoUtc(request.to)}). Fix: add --restart to start over for the new range (the ` +
      `stored progress is dropped; rows already loaded stay), or give the stored --from and --to to finish it`,
  );
  return { status: 'failed', error };
}
