/**
 * What keeping the time-weighted aggregates costs a commit (issue 40's budget: at most 15 % of the sync's
 * throughput): the same pages of readings committed through the store with the aggregates kept (each page records
 * what it made stale; the refresh at the end, timed too, recomputes it) and without (`maintainAggregates: false`),
 * alternating, each run on a fresh database, no network in between, so the
 * difference is the maintenance alone. 5-minute interval sensors, pages in time order as a backfill's windows commit
 * them. Prints a table; writes nothing.
 *
 *   node --import tsx bench/aggregates-cost.ts [--dialect sqlite|postgres] [--spaces 1250] [--rows 100000]
 *                                              [--page 5000] [--repeat 3]
 */
import { openStore } from '../src/store/index.ts';
import type { OccupancyRecord, Store } from '../src/store/types.ts';
import { freshDatabase, type Dialect } from '../test/support/databases.ts';
import { formatNumber, median } from './stats.ts';

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : fallback;
};
const dialect = arg('dialect', 'sqlite') as Dialect;
const spaces = Number(arg('spaces', '1250'));
const rows = Number(arg('rows', '100000'));
const pageSize = Number(arg('page', '5000'));
const repeat = Number(arg('repeat', '3'));
const CUSTOMER = 'c-bench';
const START = Date.parse('2026-03-02T00:00:00.000Z');

/** Readings every 5 minutes of each space, in time order, as pages. */
function pages(): OccupancyRecord[][] {
  const all: OccupancyRecord[] = [];
  for (let tick = 0; all.length < rows; tick++) {
    for (let s = 0; s < spaces && all.length < rows; s++) {
      const busy = (tick * 7 + s * 13) % 10 < 4;
      all.push({ floorSpaceId: `fs-${s}`, observedAt: new Date(START + tick * 300_000 + (s % 60) * 1000).toISOString(), occupancyStatus: busy ? 'CurrentlyOccupied' : 'Unoccupied', headcount: busy ? 1 + (s % 5) : 0, eventId: null });
    }
  }
  const out: OccupancyRecord[][] = [];
  for (let i = 0; i < all.length; i += pageSize) out.push(all.slice(i, i + pageSize));
  return out;
}

async function run(kept: boolean, data: OccupancyRecord[][]): Promise<{ ms: number; cpuMs: number }> {
  const db = await freshDatabase(dialect, `aggcost-${kept ? 'on' : 'off'}`);
  let store: Store | undefined;
  try {
    store = await openStore(db.database, { maintainAggregates: kept });
    await store.migrate();
    const checkpoint = { customerId: CUSTOMER, stateKey: 'occupancy', watermark: null, windowStart: null, windowEnd: null, pageCursor: null, rangeStart: null, rangeEnd: null };
    const cpu = process.cpuUsage();
    const started = performance.now();
    for (const records of data) await store.commitPage({ customerId: CUSTOMER, sink: 'occupancy', records, at: '2026-03-10T00:00:00.000Z', checkpoint });
    // What a run's end does (a long run's commits also start refreshes beside it: run-refresh.ts): part of the cost.
    await store.refreshAggregates(CUSTOMER);
    const ms = performance.now() - started;
    const used = process.cpuUsage(cpu);
    if ((await store.pendingAggregates(CUSTOMER)).length > 0) throw new Error('the refresh left invalidations pending');
    return { ms, cpuMs: (used.user + used.system) / 1000 };
  } finally {
    await store?.close();
    await db.drop();
  }
}

const data = pages();
const samples: Record<'off' | 'on', Array<{ ms: number; cpuMs: number }>> = { off: [], on: [] };
for (let r = 0; r < repeat; r++) {
  for (const kept of r % 2 === 0 ? [false, true] : [true, false]) samples[kept ? 'on' : 'off'].push(await run(kept, data));
}
const perSecond = (s: Array<{ ms: number }>) => median(s.map((x) => (rows / x.ms) * 1000));
const cpuPerMillion = (s: Array<{ cpuMs: number }>) => median(s.map((x) => (x.cpuMs / rows) * 1000));
const off = perSecond(samples.off);
const on = perSecond(samples.on);
console.log(`${dialect}: ${formatNumber(rows, 0)} readings of ${spaces} spaces in pages of ${pageSize}, median of ${repeat}`);
console.log(`  without aggregates ${formatNumber(off, 0)} rows/s, CPU ${formatNumber(cpuPerMillion(samples.off), 1)} s per million rows`);
console.log(`  with aggregates    ${formatNumber(on, 0)} rows/s, CPU ${formatNumber(cpuPerMillion(samples.on), 1)} s per million rows`);
console.log(`  cost: ${formatNumber((1 - on / off) * 100, 1)} % of the commit throughput`);
