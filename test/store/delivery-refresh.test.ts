import { describe, expect, it } from 'vitest';
import { DeliveryRefresh } from '../../src/store/delivery-refresh.ts';
import { HandTimers } from '../support/hand-timers.ts';

/**
 * The refresh of what deliveries made stale, with the timers in the test's hands: one refresh per interval whatever
 * the deliveries in it, one at a time, a failure that is one customer's, and a close that leaves nothing due.
 */

/** A refresh that records its calls and finishes when the test releases it. */
function refresher() {
  const calls: string[] = [];
  const waiting: Array<() => void> = [];
  const failures: string[] = [];
  return {
    calls,
    failures,
    refresh: (customerId: string) =>
      new Promise<void>((resolve, reject) => {
        calls.push(customerId);
        waiting.push(() => (customerId === 'broken' ? reject(new Error('database went away')) : resolve()));
      }),
    failed: (customerId: string, error: unknown) => failures.push(`${customerId}: ${(error as Error).message}`),
    /** Lets every refresh started so far finish, and the promise chains behind them run. */
    async release() {
      for (const done of waiting.splice(0)) done();
      for (let i = 0; i < 5; i++) await Promise.resolve();
    },
  };
}

describe('the refresh after deliveries', () => {
  it('the first delivery arms one timer of the interval; the deliveries before it fires share its one refresh per customer', async () => {
    const timers = new HandTimers();
    const r = refresher();
    const refresh = new DeliveryRefresh({ refresh: r.refresh, failed: r.failed, delayMs: 1_000, timers });
    refresh.delivered('c2');
    refresh.delivered('c1');
    refresh.delivered('c2');
    expect([...timers.armed.values()].map((t) => t.ms)).toEqual([1_000]);
    expect(r.calls).toEqual([]);
    timers.fire();
    expect(r.calls).toEqual(['c1']);
    await r.release();
    expect(r.calls).toEqual(['c1', 'c2']);
    await r.release();
    expect(timers.armed.size).toBe(0);
  });

  it('a delivery during a refresh is the next one\'s: no second refresh runs beside it, the timer is armed again after it', async () => {
    const timers = new HandTimers();
    const r = refresher();
    const refresh = new DeliveryRefresh({ refresh: r.refresh, failed: r.failed, delayMs: 1_000, timers });
    refresh.delivered('c1');
    timers.fire();
    refresh.delivered('c1');
    expect(timers.armed.size).toBe(0);
    await r.release();
    expect([...timers.armed.values()].map((t) => t.ms)).toEqual([1_000]);
    timers.fire();
    expect(r.calls).toEqual(['c1', 'c1']);
    await r.release();
    expect(timers.armed.size).toBe(0);
  });

  it("a failed refresh is reported for its customer alone; the others are refreshed; nothing retries until the next delivery", async () => {
    const timers = new HandTimers();
    const r = refresher();
    const refresh = new DeliveryRefresh({ refresh: r.refresh, failed: r.failed, delayMs: 1_000, timers });
    refresh.delivered('broken');
    refresh.delivered('c1');
    timers.fire();
    await r.release();
    await r.release();
    expect(r.calls).toEqual(['broken', 'c1']);
    expect(r.failures).toEqual(['broken: database went away']);
    expect(timers.armed.size).toBe(0);
  });

  it('close() waits for the refresh in progress, then refreshes what is due, and arms nothing after', async () => {
    const timers = new HandTimers();
    const r = refresher();
    const refresh = new DeliveryRefresh({ refresh: r.refresh, failed: r.failed, delayMs: 1_000, timers });
    refresh.delivered('c1');
    timers.fire();
    refresh.delivered('c2');
    let closed = false;
    const closing = refresh.close().then(() => (closed = true));
    await r.release();
    expect(r.calls).toEqual(['c1', 'c2']);
    expect(closed).toBe(false);
    await r.release();
    await closing;
    expect(timers.armed.size).toBe(0);
    refresh.delivered('c3');
    expect(timers.armed.size).toBe(0);
    expect(r.calls).toEqual(['c1', 'c2']);
  });
});
