import { aggregateSettings } from '../src/app/aggregates.ts';
import { FakeClock } from '../src/clock.ts';
import { DEFAULT_WORKING_TIME } from '../src/config-working-time.ts';
import { streams as builtIn } from '../jobs/index.ts';
import type { FloorSpaceRecord, OccupancyRecord } from '../src/store/types.ts';
import { freshDatabase, openTestStore, type Dialect } from '../test/support/databases.ts';
import { flags } from './child.ts';
import { median } from './stats.ts';
import { BENCH_PG_URL } from './sync-bench.ts';

/**
 * The refresh alone (docs/performance.md, "Keeping the time-weighted aggregates"): what a run's end does after its
 * pages, without the sync's fetching and writing around it. A fresh database per run holds `--buildings` buildings of
 * `--spaces` floor spaces each (five floors a building), then pages of 1,000 readings of 5-minute sensors, `--hours`
 * hours of every space, committed as a poll run's pages are (each appends its invalidation row); the refresh of the
 * customer that follows is timed, with the process's CPU; with `--what rebuild`, a whole rebuild of the customer after
 * that refresh (`occupancy-sync aggregates rebuild`) is timed instead. Prints each run and the medians; writes nothing.
 *
 *   node --import tsx bench/refresh-alone.ts [--dialect postgres,sqlite] [--buildings 25] [--spaces 50] [--hours 2] [--runs 5] [--what refresh|rebuild]
 */

const options = flags();
const dialects = (options.get('dialect') ?? 'postgres,sqlite').split(',') as Dialect[];
const buildings = Number(options.get('buildings') ?? 25);
const perBuilding = Number(options.get('spaces') ?? 50);
const hours = Number(options.get('hours') ?? 2);
const runs = Number(options.get('runs') ?? 5);
const what = options.get('what') ?? 'refresh';
if (what !== 'refresh' && what !== 'rebuild') throw new Error(`--what ${JSON.stringify(what)}: use refresh or rebuild`);
const C = 'bench';
const T0 = Date.parse('2026-03-02T07:00:00.000Z');
const TICK = 5 * 60_000;
const PAGE = 1000;
const settings = aggregateSettings({ workingTime: DEFAULT_WORKING_TIME }, builtIn);
const checkpoint = { customerId: C, stateKey: 'occupancy', watermark: null, windowStart: null, windowEnd: null, pageCursor: null, rangeStart: null, rangeEnd: null };

const spaces: FloorSpaceRecord[] = [];
for (let b = 0; b < buildings; b++) {
  for (let s = 0; s < perBuilding; s++) spaces.push({ id: `b${b}-s${s}`, buildingId: `b${b}`, floorId: `b${b}-f${s % 5}`, capacity: 1 + (s % 8), name: null, spaceType: null });
}
const readings: OccupancyRecord[] = [];
for (let t = T0; t < T0 + hours * 3_600_000; t += TICK) {
  spaces.forEach((space, i) => {
    const occupied = (i + t / TICK) % 3 !== 0;
    readings.push({ floorSpaceId: space.id, observedAt: new Date(t).toISOString(), occupancyStatus: occupied ? 'CurrentlyOccupied' : 'CurrentlyUnoccupied', headcount: occupied ? 1 + (i % 4) : 0, eventId: null });
  });
}

async function once(dialect: Dialect): Promise<{ ms: number; cpuMs: number; buckets: number }> {
  const db = await freshDatabase(dialect, 'refresh_alone', { baseUrl: BENCH_PG_URL, schemaPrefix: 'osbench_' });
  // A clock that stands still: no refresh starts beside the pages (run-refresh.ts counts their age by it), so the one
  // timed below does all of it.
  const store = await openTestStore(db, { clock: new FakeClock(T0) });
  try {
    await store.reconcileAggregates(C, settings);
    await store.commitPage({ customerId: C, sink: 'floorSpaces', at: new Date(T0).toISOString(), checkpoint: { ...checkpoint, stateKey: 'floor_spaces' }, records: spaces });
    await store.reconcileAggregates(C, settings);
    for (let i = 0; i < readings.length; i += PAGE) {
      await store.commitPage({ customerId: C, sink: 'occupancy', at: new Date(T0).toISOString(), checkpoint, records: readings.slice(i, i + PAGE) });
    }
    if (what === 'rebuild') await store.refreshAggregates(C, settings);
    const cpu = process.cpuUsage();
    const started = performance.now();
    const buckets =
      what === 'rebuild'
        ? (await store.rebuildAggregates({ customerId: C }, settings)).reduce((sum, b) => sum + b.buckets, 0)
        : (await store.refreshAggregates(C, settings)).buckets;
    const ms = performance.now() - started;
    const used = process.cpuUsage(cpu);
    return { ms, cpuMs: (used.user + used.system) / 1000, buckets };
  } finally {
    await store.close();
    await db.drop();
  }
}

for (const dialect of dialects) {
  const results = [];
  for (let i = 0; i < runs; i++) {
    const r = await once(dialect);
    process.stdout.write(`  ${dialect}: ${what} of ${readings.length} readings, ${spaces.length} floor spaces: ${r.ms.toFixed(0)} ms, ${r.cpuMs.toFixed(0)} ms CPU, ${r.buckets} buckets\n`);
    results.push(r);
  }
  process.stdout.write(`${dialect}: median ${median(results.map((r) => r.ms)).toFixed(0)} ms, ${median(results.map((r) => r.cpuMs)).toFixed(0)} ms CPU (${runs} runs)\n`);
}
