import { rand01, Tag } from './ids.ts';
import type { FaultOptions } from './interfaces.ts';

export type FaultKind =
  | 'serverError'
  | 'rateLimit'
  | 'connectionReset'
  | 'slow'
  | 'truncatedGzip'
  | 'revokeToken'
  | 'graphqlError';

/** Order of the cumulative draw: fixed so a seed always yields the same sequence of faults. */
export const FAULT_KINDS: readonly FaultKind[] = [
  'serverError',
  'rateLimit',
  'connectionReset',
  'slow',
  'truncatedGzip',
  'revokeToken',
  'graphqlError',
];

/** A request's fault, and how long it is held back when it is `slow`. */
export interface FaultDraw {
  kind: FaultKind;
  slowMs: number;
}

/**
 * One draw per query request, in arrival order: request n gets the fault selected by a hash of (seed, n) against
 * the cumulative rates, so a run with the same seed and the same request order sees the same faults. A request
 * `slowRequests` names is slow whatever the draw.
 */
export class FaultPlan {
  readonly options: Readonly<FaultOptions>;
  readonly #rates: Array<[FaultKind, number]>;
  #n = 0;

  constructor(options: FaultOptions | undefined) {
    this.options = { ...options };
    this.#rates = [];
    let total = 0;
    for (const kind of FAULT_KINDS) {
      const rate = options?.[kind] ?? 0;
      if (typeof rate !== 'number' || !(rate >= 0 && rate <= 1)) {
        throw new RangeError(`sandbox faults.${kind} must be a rate between 0 and 1, got ${JSON.stringify(rate)}`);
      }
      total += rate;
      if (rate > 0) this.#rates.push([kind, rate]);
    }
    const latency = options?.latencyMs ?? 0;
    if (typeof latency !== 'number' || !(latency >= 0 && latency <= 60_000)) {
      throw new RangeError(`sandbox faults.latencyMs must be from 0 to 60000 ms, got ${JSON.stringify(latency)}`);
    }
    for (const [n, ms] of Object.entries(options?.slowRequests ?? {})) {
      if (!/^(0|[1-9][0-9]*)$/.test(n) || typeof ms !== 'number' || !(ms >= 0 && ms <= 600_000)) {
        throw new RangeError(`sandbox faults.slowRequests maps a request number (0, 1, ...) to 0 to 600000 ms, got ${JSON.stringify(n)}: ${JSON.stringify(ms)}`);
      }
    }
    if (total > 1 + 1e-9) {
      throw new RangeError(`sandbox fault rates add up to ${total}; they are exclusive per request, so keep the sum <= 1`);
    }
  }

  get retryAfterSeconds(): number {
    return this.options.retryAfterSeconds ?? 1;
  }
  get slowMs(): number {
    return this.options.slowMs ?? 2000;
  }

  next(): FaultDraw | undefined {
    const n = this.#n++;
    const held = this.options.slowRequests?.[n];
    if (held !== undefined) return { kind: 'slow', slowMs: held };
    if (this.#rates.length === 0) return undefined;
    const r = rand01([this.options.seed ?? 0, Tag.fault, n]);
    let acc = 0;
    for (const [kind, rate] of this.#rates) {
      acc += rate;
      if (r < acc) return { kind, slowMs: this.slowMs };
    }
    return undefined;
  }
}
