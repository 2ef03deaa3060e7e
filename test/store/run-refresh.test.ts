import { describe, expect, it } from 'vitest';
import type { PageSpans } from '../../src/store/aggregate-page-invalidations.ts';
import { HOURS_PER_SPACE, REFRESH_AFTER_MS, REFRESH_INTERVAL_MS, refreshDue, RunRefresh, type Unrefreshed } from '../../src/store/run-refresh.ts';

/** The refresh beside a run (src/store/run-refresh.ts): when one is due, one at a time a customer, never rejecting. */

const HOUR = 3_600_000;
const T0 = Date.parse('2026-03-02T08:00:00.000Z');

function unrefreshed(since: number, spans: Array<[number, number, number]>): Unrefreshed {
  return { since, spans: new Map(spans.map(([k, a, b]) => [k, [[a, b]]])) };
}

describe('when a refresh beside a run is due', () => {
  it('never before REFRESH_AFTER_MS, always at REFRESH_INTERVAL_MS, between them once the pages span HOURS_PER_SPACE hours a floor space on average (where a refresh overlaps the commits)', () => {
    const long = unrefreshed(0, [[1, T0, T0 + 5 * HOUR], [2, T0, T0 + 5 * HOUR]]);
    expect(refreshDue(long, REFRESH_AFTER_MS - 1)).toBe(false);
    expect(refreshDue(long, REFRESH_AFTER_MS)).toBe(true);
    // An hour and a bit each (two hours touched) is the bound; within one hour each is not.
    expect(HOURS_PER_SPACE).toBe(2);
    expect(refreshDue(unrefreshed(0, [[1, T0 + HOUR - 1, T0 + HOUR], [2, T0, T0]]), REFRESH_AFTER_MS)).toBe(false);
    expect(refreshDue(unrefreshed(0, [[1, T0 + HOUR - 1, T0 + HOUR], [2, T0 + HOUR - 1, T0 + HOUR]]), REFRESH_AFTER_MS)).toBe(true);
    // A store whose refresh cannot overlap its commits (SQLite) waits for the interval.
    expect(refreshDue(long, REFRESH_INTERVAL_MS - 1, false)).toBe(false);
    expect(refreshDue(long, REFRESH_INTERVAL_MS, false)).toBe(true);
    const short = unrefreshed(0, [[1, T0, T0 + 10 * 60_000]]);
    expect(refreshDue(short, REFRESH_INTERVAL_MS - 1)).toBe(false);
    expect(refreshDue(short, REFRESH_INTERVAL_MS)).toBe(true);
  });
  it('waits for spans of twice the hold a refresh writes past each last reading: two hours up to an hour of hold, six for three hours', () => {
    const spanning = (hours: number) => unrefreshed(0, [[1, T0, T0 + (hours - 1) * HOUR], [2, T0, T0 + (hours - 1) * HOUR]]);
    // 5-minute sensors hold 15 minutes, an hour's: two hours a space, as without a hold.
    expect(refreshDue(spanning(2), REFRESH_AFTER_MS, true, 15 * 60_000)).toBe(true);
    expect(refreshDue(spanning(2), REFRESH_AFTER_MS, true, HOUR)).toBe(true);
    expect(refreshDue(spanning(1), REFRESH_AFTER_MS, true, HOUR)).toBe(false);
    // Hourly sensors hold three hours: six hours a space.
    expect(refreshDue(spanning(5), REFRESH_AFTER_MS, true, 3 * HOUR)).toBe(false);
    expect(refreshDue(spanning(6), REFRESH_AFTER_MS, true, 3 * HOUR)).toBe(true);
    // Change-only sensors hold a day: the interval decides.
    expect(refreshDue(spanning(47), REFRESH_INTERVAL_MS - 1, true, 24 * HOUR)).toBe(false);
    expect(refreshDue(spanning(48), REFRESH_AFTER_MS, true, 24 * HOUR)).toBe(true);
    expect(refreshDue(spanning(47), REFRESH_INTERVAL_MS, true, 24 * HOUR)).toBe(true);
  });
});

describe('RunRefresh', () => {
  const spans = (key: number, first: number, last: number): PageSpans => [[first, last, key]];

  it('starts one refresh a customer at a time when due, counts again from the next page, and reports a failure without rejecting', async () => {
    const started: string[] = [];
    const release: Array<(error?: Error) => void> = [];
    const failures: string[] = [];
    const runs = new RunRefresh({
      refresh: (customerId) => {
        started.push(customerId);
        return new Promise<void>((resolve, reject) => release.push((error) => (error ? reject(error) : resolve())));
      },
      failed: (customerId, error) => failures.push(`${customerId}: ${(error as Error).message}`),
      overlaps: true,
    });
    runs.committed('c1', spans(1, T0, T0 + 3 * HOUR), 0);
    runs.committed('c1', [], REFRESH_INTERVAL_MS);
    expect(started).toEqual([]);
    runs.committed('c1', spans(2, T0, T0 + HOUR), REFRESH_AFTER_MS);
    runs.committed('c2', spans(1, T0, T0 + 3 * HOUR), REFRESH_AFTER_MS);
    expect(started).toEqual(['c1']);
    // c1's is running: a page due again starts none; c2's first page starts its count.
    runs.committed('c1', spans(1, T0, T0 + 9 * HOUR), 3 * REFRESH_AFTER_MS);
    runs.committed('c2', spans(1, T0, T0 + 3 * HOUR), 2 * REFRESH_AFTER_MS);
    expect(started).toEqual(['c1', 'c2']);
    release[0]!(new Error('connection lost'));
    release[1]!();
    await runs.settled();
    expect(failures).toEqual(['c1: connection lost']);
    // The next page of c1 finds the count it kept while its refresh ran due: one more starts.
    runs.committed('c1', spans(1, T0 + 9 * HOUR, T0 + 9 * HOUR), 4 * REFRESH_AFTER_MS);
    expect(started).toEqual(['c1', 'c2', 'c1']);
    // A page during it starts a count; `before` (a run's end) waits for the refresh and starts the count again, so a
    // page a second later is not due.
    runs.committed('c1', spans(1, T0, T0 + 9 * HOUR), 4 * REFRESH_AFTER_MS);
    let waited = false;
    const before = runs.before('c1').then(() => (waited = true));
    expect(waited).toBe(false);
    release[2]!();
    await before;
    expect(waited).toBe(true);
    runs.committed('c1', spans(1, T0, T0 + 9 * HOUR), 5 * REFRESH_AFTER_MS);
    expect(started).toHaveLength(3);
  });
  it("asks each customer's max hold: the same pages start a refresh of 5-minute sensors and not yet of hourly ones", async () => {
    const started: string[] = [];
    const holds: Record<string, number> = { fast: 15 * 60_000, hourly: 3 * HOUR };
    const runs = new RunRefresh({ refresh: async (customerId) => void started.push(customerId), failed: () => {}, overlaps: true, maxHoldMs: (customerId) => holds[customerId]! });
    runs.committed('fast', spans(1, T0, T0 + 3 * HOUR), 0);
    runs.committed('hourly', spans(1, T0, T0 + 3 * HOUR), 0);
    runs.committed('fast', spans(1, T0, T0 + 3 * HOUR), REFRESH_AFTER_MS);
    runs.committed('hourly', spans(1, T0, T0 + 3 * HOUR), REFRESH_AFTER_MS);
    expect(started).toEqual(['fast']);
    runs.committed('hourly', spans(1, T0 + 3 * HOUR, T0 + 5 * HOUR), REFRESH_AFTER_MS);
    expect(started).toEqual(['fast', 'hourly']);
    await runs.settled();
  });
});
