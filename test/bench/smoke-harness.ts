import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect } from 'vitest';
import type { BenchFigures } from '../../bench/run.ts';
import { tempDir } from '../support/tmp.ts';
import { spawnTs } from '../support/process.ts';

/** What both bench smoke files share: running `bench/run.ts --smoke --only <parts>`, and the check of a figure. */

const dirs: Array<{ remove(): void }> = [];

/** Present, finite and positive: the figure was produced. Never how large it is. */
export function expectPositive(value: number | undefined, what: string): void {
  expect(Number.isFinite(value), `${what}: ${value}`).toBe(true);
  expect(value!, what).toBeGreaterThan(0);
}
afterEach(() => dirs.splice(0).forEach((d) => d.remove()));

/** Runs `bench/run.ts --smoke --only <parts>` and returns what it printed and its figures. */
export async function smoke(parts: string): Promise<{ stdout: string; figures: BenchFigures }> {
  const tmp = tempDir('occupancy-bench-smoke-');
  dirs.push(tmp);
  const json = join(tmp.dir, 'figures.json');
  const bench = spawnTs('bench/run.ts', ['--smoke', '--no-write', '--only', parts, '--json', json]);
  const { code } = await bench.exit(290_000, `bench/run.ts --smoke --only ${parts} to finish`);
  expect(code, bench.stderr()).toBe(0);
  const stdout = bench.stdout();
  expect(stdout).toMatch(/^\| Benchmark +\| Ours +\| Baseline \(same run\) +\| Ratio +\| Goal +\| Met +\|$/m);
  const figures = JSON.parse(readFileSync(json, 'utf8')) as BenchFigures;
  expect(figures.skipped).toEqual([]);
  return { stdout, figures };
}
