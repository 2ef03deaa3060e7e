import { describe, expect, it } from 'vitest';
import { CSV_COLUMNS, formatCsv, formatJson, formatTable } from '../../src/report/format.ts';
import { parseTimeArg, resolveRange } from '../../src/report/range.ts';
import { totalOf, type FloorSpaceSummary, type ReportData } from '../../src/report/types.ts';
import { UsageError } from '../../src/errors.ts';

const rows: FloorSpaceSummary[] = [
  {
    customerId: 'c1',
    customerName: 'Head office',
    floorSpaceId: 'fs-a',
    readings: 3,
    occupiedReadings: 2,
    occupiedShare: 2 / 3,
    avgHeadcount: 7 / 3,
    peakHeadcount: 4,
    firstHour: '2026-01-05T09:00:00.000Z',
    lastHour: '2026-01-05T10:00:00.000Z',
    latestObservedAt: '2026-01-05T10:15:00.000Z',
    latestStatus: 'CurrentlyOccupied',
    latestHeadcount: 4,
  },
  {
    customerId: 'c1',
    customerName: 'Head office',
    floorSpaceId: 'fs,"b"',
    readings: 1,
    occupiedReadings: 0,
    occupiedShare: 0,
    avgHeadcount: 0,
    peakHeadcount: 0,
    firstHour: '2026-01-05T23:00:00.000Z',
    lastHour: '2026-01-05T23:00:00.000Z',
    latestObservedAt: null,
    latestStatus: null,
    latestHeadcount: null,
  },
];

const data: ReportData = {
  range: { from: '2026-01-05T00:00:00.000Z', to: '2026-01-06T00:00:00.000Z' },
  customerId: null,
  generatedAt: '2026-01-06T01:00:00.000Z',
  timeZone: 'UTC',
  floorSpaces: rows,
  total: totalOf(rows),
  hourly: [],
};

describe('report formats', () => {
  it('writes RFC 4180 CSV: header, CRLF, quoted fields with doubled quotes, empty for missing values, a total row', () => {
    expect(formatCsv(data)).toBe(
      'row_type,customer_id,customer_name,floor_space_id,readings,occupied_readings,occupied_share,avg_headcount,peak_headcount,first_hour,last_hour,latest_observed_at,latest_status,latest_headcount\r\n' +
        'floor_space,c1,Head office,fs-a,3,2,0.6667,2.3333,4,2026-01-05T09:00:00.000Z,2026-01-05T10:00:00.000Z,2026-01-05T10:15:00.000Z,CurrentlyOccupied,4\r\n' +
        'floor_space,c1,Head office,"fs,""b""",1,0,0,0,0,2026-01-05T23:00:00.000Z,2026-01-05T23:00:00.000Z,,,\r\n' +
        'total,,,2 floor spaces,4,2,0.5,1.75,4,,,,,\r\n',
    );
  });

  it('writes JSON with the range, the zone, the total and rounded figures', () => {
    expect(JSON.parse(formatJson(data))).toEqual({
      range: { from: '2026-01-05T00:00:00.000Z', to: '2026-01-06T00:00:00.000Z' },
      customerId: null,
      generatedAt: '2026-01-06T01:00:00.000Z',
      timeZone: 'UTC',
      total: { floorSpaces: 2, readings: 4, occupiedReadings: 2, occupiedShare: 0.5, avgHeadcount: 1.75, peakHeadcount: 4 },
      floorSpaces: [{ ...rows[0], occupiedShare: 0.6667, avgHeadcount: 2.3333 }, { ...rows[1] }],
    });
    expect(formatJson(data).endsWith('}\n')).toBe(true);
    expect(formatJson(data)).not.toContain('building');
  });

  it('aligns the table: text left, numbers right, the range and zone in the heading, a total line', () => {
    expect(formatTable(data)).toBe(
      [
        'Occupancy per floor space, 2026-01-05 00:00Z to 2026-01-06 00:00Z (hours in UTC)',
        'CUSTOMER          FLOOR SPACE       READINGS  OCCUPIED   AVG  PEAK  LATEST',
        'Head office (c1)  fs-a                     3     66.7%  2.33     4  CurrentlyOccupied 4 @ 2026-01-05 10:15Z',
        'Head office (c1)  fs,"b"                   1      0.0%  0.00     0  -',
        '----------------  ----------------  --------  --------  ----  ----  ---------------------------------------',
        'all               2 floor space(s)         4     50.0%  1.75     4',
        '',
      ].join('\n'),
    );
  });

  it('shows hours in the zone asked for, and says which', () => {
    const berlin = formatTable({ ...data, timeZone: 'Europe/Berlin' });
    expect(berlin.split('\n')[0]).toBe('Occupancy per floor space, 2026-01-05 01:00 to 2026-01-06 01:00 (hours in Europe/Berlin)');
    expect(berlin).toContain('CurrentlyOccupied 4 @ 2026-01-05 11:15');
    // CSV and JSON stay in UTC whatever the zone: programs read them.
    expect(formatCsv({ ...data, timeZone: 'Europe/Berlin' })).toBe(formatCsv(data));
  });

  it('names a customer without a configured name by its id', () => {
    const unnamed = rows.map((r) => ({ ...r, customerName: null }));
    const table = formatTable({ ...data, customerId: 'c1', floorSpaces: unnamed, total: totalOf(unnamed) });
    expect(table.split('\n')[0]).toMatch(/, customer c1$/);
    expect(table.split('\n')[2]).toMatch(/^c1  +fs-a/);
    expect(formatCsv({ ...data, floorSpaces: unnamed }).split('\r\n')[1]).toMatch(/^floor_space,c1,,fs-a,/);
  });

  it('says so when the range holds no readings', () => {
    expect(formatTable({ ...data, customerId: 'c9', floorSpaces: [], total: totalOf([]) })).toBe(
      'Occupancy per floor space, 2026-01-05 00:00Z to 2026-01-06 00:00Z (hours in UTC), customer c9\nNo readings in this range.\n',
    );
    expect(formatCsv({ ...data, floorSpaces: [], total: totalOf([]) }).split('\r\n')).toEqual([CSV_COLUMNS.join(','), '']);
  });
});

describe('report range', () => {
  const now = Date.UTC(2026, 0, 10, 12, 30);

  it('accepts dates (midnight), date-times with or without offset, now and times before now', () => {
    expect(parseTimeArg('--from', '2026-01-05', now)).toBe(Date.UTC(2026, 0, 5));
    expect(parseTimeArg('--from', '2026-01-05T08:00', now)).toBe(Date.UTC(2026, 0, 5, 8));
    expect(parseTimeArg('--from', '2026-01-05T08:00:00+02:00', now)).toBe(Date.UTC(2026, 0, 5, 6));
    expect(parseTimeArg('--to', 'now', now)).toBe(now);
    // Times before now are whole hours, like every other command's.
    expect(parseTimeArg('--from', '36h', now)).toBe(Date.UTC(2026, 0, 9, 0));
  });

  it('reads a date or a time without an offset on the wall clock of --tz', () => {
    expect(parseTimeArg('--from', '2026-01-05', now, 'Europe/Berlin')).toBe(Date.UTC(2026, 0, 4, 23));
    expect(parseTimeArg('--from', '2026-07-05T08:00', now, 'Europe/Berlin')).toBe(Date.UTC(2026, 6, 5, 6));
    expect(parseTimeArg('--from', '2026-01-05', now, 'Asia/Kolkata')).toBe(Date.UTC(2026, 0, 4, 18, 30));
    expect(parseTimeArg('--from', '2026-01-05', now, 'America/New_York')).toBe(Date.UTC(2026, 0, 5, 5));
    // An offset in the value wins over --tz.
    expect(parseTimeArg('--from', '2026-01-05T08:00Z', now, 'Europe/Berlin')).toBe(Date.UTC(2026, 0, 5, 8));
    // 02:30 does not exist in Berlin on 29 March 2026 (clocks jump from 02:00 to 03:00): it lands after the gap.
    expect(parseTimeArg('--from', '2026-03-29T02:30', now, 'Europe/Berlin')).toBe(Date.UTC(2026, 2, 29, 1, 30));
    // 02:30 happens twice on 25 October 2026: the first one.
    expect(parseTimeArg('--from', '2026-10-25T02:30', now, 'Europe/Berlin')).toBe(Date.UTC(2026, 9, 25, 0, 30));
  });

  it('defaults to the 7 days before --to', () => {
    expect(resolveRange({}, now)).toEqual({ from: '2026-01-03T12:30:00.000Z', to: '2026-01-10T12:30:00.000Z' });
    expect(resolveRange({ to: '2026-01-08' }, now)).toEqual({ from: '2026-01-01T00:00:00.000Z', to: '2026-01-08T00:00:00.000Z' });
  });

  it('refuses what is not a time, a date that does not exist and an empty range: usage errors naming flag, value and fix', () => {
    expect(() => parseTimeArg('--from', 'yesterday', now)).toThrow(UsageError);
    expect(() => parseTimeArg('--from', 'yesterday', now)).toThrow(/^--from "yesterday": not an ISO 8601 date .*Fix: use e\.g\. 2026-01-01/);
    expect(() => parseTimeArg('--to', '2026', now)).toThrow(/--to "2026"/);
    expect(() => parseTimeArg('--from', '2026-02-31', now)).toThrow('--from "2026-02-31": no such date. Fix: use a date that exists, e.g. 2026-01-05 or 2026-01-05T08:00');
    expect(() => parseTimeArg('--from', '2026-02-31', now, 'Europe/Berlin')).toThrow(/no such date/);
    expect(() => parseTimeArg('--from', '2026-01-05T24:00', now)).toThrow(/"2026-01-05T24:00": no such date or time/);
    expect(() => parseTimeArg('--from', '2026-02-29T08:00Z', now)).toThrow(/no such date or time/);
    expect(() => resolveRange({ from: '2026-01-08', to: '2026-01-08' }, now)).toThrow(UsageError);
    expect(() => resolveRange({ from: '2026-01-08', to: '2026-01-08' }, now)).toThrow(/--from 2026-01-08T00:00:00.000Z is not before --to/);
  });
});
