import { describe, expect, it } from 'vitest';
import { pruneOnce } from '../../src/app/retention.ts';
import { FakeClock } from '../../src/clock.ts';
import type { Store } from '../../src/store/types.ts';

/**
 * One retention pass (src/app/retention.ts pruneOnce) against a store that only counts: the batches, the order (runs,
 * then readings) and where a stop (SIGTERM, a daemon's shutdown) cuts it. The deletions themselves are tested on both
 * dialects in test/store/readings-retention.test.ts and test/cli/prune.test.ts.
 */

const BATCH = 5_000;

/** A store whose runs and readings go in batches: `runs` and `readings` rows to delete in all. */
function counting(runs: number, readings: number) {
  const calls: string[] = [];
  let r = runs;
  let o = readings;
  const store = {
    async pruneRuns(before: string, limit: number) {
      calls.push(`runs<${before}`);
      const n = Math.min(r, limit);
      r -= n;
      return n;
    },
    async pruneReadings(before: string, limit: number) {
      calls.push(`readings<${before}`);
      const n = Math.min(o, limit);
      o -= n;
      return { partitions: [], rows: n };
    },
  } as unknown as Store;
  return { store, calls };
}

describe('pruneOnce', () => {
  const clock = new FakeClock('2026-03-01T00:00:00.000Z');
  const DAY = 86_400_000;

  it('deletes in batches until one comes back short, runs first, each before its own cutoff', async () => {
    const { store, calls } = counting(12_000, 7_000);
    const pruned = await pruneOnce({ store, retentionMs: 28 * DAY, readingsRetentionMs: 30 * DAY, clock });
    expect(pruned).toEqual({
      runs: { deleted: 12_000, before: '2026-02-01T00:00:00.000Z' },
      readings: { partitions: [], rows: 7_000, before: '2026-01-30T00:00:00.000Z' },
      stopped: false,
    });
    expect(calls).toEqual(['runs<2026-02-01T00:00:00.000Z', 'runs<2026-02-01T00:00:00.000Z', 'runs<2026-02-01T00:00:00.000Z', 'readings<2026-01-30T00:00:00.000Z', 'readings<2026-01-30T00:00:00.000Z']);
  });

  it('a stop ends the pass after the batch in flight, says so, and leaves the rest for the next pass', async () => {
    let stop = false;
    const { store, calls } = counting(3 * BATCH, BATCH);
    const first = await pruneOnce({ store, retentionMs: 28 * DAY, readingsRetentionMs: 30 * DAY, clock }, () => {
      stop = calls.length >= 2;
      return stop;
    });
    expect(first).toEqual({ runs: { deleted: 2 * BATCH, before: '2026-02-01T00:00:00.000Z' }, stopped: true });
    expect(calls.filter((c) => c.startsWith('readings'))).toEqual([]);
    const next = await pruneOnce({ store, retentionMs: 28 * DAY, readingsRetentionMs: 30 * DAY, clock });
    expect(next).toMatchObject({ runs: { deleted: BATCH }, readings: { rows: BATCH }, stopped: false });
  });

  it('does nothing for a setting that is off', async () => {
    const { store, calls } = counting(10, 10);
    expect(await pruneOnce({ store, retentionMs: 0, readingsRetentionMs: 0, clock })).toEqual({ stopped: false });
    expect(calls).toEqual([]);
  });
});
