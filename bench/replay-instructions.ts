import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshDatabase, type Dialect } from '../test/support/databases.ts';
import { parseCachegrind, perRow, type Instructions } from './cachegrind.ts';
import { flags, runBench } from './child.ts';
import { ReplayBench, type Shape } from './replay-bench.ts';
import type { Impl, ReplayResult } from './replay-worker.ts';
import { formatNumber } from './stats.ts';
import { BENCH_PG_URL } from './sync-bench.ts';

/**
 * The replay's client work in instructions (docs/performance.md, "Instructions per reading"): each implementation
 * runs the replay of `npm run bench` twice under valgrind's cachegrind, over the whole recorded range and over its
 * first third, and the difference per reading is what a reading costs it, without what a run pays once. Instructions
 * do not move with the rest of the machine's load as CPU seconds do, so a change of a few percent shows in one pair
 * of runs; they are not time. Then the functions whose share differs most between the first implementation and the
 * last (by default ours without the aggregates and the minimal client).
 *
 * Under valgrind a run takes some 50 times as long, so what a run does by the clock happens more often than it would:
 * ours with the aggregates refreshes beside the run every REFRESH_INTERVAL_MS of wall time, which a run here never
 * reaches. Its figure (`ours`) is therefore not the aggregates' cost; ours without them (`ours-off`) and the minimal
 * client do nothing by the clock that changes their work. Postgres' server is not counted (another process).
 *
 *   node --import tsx bench/replay-instructions.ts [--dialect sqlite] [--shape small] [--rows 300000]
 *     [--impls ours-off,minimal] [--top 25]
 *
 * Needs valgrind (Debian's package).
 */

const options = flags();
const dialect = (options.get('dialect') ?? 'sqlite') as Dialect;
const shape = (options.get('shape') ?? 'small') as Shape['name'];
const rows = Number(options.get('rows') ?? 300_000);
const impls = (options.get('impls') ?? 'ours-off,minimal').split(',');
const top = Number(options.get('top') ?? 25);
const IMPLS: Record<string, { impl: Impl; aggregates: 'on' | 'off' }> = {
  'ours-off': { impl: 'ours', aggregates: 'off' },
  ours: { impl: 'ours', aggregates: 'on' },
  minimal: { impl: 'minimal', aggregates: 'off' },
  overlap: { impl: 'overlap', aggregates: 'off' },
};
if (dialect !== 'sqlite' && dialect !== 'postgres') throw new Error(`--dialect ${JSON.stringify(dialect)}: use sqlite or postgres`);
if (shape !== 'large' && shape !== 'small') throw new Error(`--shape ${JSON.stringify(shape)}: use large or small`);
if (!Number.isInteger(rows) || rows < 3000) throw new Error(`--rows ${options.get('rows')}: use a whole number of readings, at least 3000`);
for (const name of impls) if (!IMPLS[name]) throw new Error(`--impls: ${JSON.stringify(name)} is none of ${Object.keys(IMPLS).join(', ')}`);
if (!Number.isInteger(top) || top < 0) throw new Error(`--top ${options.get('top')}: use a whole number of functions`);

const bench = await ReplayBench.start((line) => console.log(line), rows, [shape]);
const outputs = mkdtempSync(join(tmpdir(), 'occupancy-sync-cachegrind-'));
let serial = 0;

/** One run under cachegrind over `share` of the recorded range (whole windows): its readings and instructions. */
async function counted(name: string, share: number): Promise<{ rows: number; counts: Instructions }> {
  const { impl, aggregates } = IMPLS[name]!;
  const db = await freshDatabase(dialect, `instructions_${impl}_${dialect}`, { migrate: true, baseUrl: BENCH_PG_URL, schemaPrefix: 'osbench_' });
  try {
    const job = bench.job(shape, db.url, 'unnest');
    const { sandbox } = bench.replay(shape);
    const windows = Math.round((job.to - job.from) / job.stepMs);
    job.to = job.from + Math.max(1, Math.round(windows * share)) * job.stepMs;
    job.expectedRows = ((job.to - job.from) / sandbox.intervalMs) * sandbox.floorSpaces;
    const out = join(outputs, `run-${++serial}`);
    // smc-check: V8 writes the code it runs, on the heap.
    const wrapper = ['valgrind', '--tool=cachegrind', '--cache-sim=no', '--branch-sim=no', '--smc-check=all-non-file', `--cachegrind-out-file=${out}`, `--log-file=${out}.log`];
    const result = await runBench<ReplayResult>('replay-worker.ts', ['--impl', impl, '--job', JSON.stringify(job)], { wrapper, env: { BENCH_AGGREGATES: aggregates }, timeoutMs: 3_600_000 });
    return { rows: result.rows, counts: parseCachegrind(readFileSync(out, 'utf8')) };
  } finally {
    await db.drop();
  }
}

const perReading = new Map<string, Instructions>();
try {
  for (const name of impls) {
    const short = await counted(name, 1 / 3);
    const long = await counted(name, 1);
    const per = perRow(long.counts, long.rows, short.counts, short.rows);
    perReading.set(name, per);
    console.log(`  ${name}: ${formatNumber(long.rows)} readings ${formatNumber(long.counts.total / 1e9, 2)} G instructions, ${formatNumber(short.rows)} readings ${formatNumber(short.counts.total / 1e9, 2)} G: ${formatNumber(per.total)} a reading`);
  }
} finally {
  await bench.close();
  rmSync(outputs, { recursive: true, force: true });
}

const last = impls[impls.length - 1]!;
console.log(`\n${dialect}, ${shape} pages, ${formatNumber(rows)} readings against the first third: instructions a reading`);
console.log(`| Implementation | Instructions a reading | Against ${last} |\n| --- | ---: | ---: |`);
for (const [name, per] of perReading) console.log(`| ${name} | ${formatNumber(per.total)} | ${(per.total / perReading.get(last)!.total).toFixed(2)} |`);
if (impls.length > 1 && top > 0) {
  const [a, b] = [perReading.get(impls[0]!)!, perReading.get(last)!];
  const names = [...new Set([...a.byFunction.keys(), ...b.byFunction.keys()])];
  const rows = names.map((fn) => ({ fn, a: a.byFunction.get(fn) ?? 0, b: b.byFunction.get(fn) ?? 0 })).sort((x, y) => Math.abs(y.a - y.b) - Math.abs(x.a - x.b));
  console.log(`\nThe ${top} functions whose instructions a reading differ most, ${impls[0]} against ${last} (\`???\`: code V8 generated)`);
  console.log(`| Function | ${impls[0]} | ${last} | Difference |\n| --- | ---: | ---: | ---: |`);
  for (const r of rows.slice(0, top)) console.log(`| ${r.fn.slice(0, 90).replaceAll('|', '\\|')} | ${formatNumber(r.a)} | ${formatNumber(r.b)} | ${formatNumber(r.a - r.b)} |`);
}
