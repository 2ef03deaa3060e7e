import type { Dialect } from '../test/support/databases.ts';
import type { LatencyFigures, LimitFigures } from './latency-bench.ts';
import { formatNumber } from './stats.ts';
import type { Row } from './table.ts';

/** The latency benchmark's rows of the one table, with the goals of issue 25. */

export const LATENCY_GOALS = {
  /** floor / ours, at least. */
  ratio: 0.8,
  /** Share of queries answered 429, at most. */
  share429: 0.05,
};

const NAME: Record<Dialect, string> = { sqlite: 'SQLite', postgres: 'Postgres' };
const seconds = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;

function floorText(f: LatencyFigures, l: LimitFigures, ceilingMs: number): string {
  const network = `${f.pages} pages x ${f.latencyMs} ms / ${l.inFlight} = ${seconds(l.networkFloorMs)}`;
  const rate = l.rateFloorMs !== undefined ? `; ${f.pages} pages / ${l.perSecond} per s = ${seconds(l.rateFloorMs)}` : '';
  const reach = `minimal client, ${l.inFlight} windows in flight: ${seconds(l.minimalMs)} (ratio ${l.minimalRatio.toFixed(2)})`;
  return `${seconds(l.floorMs)} (floor: ${l.floorBy}); network ${network}${rate}; storage ceiling ${seconds(ceilingMs)}; ${reach}`;
}

export function latencyRows(f: LatencyFigures): Row[] {
  const rows: Row[] = [];
  for (const [dialect, d] of Object.entries(f.dialects) as Array<[Dialect, NonNullable<LatencyFigures['dialects'][Dialect]>]>) {
    for (const l of d.limits) {
      const limit = `${l.inFlight} in flight${l.perSecond !== undefined ? `, ${l.perSecond}/s` : ''}`;
      const met = l.failed.length === 0 && l.ratio >= LATENCY_GOALS.ratio && l.share429 <= LATENCY_GOALS.share429;
      const failed = l.failed.length ? `FAILED in ${l.failed.length} of ${l.runs.length} run(s) (${l.failed[0]}); ` : '';
      rows.push({
        benchmark: `Backfill into ${NAME[dialect]}, ${formatNumber(f.rows)} readings of 50 spaces, default settings, ${f.latencyMs} ms per answer, ${limit}: ours vs floor`,
        ours: `${failed}${Number.isNaN(l.oursMs) ? '-' : seconds(l.oursMs)}; ${(l.share429 * 100).toFixed(1)} % answered 429, most in flight ${l.maxOpen}, ${formatNumber(l.requests)} requests`,
        baseline: floorText(f, l, d.ceilingMs),
        ...(!Number.isNaN(l.ratio) && { ratio: l.ratio }),
        goal: `>= ${LATENCY_GOALS.ratio.toFixed(2)}, 429 <= ${LATENCY_GOALS.share429 * 100} %`,
        met,
      });
    }
  }
  return rows;
}
