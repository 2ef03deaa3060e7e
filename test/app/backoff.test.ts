import { describe, expect, it } from 'vitest';
import { Backoff, PARKED_AFTER_FAILURES, retryDelayMs } from '../../src/app/backoff.ts';

describe('back-off of a failing stream (the same on the queue and in process)', () => {
  it("waits graphile-worker's exp(min(failures, 10)) seconds: quick retries first, about 6 hours at most", () => {
    expect([1, 2, 3, 4, 5].map(retryDelayMs)).toEqual([2718, 7389, 20086, 54598, 148413]);
    expect(retryDelayMs(10)).toBe(22026466);
    expect(retryDelayMs(50)).toBe(retryDelayMs(10));
    expect(PARKED_AFTER_FAILURES).toBe(5);
  });

  it('keeps a failing stream out until its time, leaves the others alone, and forgets it on success', () => {
    const book = new Backoff();
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    expect(book.due('a', 'occupancy', t0)).toBe(true);
    expect(book.record('a', 'occupancy', true, t0)).toEqual({ failures: 1, until: t0 + 2718 });
    expect(book.due('a', 'occupancy', t0 + 2717)).toBe(false);
    expect(book.due('a', 'buildings', t0)).toBe(true);
    expect(book.due('b', 'occupancy', t0)).toBe(true);
    expect(book.due('a', 'occupancy', t0 + 2718)).toBe(true);
    expect(book.record('a', 'occupancy', true, t0 + 3000)).toEqual({ failures: 2, until: t0 + 3000 + 7389 });
    expect(book.record('a', 'occupancy', false, t0 + 20_000)).toBeUndefined();
    expect(book.due('a', 'occupancy', t0 + 20_000)).toBe(true);
    expect(book.record('a', 'occupancy', true, t0 + 30_000)).toEqual({ failures: 1, until: t0 + 30_000 + 2718 });
  });
});
