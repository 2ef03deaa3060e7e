import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { BenchFigures } from '../../bench/run.ts';
import { tempDir } from '../support/tmp.ts';
import { spawnTs } from '../support/process.ts';

const dirs: Array<{ remove(): void }> = [];

/** Present, finite and positive: the figure was produced. Never how large it is. */
function expectPositive(value: number | undefined, what: string): void {
  expect(Number.isFinite(value), `${what}: ${value}`).toBe(true);
  expect(value!, what).toBeGreaterThan(0);
}
afterEach(() => dirs.splice(0).forEach((d) => d.remove()));

// Keeps the harness working in CI. It asserts that every figure is produced, never how fast anything is: timings
// belong to `npm run bench` on a quiet machine, not to a test.
describe('benchmark harness (--smoke)', () => {
  // Generous bounds: --smoke builds dist/ and starts several servers; beside the rest of the suite it takes minutes.
  it('prints one table with every benchmark and produces positive figures for each', { timeout: 300_000 }, async () => {
    const tmp = tempDir('occupancy-bench-smoke-');
    dirs.push(tmp);
    const json = join(tmp.dir, 'figures.json');
    const bench = spawnTs('bench/run.ts', ['--smoke', '--no-write', '--json', json]);
    const { code } = await bench.exit(290_000, 'bench/run.ts --smoke to finish');
    expect(code, bench.stderr()).toBe(0);
    const stdout = bench.stdout();

    expect(stdout).toMatch(/^\| Benchmark +\| Ours +\| Baseline \(same run\) +\| Ratio +\| Goal +\| Met +\|$/m);
    for (const name of [
      'Replay into SQLite, large pages',
      'Replay into SQLite, small pages',
      'Replay into Postgres, large pages',
      'Replay into Postgres, small pages',
      'Bytes per reading, SQLite',
      'Bytes per reading, Postgres',
      'Steady state, SQLite',
      'Steady state, Postgres',
      'Replay server: its own CPU per million rows',
      'Backfill into SQLite, 2,500 readings of 50 spaces, default settings, 100 ms per answer, 2 in flight',
      'Sync into SQLite, 2,500 rows, end-to-end with the sandbox (not a limit)',
      'Sync into Postgres',
      'Memory: peak RSS',
      'Receiver: signed deliveries',
      'Auth calls per hour',
    ]) {
      expect(stdout).toContain(name);
    }

    const figures = JSON.parse(readFileSync(json, 'utf8')) as BenchFigures;
    expect(figures.skipped).toEqual([]);
    const replay = figures.replay!;
    expectPositive(replay.server.perMillion, 'replay server CPU per million rows');
    for (const dialect of ['sqlite', 'postgres'] as const) {
      const d = replay.dialects[dialect]!;
      for (const shape of ['large', 'small'] as const) {
        const f = d.shapes[shape]!;
        const where = `${dialect} ${shape}`;
        expect(f.rows, where).toBe(replay.rows);
        for (const impl of ['ours', 'minimal', 'overlap', 'ceiling'] as const) {
          expectPositive(f.rowsPerSecond[impl], `${where} ${impl} rows/s`);
          expectPositive(f.cpuPerMillion[impl], `${where} ${impl} CPU per million rows`);
          expectPositive(f.maxRssBytes[impl], `${where} ${impl} peak RSS`);
        }
        expectPositive(f.ratioToBestMinimal, `${where} ours / best minimal`);
        expectPositive(f.ratioToCeiling, `${where} ours / ceiling`);
        expectPositive(f.cpuRatio, `${where} CPU ratio`);
      }
      expectPositive(d.bytes!.perReading, `${dialect} bytes per reading`);
      expect(d.bytes!.readings, dialect).toBe(replay.rows);
      if (d.bytes!.breakdown !== 'none') expect(d.bytes!.relations.length, `${dialect} bytes breakdown`).toBeGreaterThan(0);
      const steady = d.steady!;
      expect(steady.readings, `${dialect} steady readings`).toBe(150);
      for (const kind of ['ours', 'minimal', 'node'] as const) {
        expectPositive(steady.wallMs[kind], `${dialect} steady ${kind} wall`);
        expectPositive(steady.cpuMs[kind], `${dialect} steady ${kind} CPU`);
      }
      expectPositive(steady.wallRatio, `${dialect} steady wall ratio`);
      expectPositive(steady.cpuRatio, `${dialect} steady CPU ratio`);
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
