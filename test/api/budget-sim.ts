import { setImmediate as tick } from 'node:timers/promises';
import { silentLogger } from '../../src/logger.ts';
import { KeyBudget } from '../../src/api/budget/key-budget.ts';
import { MemoryKeyStore } from '../../src/api/budget/memory-store.ts';
import { DEFAULT_BUDGET, type BudgetSettings, type KeyStore } from '../../src/api/budget/types.ts';

/**
 * A discrete-event simulation of one key's budget against a platform with an unknown in-flight limit: virtual time
 * (the budget's clock and sleep), a simulated server answering after a latency, and the client's attempt loop. It
 * measures what the budget decides, not how fast this machine is: no wall-clock time is involved.
 */

export class VirtualTime {
  now = 0;
  readonly #timers: Array<{ at: number; fire: () => void }> = [];
  readonly clock = { now: () => this.now };

  /** The budget's injected sleep, on virtual time. */
  sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = { at: this.now + Math.max(0, ms), fire: resolve };
      this.#timers.push(timer);
      signal?.addEventListener(
        'abort',
        () => {
          const at = this.#timers.indexOf(timer);
          if (at >= 0) this.#timers.splice(at, 1);
          reject(signal.reason);
        },
        { once: true },
      );
    });

  /** Lets every promise chain that can move without time move. */
  async settle(): Promise<void> {
    for (let i = 0; i < 12; i++) await tick();
  }

  /** Runs until `done()`, moving virtual time from timer to timer. */
  async run(done: () => boolean, limitMs = 3_600_000): Promise<void> {
    for (;;) {
      await this.settle();
      if (done()) return;
      if (this.#timers.length === 0) throw new Error(`simulation stalled at ${this.now} ms: nothing scheduled and not done`);
      this.#timers.sort((a, b) => a.at - b.at);
      const next = this.#timers[0]!.at;
      if (next > limitMs) throw new Error(`simulation ran past ${limitMs} ms`);
      this.now = next;
      while (this.#timers.length > 0 && this.#timers[0]!.at <= this.now) this.#timers.shift()!.fire();
    }
  }
}

export interface PlatformOptions {
  /** Queries in flight the platform takes; one more is refused with 429 (or queued, with `queue`). */
  allowed: number;
  /** The platform's limit or latency changes at `atMs` (lowered for another tenant, overloaded by others, say). */
  change?: { atMs: number; allowed?: number; latencyMs?: number };
  /** Queue the queries beyond the limit instead of refusing them: only the latency tells. */
  queue?: boolean;
  /** Also refuse (429) queries beyond this many started in the current second. */
  perSecond?: number;
  latencyMs: number;
  /** Latency of a refusal. Default: latencyMs (the replay server delays every answer). */
  refusalMs?: number;
  retryAfterMs: number;
}

export interface SimResult {
  elapsedMs: number;
  /** pages x latency / allowed. */
  floorMs: number;
  sent: number;
  refused: number;
  /** The most queries the platform had in flight at once (refused ones not counted). */
  mostInFlight: number;
  /** Mean latency of the answered queries, queueing at the platform included. */
  meanLatencyMs: number;
  limit: number;
  /** The highest limit the budget had. */
  highest: number;
  /** The lowest limit the budget had at or after `change.atMs` (0 without a change). */
  lowestAfterChange: number;
  pauses: number;
}

/** Runs `pages` queries, `parallel` at a time (windows in parallel), through one key's budget against the platform. */
export async function simulate(
  platform: PlatformOptions,
  options: { pages: number; parallel: number; settings?: Partial<BudgetSettings>; store?: (time: VirtualTime, settings: BudgetSettings) => KeyStore },
): Promise<SimResult> {
  const time = new VirtualTime();
  const settings = { ...DEFAULT_BUDGET, ...options.settings };
  const store = options.store?.(time, settings) ?? new MemoryKeyStore(settings, time.now);
  const budget = new KeyBudget(store, settings, {
    clock: time.clock,
    sleep: time.sleep,
    logger: silentLogger,
    label: 'sim',
    maxPauseMs: 120_000,
    elapsed: () => time.now,
  });
  let inFlight = 0;
  let mostInFlight = 0;
  let sent = 0;
  let refused = 0;
  const latencies: number[] = [];
  const queued: Array<() => void> = [];
  const changed = () => platform.change !== undefined && time.now >= platform.change.atMs;
  const allowed = () => (changed() ? (platform.change!.allowed ?? platform.allowed) : platform.allowed);
  const latency = () => (changed() ? (platform.change!.latencyMs ?? platform.latencyMs) : platform.latencyMs);
  const starts: number[] = [];
  const send = async (): Promise<boolean> => {
    sent++;
    while (starts.length > 0 && starts[0]! <= time.now - 1000) starts.shift();
    if (platform.perSecond !== undefined && starts.length >= platform.perSecond) {
      refused++;
      await time.sleep(platform.refusalMs ?? platform.latencyMs);
      return false;
    }
    starts.push(time.now);
    if (inFlight >= allowed()) {
      if (!platform.queue) {
        refused++;
        await time.sleep(platform.refusalMs ?? platform.latencyMs);
        return false;
      }
      await new Promise<void>((resolve) => queued.push(resolve));
    }
    inFlight++;
    mostInFlight = Math.max(mostInFlight, inFlight);
    await time.sleep(latency());
    inFlight--;
    queued.shift()?.();
    return true;
  };
  // The client's attempt loop: acquire, send, release with the outcome; a refusal the key's pause does not cover
  // waits its own Retry-After.
  const query = async (): Promise<void> => {
    for (;;) {
      const permit = await budget.acquire();
      const started = time.now;
      if (await send()) {
        latencies.push(time.now - started);
        await permit.release({ kind: 'clean', latencyMs: time.now - started });
        return;
      }
      const { paused } = await permit.release({ kind: 'rate_limited', retryAfterMs: platform.retryAfterMs });
      if (!paused) await time.sleep(platform.retryAfterMs);
    }
  };
  let highest = 0;
  let lowestAfterChange = Infinity;
  let next = 0;
  let finished = 0;
  const worker = async () => {
    while (next < options.pages) {
      next++;
      await query();
      finished++;
    }
  };
  for (let i = 0; i < options.parallel; i++) void worker();
  await time.run(() => {
    const { limit } = budget.stats();
    highest = Math.max(highest, limit);
    if (changed()) lowestAfterChange = Math.min(lowestAfterChange, limit);
    return finished === options.pages;
  });
  const figures = budget.stats();
  return {
    elapsedMs: time.now,
    floorMs: (options.pages * platform.latencyMs) / platform.allowed,
    sent,
    refused,
    mostInFlight,
    meanLatencyMs: latencies.reduce((a, b) => a + b, 0) / latencies.length,
    limit: figures.limit,
    highest,
    lowestAfterChange: lowestAfterChange === Infinity ? 0 : lowestAfterChange,
    pauses: figures.pauses,
  };
}
