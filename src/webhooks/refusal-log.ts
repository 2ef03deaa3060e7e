import type { Logger } from '../logger.ts';
import { formatCount } from '../numbers.ts';

/**
 * Refusals logged without letting an attacker fill the disk: per reason, the first refusal of an interval is logged
 * in full; the rest of that interval are counted and logged as one summary line per reason when it ends. A flood
 * of a hundred thousand forged requests is a handful of lines; /metrics still counts every one.
 */
export class RefusalLog {
  readonly #logger: Logger;
  readonly #intervalMs: number;
  readonly #counts = new Map<string, { count: number; level: 'info' | 'warn' }>();
  readonly #logged = new Set<string>();
  #timer: NodeJS.Timeout | undefined;

  constructor(logger: Logger, intervalMs = 10_000) {
    this.#logger = logger;
    this.#intervalMs = intervalMs;
  }

  record(level: 'info' | 'warn', fields: Record<string, unknown> & { reason: string }, message: string): void {
    const { reason } = fields;
    if (!this.#logged.has(reason)) {
      this.#logged.add(reason);
      this.#logger[level](fields, message);
    } else {
      const entry = this.#counts.get(reason);
      if (entry) entry.count += 1;
      else this.#counts.set(reason, { count: 1, level });
    }
    this.#timer ??= setTimeout(() => this.flush(), this.#intervalMs).unref();
  }

  /** Logs the counted refusals, one line per reason, and starts a new interval. */
  flush(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const [reason, { count, level }] of this.#counts) {
      this.#logger[level](
        { reason, refused: count, intervalMs: this.#intervalMs },
        `webhook requests refused (${reason}): ${formatCount(count)} more in the last ${Math.round(this.#intervalMs / 1000)} s (each is counted in /metrics)`,
      );
    }
    this.#counts.clear();
    this.#logged.clear();
  }

  close(): void {
    this.flush();
  }
}
