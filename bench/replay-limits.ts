/**
 * The limits of a platform far away (issue 25), for the replay server: every answer leaves `latencyMs` after its
 * request arrived, and a query beyond the key's allowance (in flight at once, or accepted in the last second) is
 * answered 429 with `Retry-After`. The platform's real limits are not documented ("not shown" in the API
 * document); these are the two shapes such limits take, so a client can be measured against each.
 *
 * Only the query endpoint is limited: the token endpoint is delayed like every answer but never refused, since a
 * client asks it once per token. A refused query still waits out the latency (the round trip is the same) but holds
 * no slot: it is neither in flight nor counted against the rate.
 */

export interface ReplayLimits {
  /** Every answer (tokens, pages, 429s) is sent this long after its request arrived. 0: at once. */
  latencyMs: number;
  /** Queries accepted and not yet answered, at most; one more is answered 429. Absent: no limit. */
  maxInFlight?: number;
  /** Queries accepted in any window of one second, at most; one more is answered 429. Absent: no limit. */
  perSecond?: number;
  /** The 429's `Retry-After`, in seconds. Default 1. */
  retryAfterSeconds?: number;
}

export const NO_LIMITS: ReplayLimits = { latencyMs: 0 };

/** What the limits saw since they were last set. */
export interface LimitStats {
  /** Requests to the token and query endpoints, refused ones included. */
  requests: number;
  queries: number;
  /** Queries answered 429 because `maxInFlight` were in flight, or `perSecond` accepted in the last second. */
  refusedInFlight: number;
  refusedRate: number;
  /** The most queries open at the server at once: arrived and not yet answered, refused ones included. */
  maxOpen: number;
  /** The most queries accepted and not yet answered at once: never above maxInFlight. */
  maxAccepted: number;
}

export type Verdict = 'accepted' | 'in-flight' | 'rate';

/** Checks a limits object from outside (the control endpoint's body); returns it, or throws naming the field. */
export function parseLimits(value: unknown): ReplayLimits {
  if (value === null || typeof value !== 'object') throw new TypeError('limits: send a JSON object {latencyMs, maxInFlight?, perSecond?, retryAfterSeconds?}');
  const v = value as Record<string, unknown>;
  const field = (name: string, min: number, optional: boolean): number | undefined => {
    const x = v[name];
    if (x === undefined && optional) return undefined;
    if (typeof x !== 'number' || !Number.isInteger(x) || x < min) throw new RangeError(`limits.${name}: a whole number >= ${min}, got ${JSON.stringify(x)}`);
    return x;
  };
  const latencyMs = field('latencyMs', 0, false)!;
  const maxInFlight = field('maxInFlight', 1, true);
  const perSecond = field('perSecond', 1, true);
  const retryAfterSeconds = field('retryAfterSeconds', 0, true);
  return { latencyMs, ...(maxInFlight !== undefined && { maxInFlight }), ...(perSecond !== undefined && { perSecond }), ...(retryAfterSeconds !== undefined && { retryAfterSeconds }) };
}

/**
 * Admission of queries under the limits. `admit` decides when a query arrives; `done` when its answer leaves.
 * Time is passed in (milliseconds, monotonic), so the rules are tested without a clock.
 */
export class Gate {
  readonly limits: ReplayLimits;
  #stats: LimitStats = { requests: 0, queries: 0, refusedInFlight: 0, refusedRate: 0, maxOpen: 0, maxAccepted: 0 };
  #open = 0;
  #accepted = 0;
  /** Start times of accepted queries within the last second, oldest first (a queue: `#head` is its front). */
  #starts: number[] = [];
  #head = 0;

  constructor(limits: ReplayLimits = NO_LIMITS) {
    this.limits = limits;
  }

  get retryAfterSeconds(): number {
    return this.limits.retryAfterSeconds ?? 1;
  }

  /** A request to the token endpoint: counted, never refused. */
  token(): void {
    this.#stats.requests++;
  }

  admit(nowMs: number): Verdict {
    const s = this.#stats;
    s.requests++;
    s.queries++;
    this.#open++;
    s.maxOpen = Math.max(s.maxOpen, this.#open);
    const { maxInFlight, perSecond } = this.limits;
    if (maxInFlight !== undefined && this.#accepted >= maxInFlight) {
      s.refusedInFlight++;
      return 'in-flight';
    }
    if (perSecond !== undefined) {
      while (this.#head < this.#starts.length && this.#starts[this.#head]! <= nowMs - 1000) this.#head++;
      if (this.#head > 1024) {
        this.#starts = this.#starts.slice(this.#head);
        this.#head = 0;
      }
      if (this.#starts.length - this.#head >= perSecond) {
        s.refusedRate++;
        return 'rate';
      }
      this.#starts.push(nowMs);
    }
    this.#accepted++;
    s.maxAccepted = Math.max(s.maxAccepted, this.#accepted);
    return 'accepted';
  }

  /** The answer to a query admitted with `verdict` has left. */
  done(verdict: Verdict): void {
    this.#open--;
    if (verdict === 'accepted') this.#accepted--;
  }

  stats(): LimitStats {
    return { ...this.#stats };
  }
}
