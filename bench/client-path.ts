import { randomUUID } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { occupancy } from '../jobs/index.ts';
import { DEFAULT_LIMITS, PageContract } from '../src/sync/contract.ts';
import { validatorOf } from '../src/sync/run/parts.ts';
import { occupancySink } from '../src/store/occupancy-sink.ts';
import { columnsOf } from '../src/store/postgres/unnest.ts';
import { flags } from './child.ts';

/**
 * The client's CPU per reading on the replay benchmark's hot path, without network or database: one window of three
 * pages of 5,000 readings (1,250 floor spaces, tick by tick, as the large pages of bench/replay-bench.ts) gunzipped,
 * parsed, read by the paging style, checked by the page contract (every record validated) and turned into the
 * Postgres upsert's column arrays (the sink's checks included). Each repetition is timed in CPU (process.cpuUsage,
 * so time the process spent waiting for a core is left out): on a machine others share, whole-process CPU per row
 * moves by a third between runs, and the fastest of many repetitions of this loop far less, which is what tells a
 * change of the hot path apart (docs/performance.md, "Against the limit (replay)").
 *
 *   node --import tsx bench/client-path.ts [--runs 100]
 */

const PAGE = 5_000;
const PAGES = 3;
const SPACES = 1_250;

function answers(): Buffer[] {
  const spaces = Array.from({ length: SPACES }, () => randomUUID());
  const start = Date.parse('2026-01-05T00:00:00.000Z');
  return Array.from({ length: PAGES }, (_, p) => {
    const nodes = Array.from({ length: PAGE }, (_, i) => {
      const k = p * PAGE + i;
      return { id: randomUUID(), floorSpaceId: spaces[k % SPACES], occupancyStatus: 'CurrentlyOccupied', headcount: k % 7, created: new Date(start + Math.floor(k / SPACES) * 300_000).toISOString() };
    });
    const more = p < PAGES - 1;
    return gzipSync(JSON.stringify({ data: { occupancy: { nodes, pageInfo: { hasNextPage: more, endCursor: more ? `c${p}` : null } } } }));
  });
}

const runs = Number(flags().get('runs') ?? 100);
const pages = answers();
const first = JSON.parse(gunzipSync(pages[0]!).toString('utf8')) as { data: { occupancy: { nodes: Array<{ floorSpaceId: string; created: string }> } } };
const spaceKeys = new Map<string, number>();
for (const n of first.data.occupancy.nodes) if (!spaceKeys.has(n.floorSpaceId)) spaceKeys.set(n.floorSpaceId, spaceKeys.size + 1);
const from = first.data.occupancy.nodes[0]!.created;
const window = { from, to: new Date(Date.parse(from) + 3_600_000).toISOString(), endSlackMs: 0, cursorField: 'observedAt', apiPath: 'created' };
const prepared = { spaces: spaceKeys, statuses: new Map([['CurrentlyOccupied', 1]]), arrival: 1 };
const validate = validatorOf(occupancy);
const sink = occupancySink('postgres');

const times: number[] = [];
for (let r = 0; r < runs; r++) {
  const started = process.cpuUsage();
  const contract = new PageContract({ where: 'bench', style: occupancy.paging, validate, keyFields: ['floorSpaceId', 'observedAt'], window, startCursor: null, limits: DEFAULT_LIMITS });
  for (let p = 0; p < PAGES; p++) {
    const data = (JSON.parse(gunzipSync(pages[p]!).toString('utf8')) as { data: unknown }).data;
    const page = contract.accept(occupancy.paging.read(data, { position: p === 0 ? null : `c${p - 1}`, pageSize: PAGE }), PAGE);
    columnsOf(sink as never, page.records, prepared);
  }
  const used = process.cpuUsage(started);
  times.push((used.user + used.system) / 1000);
}
times.sort((a, b) => a - b);
const ns = (ms: number) => Math.round((ms * 1e6) / (PAGE * PAGES));
console.log(JSON.stringify({ runs, readings: PAGE * PAGES, nsPerReading: { min: ns(times[0]!), p10: ns(times[Math.floor(runs / 10)]!), median: ns(times[Math.floor(runs / 2)]!) } }));
