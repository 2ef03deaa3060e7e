import { flags } from './child.ts';
import { measureCost, portfolioDefinitions } from './portfolio.ts';
import { SyncBench } from './sync-bench.ts';
import type { Dialect } from '../test/support/databases.ts';

/**
 * The portfolio benchmark's cost rows alone (docs/performance.md, "Keeping the time-weighted aggregates"): the sync's
 * throughput with and without the aggregates, 5-minute sensors, 1,250 floor spaces listed first, default settings,
 * each run a fresh process on a fresh database, the sides alternating. Prints the runs and the medians; writes
 * nothing.
 *
 *   node --import tsx bench/portfolio-cost.ts [--dialect postgres,sqlite] [--readings 30000] [--runs 3]
 */

const options = flags();
const dialects = (options.get('dialect') ?? 'postgres,sqlite').split(',') as Dialect[];
const cost = { readings: Number(options.get('readings') ?? 30_000), runs: Number(options.get('runs') ?? 3) };
const log = (line: string) => process.stdout.write(`${line}\n`);
const sync = await SyncBench.start(log);
const definitions = portfolioDefinitions('5m');
try {
  for (const dialect of dialects) {
    const figures = await measureCost(dialect, { cost }, sync, definitions.file, log);
    log(`${dialect}: with ${Math.round(figures.withRate)} readings/s, without ${Math.round(figures.withoutRate)}: costs ${(figures.cost * 100).toFixed(0)} %`);
  }
} finally {
  definitions.remove();
  await sync.close();
}
