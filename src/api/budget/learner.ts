import type { Clock } from '../../clock.ts';
import type { Logger } from '../../logger.ts';
import { LatencyTracker, observe, type LimitState, type Observation } from './aimd.ts';
import type { BudgetSettings, KeyStore, Outcome } from './types.ts';

/**
 * How one process turns a key's answers into changes of the key's limit: each answer read as an observation (its
 * latency judged per operation), applied with aimd.ts to the state as stored, and each change of the limit said in the
 * log. Per process and per key; the state itself lives in the store.
 */
export class KeyLearner {
  readonly #store: KeyStore;
  readonly #settings: BudgetSettings;
  readonly #o: { clock: Clock; logger: Logger; label: string };
  readonly #latency = new LatencyTracker();
  #credit = 0;
  /** Refusals (429) and overload answers (503) this process saw, and the pauses of the whole key they brought. */
  readonly figures = { rateLimited: 0, overloaded: 0, pauses: 0 };

  constructor(store: KeyStore, settings: BudgetSettings, options: { clock: Clock; logger: Logger; label: string }) {
    this.#store = store;
    this.#settings = settings;
    this.#o = options;
  }

  /** How an answer reads to the limit; a clean answer whose latency clearly rose reads as congestion. */
  observation(outcome: Outcome, level: number, epoch: number, latencyMs: number, saturated: boolean, limit: number): Observation {
    switch (outcome.kind) {
      case 'clean':
        if (this.#latency.add(outcome.operation ?? '', latencyMs, limit) === 'slow') return { kind: 'congested', cause: 'slow', level, epoch };
        return { kind: 'clean', level, epoch, saturated, queueing: this.#latency.queueing() };
      case 'rate_limited':
      case 'overloaded':
        this.figures[outcome.kind === 'rate_limited' ? 'rateLimited' : 'overloaded']++;
        return {
          kind: 'congested',
          cause: outcome.kind,
          level,
          epoch,
          ...(outcome.retryAfterMs !== undefined && { retryAfterMs: outcome.retryAfterMs }),
        };
      case 'timeout':
        return { kind: 'congested', cause: 'timeout', level, epoch };
      default:
        return { kind: 'neutral' };
    }
  }

  /**
   * Feeds one answer to the key's limit, `known` being the state this process last read; the store is written only
   * when the limit's state changes. Resolves to the state in force and whether the answer paused the whole key.
   */
  async learn(known: LimitState, seen: Observation): Promise<{ state: LimitState; paused: boolean }> {
    if (seen.kind === 'neutral') return { state: known, paused: false };
    const now = this.#o.clock.now();
    const credit = this.#credit;
    const local = observe(known, credit, seen, now, this.#settings);
    this.#credit = local.credit;
    if (local.state === known) return { state: known, paused: false };
    let paused = false;
    let before = known;
    // Applied again to the state as stored: another process may have moved it since this one last read it.
    const stored = await this.#store.update((state) => {
      before = state;
      const step = observe(state, credit, seen, now, this.#settings);
      paused = step.paused;
      return step.state;
    });
    this.#report(before, stored, seen, paused);
    return { state: stored, paused };
  }

  #report(before: LimitState, after: LimitState, seen: Observation, paused: boolean): void {
    const key = this.#o.label;
    if (paused) {
      this.figures.pauses++;
      const until = new Date(after.pausedUntil).toISOString();
      const why = this.#settings.adaptive ? 'again, under a limit already cut for that' : `at its fixed limit of ${after.limit} (API_IN_FLIGHT)`;
      this.#o.logger.warn(
        { key, pausedUntil: until, limit: after.limit },
        `the platform refused a query of API key ${JSON.stringify(key)} ${why}: no query of the key goes before its Retry-After (${until})`,
      );
    }
    if (after.limit === before.limit) return;
    const why = seen.kind === 'congested' ? `${seen.cause.replace('_', ' ')} at ${seen.level} in flight` : 'answers clean and fast';
    const fields = { key, limit: after.limit, previous: before.limit, ceiling: after.ceiling };
    const line = `API budget of key ${JSON.stringify(key)}: ${after.limit} queries in flight at most (was ${before.limit}; ${why})`;
    if (after.limit < before.limit) this.#o.logger.info(fields, line);
    else this.#o.logger.debug(fields, line);
  }
}
