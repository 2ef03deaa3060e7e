import { describe, expect, it } from 'vitest';
import { WindowDemand } from '../../src/sync/run/window-demand.ts';

/** Whether `promise` settled by the time the event loop has run everything already queued. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

/** A demand on a hand-moved clock, and a commit that waited `waited` ms for its page and took `took` ms. */
function fixture() {
  let now = 1_000;
  const demand = new WindowDemand(() => now);
  const commit = (waited: number, took: number) => {
    now += waited;
    const begun = demand.begin();
    now += took;
    return demand.end(begun);
  };
  return { demand, commit };
}

describe('WindowDemand', () => {
  it('keeps one window while pages are there before the store is (a fast API, a slower store)', async () => {
    const { demand, commit } = fixture();
    // The first page took as long as its commit; then each page was there when the last commit ended, or nearly.
    commit(40, 40);
    for (let i = 0; i < 50; i++) commit(i % 3, 30);
    commit(59, 30);
    expect(demand.wide).toBe(false);
    expect(await settled(demand.widened())).toBe(false);
  });

  it('opens the windows at the first commit whose page the store waited for more than twice the commit took', async () => {
    const { demand, commit } = fixture();
    expect(commit(20, 30)).toBeUndefined();
    expect(demand.wide).toBe(false);
    // 100 ms for an answer, 5 ms to commit it: the network is the limit. The commit that opened them says so (the log).
    expect(commit(100, 5)).toEqual({ tookMs: 5 });
    expect(demand.wide).toBe(true);
    expect(await settled(demand.widened())).toBe(true);
    // It stays open (readers started are not called back), and no later commit claims to have opened it.
    expect(commit(0, 50)).toBeUndefined();
    expect(commit(100, 5)).toBeUndefined();
    expect(demand.wide).toBe(true);
  });

  it('counts the first page from the run start, so an API a network away opens the windows at the first commit', () => {
    const { demand, commit } = fixture();
    commit(120, 8);
    expect(demand.wide).toBe(true);
  });

  it('release() lets waiting readers go (the first reader has no more windows)', async () => {
    const { demand } = fixture();
    const waiting = demand.widened();
    expect(await settled(waiting)).toBe(false);
    demand.release();
    expect(await settled(waiting)).toBe(true);
  });
});
