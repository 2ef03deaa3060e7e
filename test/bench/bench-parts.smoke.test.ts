import { describe, expect, it } from 'vitest';
import { expectPositive, smoke } from './smoke-harness.ts';

// Keeps the harness working in CI. It asserts that every figure is produced, never how fast anything is: timings
// belong to `npm run bench` on a quiet machine, not to a test. `--smoke` runs in two files, each within the suite's
// per-file budget and able to run beside the other: test/bench/bench.smoke.test.ts the replay and steady-state
// parts, this one every other part.
describe('benchmark harness (--smoke): latency, sync, memory, receiver, auth', () => {
  // Generous bounds: the parts start several servers; beside the rest of the suite they take minutes.
  it('prints the other rows and produces positive figures for each', { timeout: 300_000 }, async () => {
    const { stdout, figures } = await smoke('latency,sqlite,postgres,memory,receiver,auth');
    for (const name of [
      'Backfill into SQLite, 2,500 readings of 50 spaces, default settings, 100 ms per answer, 2 in flight',
      'Sync into SQLite, 2,500 rows, end-to-end with the sandbox (not a limit)',
      'Sync into Postgres',
      'Memory: peak RSS',
      'Receiver: signed deliveries',
      'Auth calls per hour',
    ]) {
      expect(stdout).toContain(name);
    }

    const latency = figures.latency!;
    // 2,500 readings of 50 spaces: 50 ticks of 5 minutes, one page per one-hour window.
    expect(latency.pages, 'latency pages').toBe(5);
    // --smoke runs one allowance (2) on SQLite; full and quick modes 8 and 2 on both dialects, through the same code.
    expect(Object.keys(latency.dialects)).toEqual(['sqlite']);
    for (const dialect of ['sqlite'] as const) {
      const d = latency.dialects[dialect]!;
      expectPositive(d.ceilingMs, `${dialect} latency storage ceiling`);
      expect(d.limits.map((l) => l.inFlight), dialect).toEqual([2]);
      for (const l of d.limits) {
        const where = `${dialect} latency, ${l.inFlight} in flight`;
        expectPositive(l.oursMs, `${where} ours`);
        expectPositive(l.floorMs, `${where} floor`);
        expectPositive(l.ratio, `${where} ratio`);
        expectPositive(l.minimalMs, `${where} minimal client`);
        expect(l.minimalRuns.every((r) => r.pages === latency.pages), where).toBe(true);
        expect(l.share429, where).toBeGreaterThanOrEqual(0);
        // The server saw the run: the token and every page at least once, and at least one query at a time.
        expect(l.requests, where).toBeGreaterThanOrEqual(latency.pages + 1);
        expect(l.runs.every((r) => r.pages === latency.pages), where).toBe(true);
        expect(l.maxOpen, where).toBeGreaterThanOrEqual(1);
      }
    }
    for (const dialect of ['sqlite', 'postgres'] as const) {
      const sync = figures.sync[dialect]!;
      expect(sync.rows).toBeGreaterThan(0);
      expect(sync.ours).toBeGreaterThan(0);
      expect(sync.raw).toBeGreaterThan(0);
      expect(sync.ratio).toBeGreaterThan(0);
    }
    expect(figures.memory!.small).toBeGreaterThan(0);
    expect(figures.memory!.large).toBeGreaterThan(0);
    expect(figures.receiver!.ours.perSecond).toBeGreaterThan(0);
    expect(figures.receiver!.bare.perSecond).toBeGreaterThan(0);
    expect(figures.receiver!.ours.p99Ms).toBeGreaterThan(0);
    expect(figures.receiver!.floor.perSecond).toBeGreaterThan(0);
    expect(figures.receiver!.bound).toBeGreaterThan(0);
    expect(figures.auth!.map((a) => a.path)).toEqual(['serve', 'schedule', 'cron', 'cron+cache']);
    for (const a of figures.auth!) expect(a.authCalls).toBeGreaterThan(0);
  });
});
