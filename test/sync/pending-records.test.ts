import { describe, expect, it } from 'vitest';
import { PendingRecords } from '../../src/sync/run/pending-records.ts';

/** Whether `promise` settled by the time the event loop has run everything already queued. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('PendingRecords', () => {
  it('lets requests go while their pages fit, holds the next until a commit gives records back', async () => {
    const pending = new PendingRecords(100, new AbortController().signal);
    await pending.take(50);
    await pending.take(50);
    expect(pending.held).toBe(100);
    const third = pending.take(50);
    expect(await settled(third)).toBe(false);
    pending.give(50);
    expect(await settled(third)).toBe(true);
    expect(pending.held).toBe(100);
  });

  it('counts an answer at what it holds: a short page makes room, a page larger than asked takes more', async () => {
    const pending = new PendingRecords(100, new AbortController().signal);
    await pending.take(60);
    const second = pending.take(60);
    expect(await settled(second)).toBe(false);
    pending.answered(60, 10);
    expect(await settled(second)).toBe(true);
    expect(pending.held).toBe(70);
    pending.answered(60, 90);
    expect(pending.held).toBe(100);
    pending.give(10);
    pending.give(90);
    expect(pending.held).toBe(0);
  });

  it('lets one page go when nothing is held, even one larger than the bound (a run never stalls)', async () => {
    const pending = new PendingRecords(10, new AbortController().signal);
    await pending.take(500);
    expect(pending.held).toBe(500);
    const next = pending.take(1);
    expect(await settled(next)).toBe(false);
    pending.give(500);
    expect(await settled(next)).toBe(true);
  });

  it('ends the waits when the run stops', async () => {
    const controller = new AbortController();
    const pending = new PendingRecords(10, controller.signal);
    await pending.take(10);
    const waiting = [pending.take(10), pending.take(10)];
    expect(await settled(Promise.all(waiting))).toBe(false);
    controller.abort(new Error('SIGTERM'));
    expect(await settled(Promise.all(waiting))).toBe(true);
  });
});
