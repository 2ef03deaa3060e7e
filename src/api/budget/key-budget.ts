import type { Clock } from '../../clock.ts';
import { RateLimitError } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import { abortError } from '../abort.ts';
import type { LimitState, Observation } from './aimd.ts';
import { KeyLearner } from './learner.ts';
import { rateSpacing } from './limiter.ts';
import type { ApiBudget, BudgetSettings, BudgetStats, KeyStore, Permit } from './types.ts';

/**
 * The budget of one key in one process: a queue of the queries waiting to go, served in order by one loop that takes
 * slots from the key's store (shared with other processes or not), waits out the platform's pauses and the rate,
 * and feeds each answer to the limit (learner.ts). Decisions are the pure functions of aimd.ts and limiter.ts; this
 * class only waits, and every wait is on an event: a slot given back here, a change in the store, the injected sleep.
 */

export interface KeyBudgetOptions {
  clock: Clock;
  /** Waits out pauses and the rate; tests inject one that returns at once. */
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  logger: Logger;
  /** Shown in log lines: the key's name (never its secret). */
  label: string;
  /** A pause longer than this is not waited for: acquire rejects with a RateLimitError (the next run resumes). */
  maxPauseMs: number;
  /** How often to look at a shared store for slots other processes gave back, when it cannot say so itself. */
  pollMs?: number;
  /** Latency of an answer from sending to the whole body: a monotonic clock (tests: a simulated one). */
  elapsed?: () => number;
  /**
   * How long a slot taken from the store may pass from query to query in this process before it goes back (default:
   * for ever). A shared store sets a second or so: each slot then goes back through the store that often, so this
   * process sees other processes' changes to the limit, they get their chance at the slot, and a lease never expires
   * under a slot still in use.
   */
  reuseMs?: number;
  /**
   * How long a slot no query here uses any more stays with this process, for its next query, before it goes back to
   * the store (default 0: at once). A store behind a round trip sets a few tens of milliseconds: a query that follows
   * another's answer (a window's next page, once the page is stored) then goes without waiting for the store. The
   * platform sees no more in flight for it: a slot kept is a query not sent.
   */
  lingerMs?: number;
}

interface Spare {
  slot: number;
  level: number;
  takenAt: number;
  /** Gives the slot back to the store if no query here takes it first (`lingerMs`). */
  timer?: NodeJS.Timeout;
}

interface Waiter {
  resolve: (permit: Permit) => void;
  reject: (error: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: () => void;
}

/** The options every backend passes on as they were given (the rest is per backend and per key). */
export function passedOn(o: Pick<KeyBudgetOptions, 'clock' | 'sleep' | 'logger' | 'maxPauseMs'>): Pick<KeyBudgetOptions, 'clock' | 'sleep' | 'logger' | 'maxPauseMs'> {
  return { clock: o.clock, sleep: o.sleep, logger: o.logger, maxPauseMs: o.maxPauseMs };
}

export class KeyBudget implements ApiBudget {
  readonly #store: KeyStore;
  readonly #settings: BudgetSettings;
  readonly #o: KeyBudgetOptions;
  readonly #learner: KeyLearner;
  readonly #waiters: Waiter[] = [];
  #state: LimitState | undefined;
  #pumping = false;
  /** Resolves the loop's current wait for a slot: called when a slot is given back in this process. */
  #wake: (() => void) | undefined;
  /** Aborts the loop's current wait when no one is left waiting. */
  #idle: AbortController | undefined;
  /** The latest pause this process has waited out: a fake clock that does not move must not make it wait twice. */
  #servedPause = 0;
  #inFlight = 0;
  /** Counts slots given back here, so a release between a take and the wait that follows it is not missed. */
  #given = 0;
  /** What ended the loop's latest wait: a slot given back here, or the store (a change, the poll). */
  #wokenBy: 'release' | 'store' = 'store';
  /** Counts the grants that used the limit up: a query in flight across one of them saw the limit bind. */
  #saturations = 0;

  /**
   * Slots given back while queries were waiting here, kept for them instead of going back through the store: no round
   * trip to a shared store between one query and the next.
   */
  readonly #spare: Spare[] = [];
  #maxInFlight = 0;

  constructor(store: KeyStore, settings: BudgetSettings, options: KeyBudgetOptions) {
    this.#store = store;
    this.#settings = settings;
    this.#o = options;
    this.#learner = new KeyLearner(store, settings, options);
  }

  acquire(signal?: AbortSignal): Promise<Permit> {
    if (signal?.aborted) return Promise.reject(abortError(signal));
    return new Promise<Permit>((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        signal,
        onAbort: () => {
          const at = this.#waiters.indexOf(waiter);
          if (at >= 0) this.#waiters.splice(at, 1);
          if (this.#waiters.length === 0) this.#idle?.abort();
          reject(abortError(signal!));
        },
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      this.#waiters.push(waiter);
      void this.#pump();
    });
  }

  stats(): BudgetStats {
    return {
      limit: this.#state?.limit ?? (this.#settings.adaptive ? Math.min(this.#settings.startInFlight, this.#settings.maxInFlight) : this.#settings.maxInFlight),
      inFlight: this.#inFlight,
      ceiling: this.#state?.ceiling ?? 0,
      maxInFlight: this.#maxInFlight,
      ...this.#learner.figures,
    };
  }

  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (this.#waiters.length > 0) {
        this.#idle = new AbortController();
        await this.#useSpares();
        if (this.#waiters.length === 0) break;
        if (this.#state && this.#inFlight >= this.#state.limit && this.#wokenBy === 'release') {
          // Every slot of the limit is out from this process: only one coming back, or a change in the store, helps.
          await this.#slotFreed();
          continue;
        }
        const now = this.#o.clock.now();
        const given = this.#given;
        const take = await this.#store.take(Math.max(now, this.#servedPause), this.#waiters.length);
        this.#state = take.state;
        if (take.grants.length > 0) {
          for (let i = 0; i < take.grants.length; i++) {
            const { slot, level } = take.grants[i]!;
            try {
              await this.#grant(slot, level, take.state.limit, take.state.epoch, now, Date.now());
            } catch (error) {
              // The slots of this take not handed out yet go back before the failure ends the loop.
              await Promise.allSettled(take.grants.slice(i + 1).map((g) => this.#store.give(g.slot)));
              throw error;
            }
          }
          continue;
        }
        if (take.why === 'paused') {
          await this.#waitPause(take.state.pausedUntil, now);
          continue;
        }
        if (this.#given === given) await this.#slotFreed();
      }
    } catch (error) {
      // The store failed (its database is gone): every query waiting fails with it; the next acquire tries again.
      for (const waiter of this.#waiters.splice(0)) this.#fail(waiter, error);
    } finally {
      this.#pumping = false;
      this.#idle = undefined;
      await Promise.allSettled(this.#spare.filter((spare) => !spare.timer).map((spare) => this.#keepOrGive(spare)));
    }
  }

  /** A spare slot no query here waits for: kept `lingerMs` for the next one, or given back to the store now. */
  #keepOrGive(spare: Spare): Promise<void> {
    const lingerMs = this.#o.lingerMs ?? 0;
    if (lingerMs <= 0) {
      const at = this.#spare.indexOf(spare);
      if (at >= 0) this.#spare.splice(at, 1);
      return this.#store.give(spare.slot);
    }
    if (!this.#spare.includes(spare)) this.#spare.push(spare);
    spare.timer = setTimeout(() => {
      const at = this.#spare.indexOf(spare);
      if (at < 0) return;
      this.#spare.splice(at, 1);
      // A failure here is the store's (its database gone): the next take says so to a query; the slot goes with it.
      this.#store.give(spare.slot).catch((error: unknown) => this.#o.logger.debug({ err: error }, 'API budget: a kept slot could not be given back'));
    }, lingerMs);
    spare.timer.unref();
    return Promise.resolve();
  }

  /** Hands the spare slots to the queries waiting, while the key's state (as last read) allows them. */
  async #useSpares(): Promise<void> {
    while (this.#spare.length > 0 && this.#waiters.length > 0) {
      const spare = this.#spare.shift()!;
      clearTimeout(spare.timer);
      const state = this.#state;
      const now = this.#o.clock.now();
      // Not above the limit, by slot or by count: after a cut, queries let go under the old limit are still out.
      if (!state || spare.slot >= state.limit || this.#inFlight >= state.limit || state.pausedUntil > Math.max(now, this.#servedPause)) {
        await this.#store.give(spare.slot);
        continue;
      }
      // This process's own count is a floor of the key's: the level is at least that.
      await this.#grant(spare.slot, Math.max(spare.level, this.#inFlight + 1), state.limit, state.epoch, now, spare.takenAt);
    }
  }

  async #grant(slot: number, level: number, limit: number, epoch: number, now: number, takenAt: number): Promise<void> {
    if (this.#settings.ratePerSecond !== undefined) {
      const { intervalMs, burst } = rateSpacing(this.#settings.ratePerSecond);
      let at: number;
      try {
        at = await this.#store.reserve(now, intervalMs, burst);
      } catch (error) {
        await this.#store.give(slot).catch(() => {});
        throw error;
      }
      // Cut short only when no one is left waiting; the slot then goes back below.
      if (at > now) await this.#o.sleep(at - now, this.#idle!.signal).catch(() => {});
    }
    const waiter = this.#waiters.shift();
    if (!waiter) {
      await this.#store.give(slot);
      return;
    }
    waiter.signal?.removeEventListener('abort', waiter.onAbort);
    this.#inFlight++;
    this.#maxInFlight = Math.max(this.#maxInFlight, this.#inFlight);
    const saturations = this.#saturations;
    if (level >= limit) this.#saturations++;
    waiter.resolve(this.#permit(slot, level, limit, epoch, saturations, takenAt));
  }

  async #waitPause(until: number, now: number): Promise<void> {
    const ms = until - now;
    if (ms > this.#o.maxPauseMs) {
      const error = new RateLimitError(
        `the platform asked API key ${JSON.stringify(this.#o.label)} to wait ${Math.ceil(ms / 1000)} s (Retry-After), longer than a request waits ` +
          `(${Math.round(this.#o.maxPauseMs / 1000)} s): nothing more is sent with it until then. The next run resumes where this one stopped`,
        { retryAfterMs: ms },
      );
      for (const waiter of this.#waiters.splice(0)) this.#fail(waiter, error);
      return;
    }
    try {
      await this.#o.sleep(ms, this.#idle!.signal);
    } catch {
      return; // everyone waiting gave up: the loop ends, the pause stays in the store for the next query
    }
    this.#servedPause = until;
  }

  #slotFreed(): Promise<void> {
    return new Promise<void>((resolve) => {
      let settled = false;
      const done = (by: 'release' | 'store') => {
        if (settled) return;
        settled = true;
        this.#wokenBy = by;
        this.#wake = undefined;
        this.#idle?.signal.removeEventListener('abort', byStore);
        resolve();
      };
      const byStore = () => done('store');
      this.#wake = () => done('release');
      this.#idle?.signal.addEventListener('abort', byStore, { once: true });
      this.#store.changed(this.#o.pollMs ?? 50, this.#idle!.signal).then(byStore, byStore);
    });
  }

  #fail(waiter: Waiter, error: unknown): void {
    waiter.signal?.removeEventListener('abort', waiter.onAbort);
    waiter.reject(error);
  }

  #permit(slot: number, level: number, limit: number, epoch: number, saturations: number, takenAt: number): Permit {
    const sentAt = this.#o.elapsed?.() ?? performance.now();
    let released = false;
    return {
      level,
      release: async (outcome) => {
        if (released) return { paused: false };
        released = true;
        this.#inFlight--;
        const latencyMs = outcome.kind === 'clean' ? outcome.latencyMs : (this.#o.elapsed?.() ?? performance.now()) - sentAt;
        // The count at a grant may exceed the limit the query went under: slots taken before a cut are still out, and
        // slots are given back a little after the platform is done with a query (its answer is read first). An answer
        // speaks of no more than that limit.
        const proven = Math.min(level, limit);
        const seen = this.#learner.observation(outcome, proven, epoch, latencyMs, this.#saturations > saturations, this.#state?.limit ?? 0);
        // A query waiting here gets the slot directly (see #spare); otherwise it goes back to the store, and the loop is
        // woken as soon as it is on its way: a store on one connection (Postgres) sends the next take right behind the
        // give, in the same round trip, instead of after its answer.
        const give = () => {
          const reusable = Date.now() - takenAt < (this.#o.reuseMs ?? Infinity);
          const spare = { slot, level: proven, takenAt };
          if (reusable && this.#waiters.length > 0) this.#spare.push(spare);
          const giving = !reusable ? this.#store.give(slot) : this.#waiters.length > 0 ? Promise.resolve() : this.#keepOrGive(spare);
          this.#given++;
          this.#wake?.();
          return giving;
        };
        // A refusal is learnt before its slot goes back, so the pause it brings is in force before the next query;
        // any other answer gives the slot back first, so slots are held no longer than the platform holds the query.
        if (seen.kind === 'congested') {
          try {
            return await this.#learn(seen);
          } finally {
            await give();
          }
        }
        await give();
        return this.#learn(seen);
      },
    };
  }

  /** Feeds one answer to the key's limit (learner.ts) and keeps the state it leaves in force. */
  async #learn(seen: Observation): Promise<{ paused: boolean }> {
    if (!this.#state) return { paused: false };
    const { state, paused } = await this.#learner.learn(this.#state, seen);
    this.#state = state;
    return { paused };
  }
}
