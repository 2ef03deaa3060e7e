import type { Dialect } from '../test/support/databases.ts';
import type { DialectPortfolio, PortfolioFigures } from './portfolio.ts';
import type { ReportName } from './portfolio-reports.ts';
import { formatNumber } from './stats.ts';
import type { Row } from './table.ts';

/**
 * The portfolio benchmark's rows. Each report row shows the full size beside the quarter (ratio: full / quarter),
 * with the goals: on Postgres a building-month under 1 s and the portfolio under 5 s warm; everywhere, growth
 * at most linear in the range asked (x1 for the building-month and floor-week, whose range is the same at both sizes
 * while the data stored grows x4; x4 for the portfolio, whose range is the period), with 25 % for noise.
 */

const WARM_GOAL_MS: Partial<Record<ReportName, number>> = { 'building-month': 1000, portfolio: 5000 };
const NOISE = 1.25;
const NAMES: Record<Dialect, string> = { sqlite: 'SQLite', postgres: 'Postgres' };

const ms = (v: number) => `${formatNumber(v, v < 10 ? 1 : 0)} ms`;

function sizeLabel(d: DialectPortfolio): string {
  return `${formatNumber(d.spaces)} spaces x ${d.size.days} days`;
}

function reportRows(dialect: Dialect, d: DialectPortfolio): Row[] {
  const rows: Row[] = [];
  const rangeGrowth = d.full.days / d.quarter.days;
  for (const full of d.full.reports) {
    const quarter = d.quarter.reports.find((r) => r.name === full.name);
    const grows = full.name === 'portfolio' ? rangeGrowth : 1;
    for (const cache of ['warm', 'cold'] as const) {
      const f = cache === 'warm' ? full.warmMs : full.coldMs;
      const q = quarter ? (cache === 'warm' ? quarter.warmMs : quarter.coldMs) : undefined;
      const target = cache === 'warm' && dialect === 'postgres' ? WARM_GOAL_MS[full.name] : undefined;
      const growth = q === undefined ? undefined : f / q;
      const growthMet = growth === undefined ? undefined : growth <= grows * NOISE;
      const goals = [target !== undefined && `< ${formatNumber(target)} ms`, `growth <= ${formatNumber(grows * NOISE, 2)} (range x${formatNumber(grows, 0)})`].filter(Boolean).join(', ');
      const coldHow = cache === 'cold' ? (full.cold === 'restart' ? ', Postgres restarted' : ', fresh connection') : '';
      // A cancelled ask (Postgres, a statement past the timeout) took at least this long: a lower bound.
      const cancelled = full.timedOut && (cache === 'warm' || full.warmSamples.length === 0 || full.coldMs >= full.warmMs) ? ' or more (cancelled)' : '';
      rows.push({
        benchmark: `Portfolio on ${NAMES[dialect]}, ${sizeLabel(d)}: ${full.name} report, ${cache}${coldHow} (${full.label}; ${full.statements} statement(s) over the ${full.source === 'views' ? 'views' : 'buckets'}, ${formatNumber(full.rows)} rows)`,
        ours: `${ms(f)}${cancelled}`,
        baseline: q === undefined ? '-' : `${ms(q)} at a quarter (${d.quarter.days} days)`,
        ...(growth !== undefined && { ratio: growth }),
        goal: goals,
        met: growthMet === undefined && target === undefined ? undefined : (target === undefined || f < target) && growthMet !== false,
      });
    }
  }
  return rows;
}

export function portfolioRows(figures: PortfolioFigures): Row[] {
  const rows: Row[] = [];
  for (const dialect of ['postgres', 'sqlite'] as const) {
    const d = figures.dialects[dialect];
    if (d) {
      rows.push(...reportRows(dialect, d));
      const aggregates = (s: typeof d.full) => `${formatNumber(s.bytes.perReading, 1)} B (aggregates ${formatNumber(s.aggregateBytesPerReading, 1)} B, ${formatNumber(s.buckets)} buckets)`;
      rows.push({
        benchmark: `Portfolio on ${NAMES[dialect]}, ${sizeLabel(d)}: bytes per reading, aggregates included (hourly sensors: one bucket per reading)`,
        ours: aggregates(d.full),
        baseline: `${aggregates(d.quarter)} at a quarter`,
        ratio: d.full.bytes.perReading / d.quarter.bytes.perReading,
        goal: 'n/a',
        met: undefined,
      });
      const rate = (s: typeof d.full, readings: number) => `${formatNumber((readings / s.load.ms) * 1000)} readings/s`;
      rows.push({
        benchmark: `Portfolio on ${NAMES[dialect]}, ${sizeLabel(d)}: backfill with the aggregates kept, the last ${d.full.days - d.quarter.days} days onto the first ${d.quarter.days}`,
        ours: rate(d.full, d.full.readings - d.quarter.readings),
        baseline: `${rate(d.quarter, d.quarter.readings)} (the first ${d.quarter.days} days, into an empty database)`,
        goal: 'n/a',
        met: undefined,
      });
    }
    const c = figures.cost[dialect];
    if (c) {
      rows.push({
        benchmark: `Sync into ${NAMES[dialect]} with the aggregates kept vs without, ${formatNumber(c.readings)} readings of 5-minute sensors, default settings`,
        ours: `${formatNumber(c.withRate)} readings/s`,
        baseline: `${formatNumber(c.withoutRate)} readings/s without (costs ${formatNumber(c.cost * 100, 0)} %)`,
        ratio: c.withRate / c.withoutRate,
        goal: '>= 0.85 (costs <= 15 %)',
        met: c.withRate / c.withoutRate >= 0.85,
      });
    }
  }
  return rows;
}

export function portfolioHeader(mode: string, machine: string, f: PortfolioFigures): string {
  const sizes = (['postgres', 'sqlite'] as const)
    .flatMap((d) => (f.plan.sizes[d] && f.dialects[d] ? [`${NAMES[d]} ${f.plan.sizes[d]!.buildings} buildings x ${f.plan.sizes[d]!.spacesPerBuilding} floor spaces x ${f.plan.sizes[d]!.days} days`] : []))
    .join(', ');
  return (
    `Mode \`${mode}\`, ${machine}. ${sizes} of hourly readings, loaded by backfill with the aggregates ${f.plan.aggregates}; ` +
    `a quarter: the first quarter of the days, measured before the rest is loaded. Warm: median of ${f.plan.warmRuns}; cold: the first run on a fresh connection` +
    `${f.plan.restart ? ', after a Postgres restart when no other client was connected (the OS page cache stays warm)' : ' (the OS page cache stays warm)'}. ` +
    `Ratio: full / quarter. The cost of the aggregates: median of ${f.plan.cost.runs} run(s) each side, fresh databases.`
  );
}
