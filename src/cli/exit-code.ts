import { ExitCode, exitCodeFor } from '../errors.ts';
import type { StreamOutcome } from '../sync/engine.ts';

/**
 * Exit code of a run, for cron and systemd: any ordinary failure 1; only authentication failures 77; only
 * configuration failures 78; only usage failures 64; nothing failed but a lock was held 75; otherwise 0 (an
 * interrupted run is not a failure: it resumes next time).
 */
export function exitCodeOf(outcomes: ReadonlyArray<StreamOutcome>): number {
  const failed = outcomes.filter((o) => o.status === 'failed').map((o) => exitCodeFor(o.error));
  if (failed.length) {
    const distinct = new Set(failed);
    return distinct.size === 1 ? failed[0]! : ExitCode.FAILURE;
  }
  if (outcomes.some((o) => o.status === 'locked')) return ExitCode.LOCKED;
  return ExitCode.OK;
}
