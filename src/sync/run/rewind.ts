import type { ContractViolation } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import { toIsoUtc } from '../../time.ts';
import { fromStore, rewindOnEvidence, type RunPlan } from './plan.ts';
import type { RunRequest, StreamRunContext } from './types.ts';

/**
 * The answer proved that windows already committed may be incomplete (plan.ts, `rewindOnEvidence`): the state goes
 * back over them, recorded in sync_state_changes, so the next runs read them again once the cause is fixed; upserts
 * make the re-read harmless. The windows read ahead of the old progress go too (the store drops them).
 */
export async function rewind(input: {
  ctx: StreamRunContext;
  stateKey: string;
  request: RunRequest;
  plan: RunPlan;
  violation: ContractViolation;
  log: Logger;
  grid: { stepMs: number; gridMs: number };
}): Promise<void> {
  const { ctx, stateKey, violation, log } = input;
  try {
    const current = fromStore(await ctx.store.getState(ctx.customerId, stateKey));
    const to = rewindOnEvidence({ request: input.request, plan: input.plan, earliest: violation.outside!.earliest, current, ...input.grid });
    if (!to) return;
    const change = await ctx.store.changeState({
      customerId: ctx.customerId,
      stateKey,
      actor: `occupancy-sync (page contract: ${violation.reason})`,
      at: toIsoUtc(ctx.clock.now()),
      action: 'rewind',
      ...('progress' in to ? { progress: { windowStart: toIsoUtc(to.progress.windowStart), windowEnd: toIsoUtc(to.progress.windowEnd) } } : { to: toIsoUtc(to.watermark) }),
    });
    if ('progress' in to) {
      log.warn(
        { from: change.before?.windowStart ?? null, to: change.after?.windowStart ?? null, change: change.id, evidence: violation.detail },
        `the answer proves windows already loaded may be incomplete: the backfill's progress went back to ${toIsoUtc(to.progress.windowStart)} (sync_state_changes #${change.id}), so the next runs read them again`,
      );
    } else {
      log.warn(
        { from: change.oldWatermark, to: change.newWatermark, change: change.id, evidence: violation.detail },
        `the answer proves windows already committed may be incomplete: the watermark went back from ${change.oldWatermark} to ${change.newWatermark} (sync_state_changes #${change.id}), so the next runs read them again`,
      );
    }
  } catch (error) {
    log.error({ err: error }, 'could not move the state back over the windows the answer puts in doubt');
  }
}
