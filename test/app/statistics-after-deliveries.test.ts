import { describe, expect, it } from 'vitest';
import { StatisticsAfterDeliveries } from '../../src/app/statistics-after-deliveries.ts';
import { HandTimers } from '../support/hand-timers.ts';

/**
 * A receiver's planner-statistics step, with the timers in the test's hands: one step per interval after stored
 * deliveries, none without one, one at a time, and a close that starts none and waits for the one in progress.
 */

/** A step that counts its calls and finishes when the test releases it. */
function step() {
  let calls = 0;
  const waiting: Array<() => void> = [];
  return {
    get calls() {
      return calls;
    },
    update: () =>
      new Promise<void>((resolve) => {
        calls += 1;
        waiting.push(resolve);
      }),
    /** Lets the steps started so far finish, and the promise chains behind them run. */
    async release() {
      for (const done of waiting.splice(0)) done();
      for (let i = 0; i < 5; i++) await Promise.resolve();
    },
  };
}

describe("a receiver's planner-statistics step", () => {
  it('arms nothing until a delivery is stored; the deliveries of one interval share one step', async () => {
    const timers = new HandTimers();
    const s = step();
    const schedule = new StatisticsAfterDeliveries({ update: s.update, intervalMs: 60_000, timers });
    expect(timers.armed.size).toBe(0);
    schedule.stored();
    schedule.stored();
    schedule.stored();
    expect([...timers.armed.values()].map((t) => t.ms)).toEqual([60_000]);
    expect(s.calls).toBe(0);
    timers.fire();
    expect(s.calls).toBe(1);
    await s.release();
    // Nothing stored since: no next interval.
    expect(timers.armed.size).toBe(0);
    await schedule.close();
  });

  it('one step at a time: a delivery stored during a step arms the next interval when it ends', async () => {
    const timers = new HandTimers();
    const s = step();
    const schedule = new StatisticsAfterDeliveries({ update: s.update, intervalMs: 1_000, timers });
    schedule.stored();
    timers.fire();
    schedule.stored();
    expect(timers.armed.size).toBe(0);
    await s.release();
    expect([...timers.armed.values()].map((t) => t.ms)).toEqual([1_000]);
    timers.fire();
    expect(s.calls).toBe(2);
    await s.release();
    await schedule.close();
  });

  it('close() starts no step for what is pending and waits for the one in progress', async () => {
    const timers = new HandTimers();
    const s = step();
    const schedule = new StatisticsAfterDeliveries({ update: s.update, intervalMs: 1_000, timers });
    schedule.stored();
    timers.fire();
    schedule.stored();
    let closed = false;
    const closing = schedule.close().then(() => (closed = true));
    await Promise.resolve();
    expect(closed).toBe(false);
    await s.release();
    await closing;
    expect(closed).toBe(true);
    expect(timers.armed.size).toBe(0);
    expect(s.calls).toBe(1);
    schedule.stored();
    expect(timers.armed.size).toBe(0);
  });

  it('a step that rejects all the same leaves the schedule going and nothing unhandled', async () => {
    const timers = new HandTimers();
    let calls = 0;
    const schedule = new StatisticsAfterDeliveries({ update: () => (calls++, Promise.reject(new Error('logger gone'))), intervalMs: 1_000, timers });
    schedule.stored();
    timers.fire();
    schedule.stored();
    for (let i = 0; i < 5; i++) await Promise.resolve();
    expect([...timers.armed.values()].map((t) => t.ms)).toEqual([1_000]);
    timers.fire();
    expect(calls).toBe(2);
    await schedule.close();
  });

  it('close() clears an armed interval', async () => {
    const timers = new HandTimers();
    const s = step();
    const schedule = new StatisticsAfterDeliveries({ update: s.update, intervalMs: 1_000, timers });
    schedule.stored();
    expect(timers.armed.size).toBe(1);
    await schedule.close();
    expect(timers.armed.size).toBe(0);
    expect(s.calls).toBe(0);
  });
});
