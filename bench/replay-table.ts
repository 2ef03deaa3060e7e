import type { Dialect } from '../test/support/databases.ts';
import type { PgStyle } from './raw-writers.ts';
import type { ShapeFigures, SteadyWindow } from './replay-bench.ts';
import { formatNumber, mib } from './stats.ts';
import type { SteadyFigures } from './steady.ts';
import type { BytesPerReading } from './storage-size.ts';
import type { Row } from './table.ts';

/** The replay benchmark's figures (--json) and its rows of the one table, with the goals of issue 18. */

export interface ReplayFigures {
  rows: number;
  runs: number;
  steadyRuns: number;
  pgStyle: PgStyle;
  steadyWindow: SteadyWindow;
  dialects: Partial<Record<Dialect, { shapes: Partial<Record<'large' | 'small', ShapeFigures>>; bytes?: BytesPerReading; steady?: SteadyFigures }>>;
  /** The replay servers' own CPU over every timed run. */
  server: { cpuSeconds: number; rows: number; perMillion: number };
}

export const GOALS = {
  toBestMinimal: 1.0,
  toCeiling: 0.9,
  cpuRatio: 1.1,
  bytesPerReading: { sqlite: 100, postgres: 150 } satisfies Record<Dialect, number>,
  steady: 1.5,
};

const NAME: Record<Dialect, string> = { sqlite: 'SQLite', postgres: 'Postgres' };
const rate = (v: number) => `${formatNumber(v)} rows/s`;
const cpu = (v: number) => `${v.toFixed(1)} s`;

export function replayRows(r: ReplayFigures): Row[] {
  const rows: Row[] = [];
  for (const [dialect, d] of Object.entries(r.dialects) as Array<[Dialect, NonNullable<ReplayFigures['dialects'][Dialect]>]>) {
    const writer = dialect === 'sqlite' ? 'better-sqlite3' : `postgres.js ${r.pgStyle}`;
    for (const [shape, f] of Object.entries(d.shapes) as Array<['large' | 'small', ShapeFigures]>) {
      const what = `Replay into ${NAME[dialect]}, ${shape} pages, ${formatNumber(f.rows)} rows`;
      const best = f.bestMinimal === 'overlap' ? 'minimal+overlap' : 'minimal';
      rows.push({
        benchmark: `${what}: ours vs best minimal client`,
        ours: rate(f.rowsPerSecond.ours),
        baseline: `${rate(f.rowsPerSecond[f.bestMinimal])} (${best}, ${writer}); minimal ${formatNumber(f.rowsPerSecond.minimal)}, +overlap ${formatNumber(f.rowsPerSecond.overlap)}`,
        ratio: f.ratioToBestMinimal,
        goal: `>= ${GOALS.toBestMinimal.toFixed(2)}`,
        met: f.ratioToBestMinimal >= GOALS.toBestMinimal,
      });
      rows.push({
        benchmark: `${what}: ours vs storage ceiling`,
        ours: rate(f.rowsPerSecond.ours),
        baseline: `${rate(f.rowsPerSecond.ceiling)} (ceiling: same writes, rows in memory, no network)`,
        ratio: f.ratioToCeiling,
        goal: `>= ${GOALS.toCeiling.toFixed(2)}`,
        met: f.ratioToCeiling >= GOALS.toCeiling,
      });
      rows.push({
        benchmark: `${what}: client CPU per million rows`,
        ours: cpu(f.cpuPerMillion.ours),
        baseline: `${cpu(f.cpuPerMillion.minimal)} (minimal); +overlap ${cpu(f.cpuPerMillion.overlap)}, ceiling ${cpu(f.cpuPerMillion.ceiling)}`,
        ratio: f.cpuRatio,
        goal: `<= ${GOALS.cpuRatio.toFixed(2)}`,
        met: f.cpuRatio <= GOALS.cpuRatio,
      });
      rows.push({
        benchmark: `${what}: peak RSS`,
        ours: mib(f.maxRssBytes.ours),
        baseline: `${mib(f.maxRssBytes.minimal)} (minimal); +overlap ${mib(f.maxRssBytes.overlap)}, ceiling ${mib(f.maxRssBytes.ceiling)} (rows preloaded)`,
        ratio: f.maxRssBytes.ours / f.maxRssBytes.minimal,
        goal: 'n/a',
        met: undefined,
      });
    }
    if (d.bytes) {
      const goal = GOALS.bytesPerReading[dialect];
      const top = d.bytes.relations.slice(0, 4).map((x) => `${x.name} ${x.perReading.toFixed(0)}`).join(', ');
      rows.push({
        benchmark: `Bytes per reading, ${NAME[dialect]}, after ours at ${formatNumber(d.bytes.readings)} readings`,
        ours: `${d.bytes.perReading.toFixed(1)} B`,
        baseline: d.bytes.breakdown === 'none' ? '(no dbstat in this SQLite build: total only)' : top,
        goal: `<= ${goal}`,
        met: d.bytes.perReading <= goal,
      });
    }
    if (d.steady) {
      const s = d.steady;
      const head = `Steady state, ${NAME[dialect]}: sync of ${s.readings} readings with ${formatNumber(s.storedBefore)} stored, process included`;
      rows.push({
        benchmark: `${head}: wall`,
        ours: `${formatNumber(s.wallMs.ours)} ms (CLI from dist/)`,
        baseline: `${formatNumber(s.wallMs.minimal)} ms (minimal, plain node); node -e 0 ${formatNumber(s.wallMs.node)} ms`,
        ratio: s.wallRatio,
        goal: `<= ${GOALS.steady.toFixed(2)}`,
        met: s.wallRatio <= GOALS.steady,
      });
      rows.push({
        benchmark: `${head}: CPU`,
        ours: `${formatNumber(s.cpuMs.ours)} ms`,
        baseline: `${formatNumber(s.cpuMs.minimal)} ms (minimal); node -e 0 ${formatNumber(s.cpuMs.node)} ms`,
        ratio: s.cpuRatio,
        goal: `<= ${GOALS.steady.toFixed(2)}`,
        met: s.cpuRatio <= GOALS.steady,
      });
    }
  }
  if (r.server.rows > 0) {
    rows.push({
      benchmark: 'Replay server: its own CPU per million rows served',
      ours: `${r.server.perMillion.toFixed(3)} s`,
      baseline: `${formatNumber(r.server.rows)} rows served in all runs`,
      goal: 'n/a (~0.1 s: not a bottleneck)',
      met: undefined,
    });
  }
  return rows;
}
