/**
 * Back-off of a failing (customer, stream), the same on both schedules: the Postgres job queue (graphile-worker
 * waits exp(min(attempts, 10)) seconds before attempt n + 1) and the in-process schedule of SQLite, which applies the
 * same delays here. A few quick retries, then the stream is parked: e^5 s (2.5 min) after five failures, e^10 s
 * (about 6 hours) at most, and the other customers go on.
 */
export function retryDelayMs(failures: number): number {
  return Math.round(Math.exp(Math.min(Math.max(failures, 0), 10)) * 1000);
}

/** From this many failures in a row on, a stream counts as parked (reported as such, not merely retrying). */
export const PARKED_AFTER_FAILURES = 5;

export interface BackoffEntry {
  failures: number;
  /** Epoch ms before which the stream is not run again. */
  until: number;
}

/** Failures in a row per (customer, stream), for the in-process schedule. Pure: the caller passes the time. */
export class Backoff {
  readonly #book = new Map<string, BackoffEntry>();

  static key(customerId: string, stream: string): string {
    return `${customerId}\u0000${stream}`;
  }

  /** Whether (customer, stream) may run at `now`. */
  due(customerId: string, stream: string, now: number): boolean {
    const entry = this.#book.get(Backoff.key(customerId, stream));
    return !entry || entry.until <= now;
  }

  /** Records a run's end; returns the back-off it now waits out, if it failed. */
  record(customerId: string, stream: string, failed: boolean, now: number): BackoffEntry | undefined {
    const key = Backoff.key(customerId, stream);
    if (!failed) {
      this.#book.delete(key);
      return undefined;
    }
    const failures = (this.#book.get(key)?.failures ?? 0) + 1;
    const entry = { failures, until: now + retryDelayMs(failures) };
    this.#book.set(key, entry);
    return entry;
  }
}
