import { describe, expect, it } from 'vitest';
import { simulate } from './budget-sim.ts';

/**
 * One key's budget against a simulated platform that refuses (429, Retry-After: 1) beyond N queries in flight, N
 * unknown to us, 100 ms per answer, 334 pages fetched 64 at a time (windows in parallel). Virtual time: these are
 * the budget's decisions, not this machine's speed (the real timings are the bench's, bench/).
 */

const platform = { latencyMs: 100, retryAfterMs: 1000 };

describe('the adaptive budget finds an unknown in-flight limit', () => {
  it.each([1, 2, 4, 8, 16])('N = %i: at least 0.8 of the floor (pages x latency / N), at most 5 %% of queries refused', async (allowed) => {
    const run = await simulate({ ...platform, allowed }, { pages: 334, parallel: 64 });
    expect(run.floorMs / run.elapsedMs, JSON.stringify(run)).toBeGreaterThanOrEqual(0.8);
    expect(run.refused / run.sent, JSON.stringify(run)).toBeLessThanOrEqual(0.05);
    expect(run.limit).toBe(allowed);
    expect(run.mostInFlight).toBe(allowed);
    // Finding the limit never paused the whole key: only refused probes waited their Retry-After.
    expect(run.pauses).toBe(0);
  });

  it('stays at the limit over a long run, probing above it rarely', async () => {
    const run = await simulate({ ...platform, allowed: 8 }, { pages: 10_000, parallel: 64 });
    expect(run.floorMs / run.elapsedMs).toBeGreaterThanOrEqual(0.99);
    expect(run.refused).toBeLessThanOrEqual(10);
  });

  it('follows a platform whose limit falls, pausing the whole key at most once', async () => {
    const run = await simulate({ ...platform, allowed: 8, change: { atMs: 10_000, allowed: 4 } }, { pages: 3340, parallel: 64 });
    expect(run.pauses).toBeLessThanOrEqual(1);
    expect(run.limit).toBe(4);
    expect(run.refused / run.sent).toBeLessThanOrEqual(0.01);
  });

  it('keeps the queue of a platform that queues instead of refusing within the slow alarm', async () => {
    for (const allowed of [2, 8]) {
      const run = await simulate({ ...platform, allowed, queue: true }, { pages: 3340, parallel: 64 });
      // Answers in waves differ by whole latencies, so the queueing check does not stand out of their spread here;
      // the slow alarm (four times the least) bounds the queue.
      expect(run.meanLatencyMs, JSON.stringify(run)).toBeLessThan(5 * platform.latencyMs);
      expect(run.floorMs / run.elapsedMs).toBeGreaterThanOrEqual(0.95);
    }
  });

  it('backs off multiplicatively when the platform, overloaded by others, answers seconds slower', async () => {
    const run = await simulate({ ...platform, allowed: 100, change: { atMs: 5_000, latencyMs: 3_000 } }, { pages: 3000, parallel: 64 });
    expect(run.highest).toBeGreaterThanOrEqual(20);
    expect(run.lowestAfterChange, JSON.stringify(run)).toBeLessThanOrEqual(run.highest / 2);
  });

  it('pauses the whole key when refusals go on under a cut limit: a platform that counts per second', async () => {
    const run = await simulate({ ...platform, allowed: 100, perSecond: 20 }, { pages: 400, parallel: 64 });
    expect(run.pauses).toBeGreaterThanOrEqual(1);
    expect(run.refused / run.sent, JSON.stringify(run)).toBeLessThanOrEqual(0.1);
    // 400 queries at 20 a second take 20 s at best.
    expect(20_000 / run.elapsedMs, JSON.stringify(run)).toBeGreaterThanOrEqual(0.7);
  });

  it('holds a fixed limit (API_IN_FLIGHT=N) and spaces starts under a rate (API_MAX_RATE)', async () => {
    const fixed = await simulate({ ...platform, allowed: 8 }, { pages: 334, parallel: 64, settings: { adaptive: false, maxInFlight: 6 } });
    expect(fixed.mostInFlight).toBe(6);
    expect(fixed.refused).toBe(0);
    const rated = await simulate({ ...platform, allowed: 8 }, { pages: 100, parallel: 64, settings: { ratePerSecond: 20 } });
    // 100 starts at most 20 per second: the last one no earlier than 99 x 50 ms.
    expect(rated.elapsedMs).toBeGreaterThanOrEqual(99 * 50 + platform.latencyMs);
    expect(rated.refused).toBe(0);
  });
});
