import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.ts';
import { addSums, figures, lowCoverage, NO_SUMS } from '../../src/report/figures.ts';
import { CSV_COLUMNS, fixed, formatCsv, formatJson, formatTable, percent, reportLines, round4 } from '../../src/report/format.ts';
import { parseDateArg, resolveRange } from '../../src/report/range.ts';
import type { ReportData } from '../../src/report/types.ts';
import { syntheticReport } from './synthetic.ts';

const HOUR = 3_600_000;

describe('report figures', () => {
  it('are ratios of sums, never averages of ratios; unknown (null) where nothing is known', () => {
    // A full meeting room (1 hour of 1) and a half-known desk (0 of 0.5 hour): 1 / 1.5, not the mean of 100 % and 0 %.
    const room = { ...NO_SUMS, periodMs: HOUR, knownMs: HOUR, occupiedMs: HOUR, headcountMs: 4 * HOUR, headcountKnownMs: HOUR, capacityMs: 8 * HOUR, capacityHeadcountMs: 4 * HOUR, peakHeadcount: 4, peakUtilization: 0.5 };
    const desk = { ...NO_SUMS, periodMs: HOUR, knownMs: HOUR / 2 };
    const both = figures(addSums(room, desk));
    expect([both.coverage, both.timeUsed, both.avgHeadcount, both.utilization, both.peakHeadcount, both.peakUtilization]).toEqual([0.75, 2 / 3, 4, 0.5, 4, 0.5]);
    const silent = figures({ ...NO_SUMS, periodMs: HOUR });
    expect([silent.coverage, silent.timeUsed, silent.avgHeadcount, silent.utilization]).toEqual([0, null, null, null]);
    expect([lowCoverage(silent), lowCoverage(figures(NO_SUMS)), lowCoverage(both)]).toEqual([true, false, true]);
  });
});

describe('report formats', () => {
  const data = syntheticReport({ buildings: 2, floors: 2, spaces: 3 });

  it('lists building > floor > floor space, then the portfolio, in every format', () => {
    const kinds = reportLines(data).map((l) => `${'  '.repeat(l.depth)}${l.rowType}`);
    expect(kinds.slice(0, 9)).toEqual(['building', '  floor', '    floor_space', '    floor_space', '    floor_space', '  floor', '    floor_space', '    floor_space', '    floor_space']);
    expect(kinds.at(-1)).toBe('portfolio');
    expect(formatCsv(data).trimEnd().split('\r\n')).toHaveLength(1 + 2 * (1 + 2 * (1 + 3)) + 1);
  });

  it('aligns the table: names indented by level, numbers right, low coverage flagged after the figure', () => {
    const lines = formatTable(data).split('\n');
    expect(lines[0]).toBe('Utilization in working hours, 2026-03-23 to 2026-03-30 (exclusive), each building in its own time zone');
    expect(lines[2]).toMatch(/^Harbour Hall \(Europe\/Berlin\)\s+89\.2% {2}\s+\d+\.\d%\s+\d\.\d\s+\d+\s+\d+\.\d%\s+\d+\.\d%$/);
    expect(lines[3]).toMatch(/^ {2}Floor 1\s/);
    expect(lines[4]).toMatch(/^ {4}Room 1\.01\s+desk\s+2\s+95\.0% {2}/);
    // Room 2.02 is measured 60 % of the time: flagged; Room x.03 has no capacity: no utilization.
    expect(lines.find((l) => l.startsWith('    Room 2.02'))).toMatch(/\s60\.0% !\s/);
    expect(lines.find((l) => l.startsWith('    Room 1.03'))).toMatch(/meeting_room\s+-\s+95\.0% {2}.*\s+-\s+-$/);
    // Columns line up: every COVERAGE figure ends in the same column.
    const end = lines[1]!.indexOf('COVERAGE') + 'COVERAGE'.length;
    for (const l of lines.slice(2).filter((x) => /%/.test(x) && !/^(COVERAGE|USED):/.test(x))) expect(l.slice(end - 2, end), l).toMatch(/^( !| {2})$/);
    expect(lines.at(-2)).toMatch(/^USED: time occupied \/ time measured/);
  });

  it('writes RFC 4180 CSV: quoted fields with doubled quotes, empty for unknown, seconds exact', () => {
    const odd: ReportData = structuredClone(data);
    odd.buildings[0]!.name = 'Harbour "Hall", east';
    const rows = formatCsv(odd).split('\r\n');
    expect(rows[0]).toBe(CSV_COLUMNS.join(','));
    expect(rows[1]).toMatch(/^building,cust-1,,b-0,"Harbour ""Hall"", east",Europe\/Berlin,,,,,,,,working,2026-03-23,2026-03-30,216000,192600,/);
    const noCapacity = formatCsv(data).split('\r\n').find((r) => r.includes(',fs-0-0-2,'))!.split(',');
    expect(noCapacity[CSV_COLUMNS.indexOf('capacity')]).toBe('');
    expect(noCapacity[CSV_COLUMNS.indexOf('utilization')]).toBe('');
    expect(rows.at(-1)).toBe('');
  });

  it('writes JSON with the range, the scope, the threshold and rounded figures, without the heat maps', () => {
    const json = JSON.parse(formatJson(data));
    expect(json).toMatchObject({ range: { from: '2026-03-23', to: '2026-03-30' }, scope: 'working', coverageThreshold: 0.8 });
    expect(json.buildings[0].profile).toBeUndefined();
    expect(json.buildings[0].floors[0].spaces[0]).toMatchObject({ floorSpaceId: 'fs-0-0-0', name: 'Room 1.01', capacity: 2, figures: { coverage: 0.95, lowCoverage: false } });
    expect(json.buildings[0].floors[1].spaces[1].figures.lowCoverage).toBe(true);
  });

  it('rounds each figure half away from zero at the digits it shows, in every format, as its decimal reads (docs/reporting.md, "The rounding rule")', () => {
    // 0.37625 is 3762.4999999999995 when multiplied by 10,000 in binary, and 37.65 % is 37.649999999999999 % as a product.
    expect([fixed(0.37625, 4), fixed(0.3765, 1, 2), fixed(2.25, 1), fixed(-0.00005, 4), fixed(1e-9, 4), fixed(2.5e-7, 6, 2), fixed(0, 1)]).toEqual(['0.3763', '37.7', '2.3', '-0.0001', '0.0000', '0.000025', '0.0']);
    expect([round4(0.37625), round4(null), percent(0.3765), percent(null)]).toEqual([0.3763, null, '37.7%', '-']);
    // A meeting room known for 8,000 s of which 3,010 s occupied: 0.37625 of its time used.
    const odd = syntheticReport({ buildings: 1, floors: 1, spaces: 1 });
    const space = odd.buildings[0]!.floors[0]!.spaces[0]!;
    space.figures = figures({ ...NO_SUMS, periodMs: 8_000_000, knownMs: 8_000_000, occupiedMs: 3_010_000, headcountMs: 2_250_000, headcountKnownMs: 1_000_000 });
    const row = formatCsv(odd).split('\r\n').find((r) => r.includes(`,${space.floorSpaceId},`))!.split(',');
    expect([row[CSV_COLUMNS.indexOf('time_used')], row[CSV_COLUMNS.indexOf('avg_headcount')]]).toEqual(['0.3763', '2.25']);
    expect(JSON.parse(formatJson(odd)).buildings[0].floors[0].spaces[0].figures.timeUsed).toBe(0.3763);
    expect(formatTable(odd).split('\n').find((l) => l.includes(space.name!))).toMatch(/\s37\.6%\s+2\.3\s/);
  });

  it('says so when nothing was measured on the dates', () => {
    const none: ReportData = { ...data, buildings: [], portfolios: [] };
    expect(formatTable(none)).toMatch(/\nNo time-weighted figures for these dates: .* Fix: run occupancy-sync sync/);
    expect(formatCsv(none)).toBe(`${CSV_COLUMNS.join(',')}\r\n`);
  });
});

describe('report dates', () => {
  const now = Date.parse('2026-03-30T00:30:00.000Z');

  it('takes dates, date-times (their date), today, now (as --to: today included) and times before now (their date in --tz)', () => {
    expect(parseDateArg('--from', '2026-03-23', now)).toBe('2026-03-23');
    expect(parseDateArg('--from', '2026-03-23T17:00', now)).toBe('2026-03-23');
    expect(parseDateArg('--to', 'today', now)).toBe('2026-03-30');
    // --to now: up to this instant, so today so far is in; --from now: today.
    expect(parseDateArg('--to', 'now', now)).toBe('2026-03-31');
    expect(parseDateArg('--from', 'now', now)).toBe('2026-03-30');
    expect(parseDateArg('--from', '7d', now)).toBe('2026-03-23');
    // 00:30 UTC is still the 29th in New York.
    expect(parseDateArg('--to', 'today', now, 'America/New_York')).toBe('2026-03-29');
    expect(parseDateArg('--from', '2026-03-23T23:30:00-05:00', now)).toBe('2026-03-24');
  });

  it('defaults to the 7 dates before --to, itself today', () => {
    expect(resolveRange({}, now)).toEqual({ from: '2026-03-23', to: '2026-03-30' });
    expect(resolveRange({ to: '2026-03-02' }, now)).toEqual({ from: '2026-02-23', to: '2026-03-02' });
  });

  it('refuses what is not a date, a date that does not exist and an empty range: usage errors naming flag, value and fix', () => {
    expect(() => parseDateArg('--from', 'last week', now)).toThrow(UsageError);
    expect(() => parseDateArg('--from', '2026-02-31', now)).toThrow(/--from "2026-02-31": no such date\. Fix: use a date that exists/);
    expect(() => resolveRange({ from: '2026-03-30', to: '2026-03-30' }, now)).toThrow(/--from 2026-03-30 is not before --to 2026-03-30 .*Fix: give a --from earlier than --to, e\.g\. --from 2026-03-23 --to 2026-03-30/);
  });
});
