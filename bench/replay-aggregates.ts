import { ReplayBench, type MeasuredRun, type Shape } from './replay-bench.ts';
import type { Dialect } from '../test/support/databases.ts';
import { flags } from './child.ts';
import { median } from './stats.ts';

/**
 * What keeping the aggregates costs the replay benchmark, and where its client CPU goes (docs/performance.md,
 * "Keeping the time-weighted aggregates"): ours with the aggregates, ours without them (BENCH_AGGREGATES=off), the
 * minimal client, the minimal client with overlap and the storage ceiling, on the replay of `npm run bench`,
 * alternating and rotating the order each round. Prints each run, then per implementation the medians: rows/s
 * against the best minimal client, client CPU against the minimal client's, and that CPU split into the main
 * thread's and the other threads' (Linux); on Postgres also the local server's CPU per million rows
 * (bench/server-cpu.ts) and client + server CPU against the minimal client's. Writes nothing.
 *
 *   node --import tsx bench/replay-aggregates.ts [--dialect sqlite,postgres] [--shape large,small] [--rows 300000] [--runs 3]
 */

const options = flags();
const dialects = (options.get('dialect') ?? 'sqlite,postgres').split(',') as Dialect[];
const shapes = (options.get('shape') ?? 'large,small').split(',') as Array<Shape['name']>;
const rows = Number(options.get('rows') ?? 300_000);
const runs = Number(options.get('runs') ?? 3);
for (const d of dialects) if (d !== 'sqlite' && d !== 'postgres') throw new Error(`--dialect ${JSON.stringify(d)}: use sqlite, postgres or both (comma-separated)`);
for (const s of shapes) if (s !== 'large' && s !== 'small') throw new Error(`--shape ${JSON.stringify(s)}: use large, small or both (comma-separated)`);
if (!Number.isInteger(rows) || rows < 1000) throw new Error(`--rows ${options.get('rows')}: use a whole number of readings, at least 1000`);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs ${options.get('runs')}: use a whole number of rounds, at least 1`);

const VARIANTS = ['ours', 'ours without the aggregates', 'minimal', 'overlap', 'ceiling'] as const;
type Variant = (typeof VARIANTS)[number];

const bench = await ReplayBench.start((line) => console.log(line), rows, shapes);
try {
  for (const shape of shapes) {
    for (const dialect of dialects) {
      const samples = new Map<Variant, MeasuredRun[]>(VARIANTS.map((v) => [v, []]));
      for (let round = 0; round < runs; round++) {
        for (let k = 0; k < VARIANTS.length; k++) {
          const variant = VARIANTS[(k + round) % VARIANTS.length]!;
          const impl = variant.startsWith('ours') ? 'ours' : (variant as 'minimal' | 'overlap' | 'ceiling');
          const env = { BENCH_AGGREGATES: variant === 'ours' ? 'on' : 'off' };
          samples.get(variant)!.push(await bench.once(impl, dialect, shape, { env }));
        }
      }
      const rate = (v: Variant) => median(samples.get(v)!.map((r) => r.rowsPerSecond));
      const cpu = (v: Variant) => median(samples.get(v)!.map((r) => r.cpuPerMillion));
      const best = Math.max(rate('minimal'), rate('overlap'));
      console.log(`\n${dialect}, ${shape} pages, ${rows.toLocaleString('en-US')} readings, medians of ${runs}:`);
      // Postgres: the server's CPU too (it shares the cores), and client + server against the minimal client's.
      const server = (v: Variant) => {
        const list = samples.get(v)!;
        return list.every((r) => r.serverCpuPerMillion !== undefined) ? median(list.map((r) => r.serverCpuPerMillion!)) : undefined;
      };
      const both = (v: Variant) => median(samples.get(v)!.map((r) => r.cpuPerMillion + (r.serverCpuPerMillion ?? Number.NaN)));
      const withServer = server('minimal') !== undefined;
      console.log(`| Implementation | Rows/s | Against the best minimal client | CPU s per million rows | Against the minimal client | Main thread | Other threads |${withServer ? ' Server CPU s per million rows | Client + server against the minimal client |' : ''}`);
      console.log(`| --- | ---: | ---: | ---: | ---: | ---: | ---: |${withServer ? ' ---: | ---: |' : ''}`);
      for (const v of VARIANTS) {
        const list = samples.get(v)!;
        const main = list.every((r) => r.mainCpuMs !== undefined) ? median(list.map((r) => (r.mainCpuMs! / 1000) * (1e6 / r.rows))) : undefined;
        const split = main === undefined ? '| n/a | n/a' : `| ${main.toFixed(1)} | ${(cpu(v) - main).toFixed(1)}`;
        const s = server(v);
        const serverCells = !withServer ? '' : s === undefined ? ' n/a | n/a |' : ` ${s.toFixed(1)} | ${(both(v) / both('minimal')).toFixed(2)} |`;
        console.log(`| ${v} | ${Math.round(rate(v)).toLocaleString('en-US')} | ${(rate(v) / best).toFixed(2)} | ${cpu(v).toFixed(1)} | ${(cpu(v) / cpu('minimal')).toFixed(2)} ${split} |${serverCells}`);
      }
    }
  }
} finally {
  await bench.close();
}
