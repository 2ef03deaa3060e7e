import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { BenchFigures } from '../../bench/run.ts';
import { tempDir } from '../support/tmp.ts';
import { spawnTs } from '../support/process.ts';

const dirs: Array<{ remove(): void }> = [];
afterEach(() => dirs.splice(0).forEach((d) => d.remove()));

// Keeps the harness working in CI. It asserts that every figure is produced, never how fast anything is: timings
// belong to `npm run bench` on a quiet machine, not to a test.
describe('benchmark harness (--smoke)', () => {
  it('prints one table with every benchmark and produces positive figures for each', { timeout: 120_000 }, async () => {
    const tmp = tempDir('occupancy-bench-smoke-');
    dirs.push(tmp);
    const json = join(tmp.dir, 'figures.json');
    const bench = spawnTs('bench/run.ts', ['--smoke', '--no-write', '--json', json]);
    const { code } = await bench.exit(110_000, 'bench/run.ts --smoke to finish');
    expect(code, bench.stderr()).toBe(0);
    const stdout = bench.stdout();

    expect(stdout).toMatch(/^\| Benchmark +\| Ours +\| Baseline \(same run\) +\| Ratio +\| Goal +\| Met +\|$/m);
    for (const name of ['Sync into SQLite', 'Sync into Postgres', 'Memory: peak RSS', 'Receiver: signed deliveries', 'Auth calls per hour']) {
      expect(stdout).toContain(name);
    }

    const figures = JSON.parse(readFileSync(json, 'utf8')) as BenchFigures;
    expect(figures.skipped).toEqual([]);
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
