import { describe, expect, it } from 'vitest';
import { expectPositive, smoke } from './smoke-harness.ts';

// Keeps the portfolio benchmark (bench/portfolio.ts) working: a tiny portfolio (2 buildings x 4 floor spaces x 8 days
// of hourly readings, SQLite) loaded in two stages through the sync, its report asks timed, its bytes and the cost of
// the aggregates measured. It asserts that every figure is produced and what was loaded, never how fast anything is.
describe('benchmark harness (--smoke): portfolio', () => {
  it('loads the portfolio in two stages and produces each figure', { timeout: 120_000 }, async () => {
    const { stdout, figures } = await smoke('portfolio');
    for (const row of ['building-month report, warm', 'building-month report, cold', 'portfolio report, warm', 'bytes per reading, aggregates included', 'Sync into SQLite with the aggregates kept vs without']) {
      expect(stdout).toContain(row);
    }
    const p = figures.portfolio!;
    expect(Object.keys(p.dialects)).toEqual(['sqlite']);
    const d = p.dialects.sqlite!;
    expect(d.spaces).toBe(8);
    // Hourly sensors: a reading per floor space and hour; the quarter is the first 2 of the 8 days.
    expect([d.quarter.days, d.quarter.readings]).toEqual([2, 8 * 24 * 2]);
    expect([d.full.days, d.full.readings]).toEqual([8, 8 * 24 * 8]);
    for (const stage of [d.quarter, d.full]) {
      const where = `${stage.days} days`;
      // Every hour of every space holds data: at least one bucket per reading (working edges and holds add some).
      expect(stage.buckets, where).toBeGreaterThanOrEqual(stage.readings);
      expectPositive(stage.bytes.perReading, `${where} bytes per reading`);
      expectPositive(stage.aggregateBytesPerReading, `${where} aggregate bytes per reading`);
      expectPositive(stage.load.ms, `${where} load`);
      expect(stage.reports.map((r) => r.name).filter((n) => n !== 'floor-week'), where).toEqual(['building-month', 'portfolio']);
      for (const r of stage.reports) {
        expect(r.rows, `${where} ${r.name} rows`).toBeGreaterThan(0);
        expectPositive(r.coldMs, `${where} ${r.name} cold`);
        expectPositive(r.warmMs, `${where} ${r.name} warm`);
        expect(r.cold, `${where} ${r.name}`).toBe('connection');
      }
    }
    const cost = p.cost.sqlite!;
    expect(cost.with.every((r) => r.rows === cost.readings) && cost.without.every((r) => r.rows === cost.readings)).toBe(true);
    expectPositive(cost.withRate, 'with the aggregates');
    expectPositive(cost.withoutRate, 'without the aggregates');
  });
});
