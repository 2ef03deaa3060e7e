import { describe, expect, it } from 'vitest';
import { runPipeline } from '../../src/sync/run/pipeline.ts';

/**
 * The page pipeline (src/sync/run/pipeline.ts): fetches run one ahead, commits stay in order with at most `ahead`
 * handed over and not settled, and the pipeline returns only once no commit it started runs.
 */

/** A commit the test settles by hand. */
interface Held {
  page: number;
  settle(error?: Error): void;
}

function pipeline(pages: number, ahead: number) {
  const held: Held[] = [];
  const events: string[] = [];
  let running = 0;
  let most = 0;
  let handed!: () => void;
  let wake = new Promise<void>((resolve) => (handed = resolve));
  const done = runPipeline<number, number>(
    0,
    {
      fetch: async (job) => job,
      next: (page) => (page + 1 < pages ? page + 1 : undefined),
      commit: (page) =>
        new Promise<void>((resolve, reject) => {
          running++;
          most = Math.max(most, running);
          events.push(`commit ${page}`);
          held.push({ page, settle: (error) => (running--, events.push(`settled ${page}`), error ? reject(error) : resolve()) });
          handed();
          wake = new Promise<void>((r) => (handed = r));
        }),
    },
    undefined,
    ahead,
  );
  return { done, held, events, most: () => most, handed: () => wake };
}

describe('runPipeline', () => {
  it('hands at most `ahead` pages to their commits before the oldest settles, in order', async () => {
    const p = pipeline(6, 3);
    while (p.held.length < 3) await p.handed();
    // Three handed over, none settled: the fourth waits.
    await new Promise((resolve) => setImmediate(resolve));
    expect(p.held.map((h) => h.page)).toEqual([0, 1, 2]);
    for (let i = 0; i < 6; i++) {
      while (p.held.length <= i) await p.handed();
      p.held[i]!.settle();
    }
    expect(await p.done).toBe('done');
    expect(p.most()).toBe(3);
    expect(p.events.filter((e) => e.startsWith('commit'))).toEqual([0, 1, 2, 3, 4, 5].map((n) => `commit ${n}`));
  });

  it('one ahead: each commit settles before the next page is handed over', async () => {
    const p = pipeline(4, 1);
    for (let i = 0; i < 4; i++) {
      while (p.held.length <= i) await p.handed();
      p.held[i]!.settle();
    }
    expect(await p.done).toBe('done');
    expect(p.most()).toBe(1);
    expect(p.events).toEqual(['commit 0', 'settled 0', 'commit 1', 'settled 1', 'commit 2', 'settled 2', 'commit 3', 'settled 3']);
  });

  it('a failed commit fails the pipeline only once every commit it started has settled', async () => {
    const p = pipeline(10, 3);
    while (p.held.length < 3) await p.handed();
    let returned = false;
    const outcome = p.done.then(() => 'done', (error: Error) => error.message).finally(() => (returned = true));
    p.held[0]!.settle(new Error('the database went away'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(returned).toBe(false);
    p.held[2]!.settle();
    await new Promise((resolve) => setImmediate(resolve));
    expect(returned).toBe(false);
    p.held[1]!.settle();
    expect(await outcome).toBe('the database went away');
    // No page was handed over after the failure was seen.
    expect(p.held.map((h) => h.page)).toEqual([0, 1, 2]);
  });

  it('refuses a depth that is not a whole number of pages', async () => {
    const steps = { fetch: async () => 0, next: () => undefined, commit: async () => {} };
    await expect(runPipeline(0, steps, undefined, 0)).rejects.toThrow(/ahead must be a whole number of pages, at least 1 \(got 0\)/);
    await expect(runPipeline(0, steps, undefined, 1.5)).rejects.toThrow(/got 1\.5/);
  });
});
