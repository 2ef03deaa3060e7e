import { foldRanges, type PageSpans } from './aggregate-page-invalidations.ts';
import { allRanges, hoursOf, type Ranges } from './aggregate-plan.ts';

/**
 * The refresh beside a run: what a run's poll pages made stale is refreshed while the run goes on, not at its end
 * alone and not in the way of its commits. A page's commit reports its floor spaces' ranges (`committed`); once they are
 * due, one refresh of the customer starts beside the commits (at most one a customer at a time), and the run's end
 * waits for it before its own (`settled`). docs/reporting.md, "When the aggregates are current".
 */

/** No refresh beside a run before its oldest unrefreshed page is this old: a short run's end refreshes it once. */
export const REFRESH_AFTER_MS = 1_000;
/** ...and one at the latest when it is this old, however little the pages hold: how far the views lag a long run. */
export const REFRESH_INTERVAL_MS = 15_000;
/**
 * Between the two, a refresh starts once the pages span this many hours per floor space on average, for every hour
 * (started) of the customer's max hold. A refresh beside the run leaves the hour of each space's last reading, and
 * the hold after it, to the next (aggregate-fronts.ts), which reads the readings of a max hold before that hour
 * again: for that re-read to stay a fraction of what a refresh reads, the span must be twice the hold. Two hours for
 * sensors that hold an hour or less (5-minute sensors hold 15 minutes), six for hourly ones (they hold three hours).
 * When a refresh still wrote the hold past each last reading, two hours whatever the hold made a portfolio of hourly
 * sensors write each bucket several times over and filled its tables with dead rows (docs/performance.md).
 */
export const HOURS_PER_SPACE = 2;

const HOUR_MS = 3_600_000;

/** What a customer's pages committed since its last refresh started: per floor space key, its ranges (Ranges). */
export interface Unrefreshed {
  since: number;
  spans: Map<number, Ranges>;
}

/**
 * Whether what is unrefreshed is due a refresh at `now` (REFRESH_AFTER_MS, HOURS_PER_SPACE, REFRESH_INTERVAL_MS). A
 * store whose refresh cannot overlap its commits (`overlaps` false: SQLite, one connection whose statements run on
 * the main thread between the pages') refreshes at REFRESH_INTERVAL_MS only: earlier refreshes would add the front
 * hours' rewrites without taking any work off the run's end.
 */
export function refreshDue(unrefreshed: Unrefreshed, now: number, overlaps = true, maxHoldMs = 0): boolean {
  const age = now - unrefreshed.since;
  if (age >= REFRESH_INTERVAL_MS) return true;
  if (!overlaps || age < REFRESH_AFTER_MS) return false;
  const overhang = Math.max(1, Math.ceil(maxHoldMs / HOUR_MS));
  return hoursOf(allRanges(unrefreshed.spans.values())) >= HOURS_PER_SPACE * overhang * unrefreshed.spans.size;
}

export class RunRefresh {
  readonly #refresh: (customerId: string) => Promise<unknown>;
  readonly #failed: (customerId: string, error: unknown) => void;
  readonly #unrefreshed = new Map<string, Unrefreshed>();
  readonly #running = new Map<string, Promise<void>>();
  readonly #overlaps: boolean;
  readonly #maxHoldMs: (customerId: string) => number;

  /** `maxHoldMs`: the customer's max hold (how far past its last reading a refresh writes); none when not given. */
  constructor(options: { refresh(customerId: string): Promise<unknown>; failed(customerId: string, error: unknown): void; overlaps: boolean; maxHoldMs?(customerId: string): number }) {
    this.#refresh = options.refresh;
    this.#failed = options.failed;
    this.#overlaps = options.overlaps;
    this.#maxHoldMs = options.maxHoldMs ?? (() => 0);
  }

  /** A poll page of the customer committed `spans` at `now`: starts a refresh beside the run when they are due. */
  committed(customerId: string, spans: PageSpans, now: number): void {
    if (spans.length === 0) return;
    let unrefreshed = this.#unrefreshed.get(customerId);
    if (!unrefreshed) this.#unrefreshed.set(customerId, (unrefreshed = { since: now, spans: new Map() }));
    foldRanges(unrefreshed.spans, spans);
    if (this.#running.has(customerId) || !refreshDue(unrefreshed, now, this.#overlaps, this.#maxHoldMs(customerId))) return;
    this.#unrefreshed.delete(customerId);
    // Never rejects: a failure is the aggregates' lag, reported, and its rows stay pending for the next refresh.
    const run = this.#refresh(customerId)
      .then(
        () => undefined,
        (error: unknown) => this.#failed(customerId, error),
      )
      .finally(() => this.#running.delete(customerId));
    this.#running.set(customerId, run);
  }

  /**
   * A refresh of the customer is about to start elsewhere (a run's end, a report, a delivery's): waits for the one
   * beside the run, if any, and starts the count again (what committed so far is that refresh's).
   */
  async before(customerId: string): Promise<void> {
    await this.#running.get(customerId);
    this.#unrefreshed.delete(customerId);
  }

  /** Waits for every refresh beside a run (closing the store). Never rejects. */
  async settled(): Promise<void> {
    await Promise.all(this.#running.values());
  }
}
