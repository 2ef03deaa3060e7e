import { describe, expect, it } from 'vitest';
import { Frontier } from '../../src/sync/run/frontier.ts';
import { WindowQueue } from '../../src/sync/run/window-queue.ts';

const windows = (n: number) => Array.from({ length: n }, (_, i) => ({ from: i * 10, to: (i + 1) * 10, cursor: null }));

describe('WindowQueue', () => {
  it('hands out the windows not done, in order, and none once empty', async () => {
    const frontier = new Frontier([...windows(2), { from: 20, to: 30, cursor: null, done: true }, { from: 30, to: 40, cursor: 'c' }]);
    const queue = new WindowQueue(frontier, 10, new AbortController().signal);
    const taken = [await queue.take(), await queue.take(), await queue.take(), await queue.take()];
    expect(taken.map((w) => w?.index)).toEqual([0, 1, 3, undefined]);
    expect(taken[2]!.cursor).toBe('c');
  });

  it('holds a window more than maxAhead beyond the first incomplete one until that one completes', async () => {
    const frontier = new Frontier(windows(5));
    const queue = new WindowQueue(frontier, 2, new AbortController().signal);
    for (const index of [0, 1, 2]) expect((await queue.take())!.index).toBe(index);
    let fourth: number | undefined;
    const waiting = queue.take().then((w) => (fourth = w?.index));
    // A window after the head completing does not make room.
    frontier.page(1, null);
    queue.moved();
    await new Promise((resolve) => setImmediate(resolve));
    expect(fourth).toBeUndefined();
    frontier.page(0, null);
    queue.moved();
    await waiting;
    expect(fourth).toBe(3);
  });

  it('a stopping run ends the waits and hands out nothing more', async () => {
    const stop = new AbortController();
    const queue = new WindowQueue(new Frontier(windows(5)), 0, stop.signal);
    expect((await queue.take())!.index).toBe(0);
    const waiting = queue.take();
    stop.abort();
    expect(await waiting).toBeUndefined();
    expect(await queue.take()).toBeUndefined();
  });
});
