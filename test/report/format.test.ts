import { describe, expect, it } from 'vitest';
import { formatCsv, formatJson, formatTable } from '../../src/report/format.ts';
import { parseTimeArg, resolveRange } from '../../src/report/range.ts';
import type { ReportData } from '../../src/report/types.ts';
import { ConfigError } from '../../src/errors.ts';

const data: ReportData = {
  range: { from: '2026-01-05T00:00:00.000Z', to: '2026-01-06T00:00:00.000Z' },
  customerId: null,
  generatedAt: '2026-01-06T01:00:00.000Z',
  floorSpaces: [
    {
      customerId: 'c1',
      building: 'unknown',
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
      building: 'unknown',
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
  ],
  hourly: [],
};

describe('report formats', () => {
  it('writes RFC 4180 CSV: header, CRLF, quoted fields with doubled quotes, empty for missing values', () => {
    expect(formatCsv(data)).toBe(
      'customer_id,building,floor_space_id,readings,occupied_readings,occupied_share,avg_headcount,peak_headcount,first_hour,last_hour,latest_observed_at,latest_status,latest_headcount\r\n' +
        'c1,unknown,fs-a,3,2,0.6667,2.3333,4,2026-01-05T09:00:00.000Z,2026-01-05T10:00:00.000Z,2026-01-05T10:15:00.000Z,CurrentlyOccupied,4\r\n' +
        'c1,unknown,"fs,""b""",1,0,0,0,0,2026-01-05T23:00:00.000Z,2026-01-05T23:00:00.000Z,,,\r\n',
    );
  });

  it('writes JSON with the range and rounded figures', () => {
    expect(JSON.parse(formatJson(data))).toEqual({
      range: { from: '2026-01-05T00:00:00.000Z', to: '2026-01-06T00:00:00.000Z' },
      customerId: null,
      generatedAt: '2026-01-06T01:00:00.000Z',
      floorSpaces: [
        {
          customerId: 'c1',
          building: 'unknown',
          floorSpaceId: 'fs-a',
          readings: 3,
          occupiedReadings: 2,
          occupiedShare: 0.6667,
          avgHeadcount: 2.3333,
          peakHeadcount: 4,
          firstHour: '2026-01-05T09:00:00.000Z',
          lastHour: '2026-01-05T10:00:00.000Z',
          latestObservedAt: '2026-01-05T10:15:00.000Z',
          latestStatus: 'CurrentlyOccupied',
          latestHeadcount: 4,
        },
        {
          customerId: 'c1',
          building: 'unknown',
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
      ],
    });
    expect(formatJson(data).endsWith('}\n')).toBe(true);
  });

  it('aligns the table: text left, numbers right, with the range in the heading', () => {
    expect(formatTable(data)).toBe(
      [
        'Occupancy per floor space, 2026-01-05 00:00Z to 2026-01-06 00:00Z (UTC hours)',
        'CUSTOMER  BUILDING  FLOOR SPACE  READINGS  OCCUPIED   AVG  PEAK  LATEST',
        'c1        unknown   fs-a                3     66.7%  2.33     4  CurrentlyOccupied 4 @ 2026-01-05 10:15Z',
        'c1        unknown   fs,"b"              1      0.0%  0.00     0  -',
        '2 floor space(s), 4 reading(s). Building is "unknown": the platform does not say which building a floor space belongs to.',
        '',
      ].join('\n'),
    );
  });

  it('says so when the range holds no readings', () => {
    expect(formatTable({ ...data, customerId: 'c9', floorSpaces: [] })).toBe(
      'Occupancy per floor space, 2026-01-05 00:00Z to 2026-01-06 00:00Z (UTC hours), customer c9\nNo readings in this range.\n',
    );
    expect(formatCsv({ ...data, floorSpaces: [] }).split('\r\n')).toHaveLength(2);
  });
});

describe('report range', () => {
  const now = Date.UTC(2026, 0, 10, 12, 30);

  it('accepts dates (UTC midnight), date-times with or without offset, now and durations before now', () => {
    expect(parseTimeArg('--from', '2026-01-05', now)).toBe(Date.UTC(2026, 0, 5));
    expect(parseTimeArg('--from', '2026-01-05T08:00', now)).toBe(Date.UTC(2026, 0, 5, 8));
    expect(parseTimeArg('--from', '2026-01-05T08:00:00+02:00', now)).toBe(Date.UTC(2026, 0, 5, 6));
    expect(parseTimeArg('--to', 'now', now)).toBe(now);
    expect(parseTimeArg('--from', '36h', now)).toBe(now - 36 * 3_600_000);
  });

  it('defaults to the 7 days before --to', () => {
    expect(resolveRange({}, now)).toEqual({ from: '2026-01-03T12:30:00.000Z', to: '2026-01-10T12:30:00.000Z' });
    expect(resolveRange({ to: '2026-01-08' }, now)).toEqual({ from: '2026-01-01T00:00:00.000Z', to: '2026-01-08T00:00:00.000Z' });
  });

  it('refuses a value that is not a time, and a --from that is not before --to, naming the flag and the fix', () => {
    expect(() => parseTimeArg('--from', 'yesterday', now)).toThrow(ConfigError);
    expect(() => parseTimeArg('--from', 'yesterday', now)).toThrow(/--from "yesterday": not a time\. Fix: use an ISO date/);
    expect(() => parseTimeArg('--to', '2026', now)).toThrow(/--to "2026"/);
    expect(() => resolveRange({ from: '2026-01-08', to: '2026-01-08' }, now)).toThrow(/--from 2026-01-08T00:00:00.000Z is not before --to/);
  });
});
