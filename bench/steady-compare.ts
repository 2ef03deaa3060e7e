import type { Dialect } from '../test/support/databases.ts';
import { flags } from './child.ts';
import { ReplayBench } from './replay-bench.ts';
import { median } from './stats.ts';
import { prepareSteady, timed } from './steady.ts';

/**
 * Two builds of the CLI in one steady-state run (issue 25: a change to what a cron `sync` loads is measured against
 * the build before it, not against yesterday's table):
 *
 *   npm run build && cp -r dist dist-before      # before the change (dist-before/ is yours to delete afterwards)
 *   # ... the change ...
 *   node --import tsx bench/steady-compare.ts --dialect sqlite --runs 9 dist-before/bin/occupancy-sync.js dist/bin/occupancy-sync.js
 *
 * The steady state of bench/steady.ts (200,000 readings stored unless --stored; `dist/` rebuilt from the sources
 * first), then each entry given and the minimal client, the order rotating every round; medians of wall and CPU and
 * their ratio to the minimal client's. An entry must be a copy inside the repository, not a link to one outside: its
 * packages resolve from the repository's node_modules.
 */

const args = flags();
const dialect = (args.get('dialect') ?? 'sqlite') as Dialect;
const runs = Number(args.get('runs') ?? 9);
const stored = Number(args.get('stored') ?? 200_000);
const entries = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !all[i - 1]?.startsWith('--'));
if (entries.length === 0) throw new Error('name one or more CLI entries to compare, e.g. dist/bin/occupancy-sync.js');
const log = (line: string) => process.stderr.write(`${line}\n`);

const bench = await ReplayBench.start(log, stored, ['small']);
const samples = new Map<string, { wall: number[]; cpu: number[] }>();
try {
  const setup = await prepareSteady(bench, dialect, log);
  try {
    const kinds = [...entries, 'minimal'];
    for (let i = 0; i < runs; i++) {
      for (let k = 0; k < kinds.length; k++) {
        const kind = kinds[(k + i) % kinds.length]!;
        const minimal = kind === 'minimal';
        await setup.reset();
        const before = await setup.stats();
        const argv = minimal ? setup.commands.minimal : setup.commands.ours.map((a) => (a === 'dist/bin/occupancy-sync.js' ? kind : a));
        const result = await timed(argv, minimal ? setup.envs.minimal : setup.envs.ours);
        if (result.code !== 0) throw new Error(`${kind}: exit code ${result.code}\n${result.stderr.slice(-2000)}`);
        await setup.check(minimal ? 'minimal' : 'ours', result.stderr, before);
        const s = samples.get(kind) ?? { wall: [], cpu: [] };
        s.wall.push(result.wallMs);
        s.cpu.push(result.cpuMs);
        samples.set(kind, s);
      }
    }
  } finally {
    await setup.drop();
  }
} finally {
  await bench.close();
}
const base = samples.get('minimal')!;
console.log(`| ${dialect}, ${stored} stored, medians of ${runs} | wall ms | CPU ms | wall / minimal | CPU / minimal |\n|---|---:|---:|---:|---:|`);
for (const [kind, s] of samples) {
  const wall = median(s.wall);
  const cpu = median(s.cpu);
  console.log(`| ${kind} | ${wall.toFixed(0)} | ${cpu.toFixed(0)} | ${(wall / median(base.wall)).toFixed(2)} | ${(cpu / median(base.cpu)).toFixed(2)} |`);
}
