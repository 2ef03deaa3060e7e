import { describe, expect, it } from 'vitest';
import { changes, selectFloorSpaces } from '../../src/report/select.ts';
import type { FloorSpaceSummary, HourlyPoint } from '../../src/report/types.ts';

const range = { from: '2026-01-05T00:00:00.000Z', to: '2026-01-05T04:00:00.000Z' };

function row(id: string, avgHeadcount: number, occupiedShare = 0.5): FloorSpaceSummary {
  return {
    customerId: 'c',
    customerName: null,
    floorSpaceId: id,
    readings: 4,
    occupiedReadings: 2,
    occupiedShare,
    avgHeadcount,
    peakHeadcount: 9,
    firstHour: range.from,
    lastHour: range.from,
    latestObservedAt: null,
    latestStatus: null,
    latestHeadcount: null,
  };
}

function point(id: string, hour: number, totalHeadcount: number, readings = 1): HourlyPoint {
  return {
    customerId: 'c',
    floorSpaceId: id,
    hour: new Date(Date.parse(range.from) + hour * 3_600_000).toISOString(),
    readings,
    occupiedReadings: 0,
    totalHeadcount,
    avgHeadcount: totalHeadcount / readings,
    peakHeadcount: totalHeadcount,
    occupiedShare: 0,
  };
}

const ids = (s: { chosen: FloorSpaceSummary[] }) => s.chosen.map((r) => r.floorSpaceId);

describe('which floor spaces a chart draws', () => {
  const rows = [row('a', 1), row('b', 5), row('c', 3), row('d', 5, 0.9), row('e', 0)];

  it('busiest and emptiest by average headcount, ties by occupied share, then by id: never by name alone', () => {
    expect(ids(selectFloorSpaces(rows, [], range, 'busiest', 3))).toEqual(['d', 'b', 'c']);
    expect(ids(selectFloorSpaces(rows, [], range, 'emptiest', 3))).toEqual(['e', 'a', 'c']);
    const tied = ['z', 'y', 'x'].map((id) => row(id, 2));
    expect(ids(selectFloorSpaces(tied, [], range, 'busiest', 2))).toEqual(['x', 'y']);
  });

  it('change: the biggest move of average headcount between the halves of the range, either way', () => {
    const hourly = [
      point('a', 0, 1), point('a', 3, 1), // flat
      point('b', 0, 10), point('b', 3, 2), // -8
      point('c', 0, 0), point('c', 1, 0), point('c', 2, 9, 3), point('c', 3, 0, 1), // 0 -> 9/4
      point('d', 1, 5), point('d', 2, 5),
    ];
    expect(Object.fromEntries(changes(hourly, range))).toEqual({ 'c\u0000a': 0, 'c\u0000b': -8, 'c\u0000c': 2.25, 'c\u0000d': 0 });
    expect(ids(selectFloorSpaces(rows, hourly, range, 'change', 2))).toEqual(['b', 'c']);
  });

  it('describes the choice for the page', () => {
    expect(selectFloorSpaces(rows, [], range, 'busiest', 3).description).toBe('the 3 busiest of 5 floor spaces by average headcount');
    expect(selectFloorSpaces(rows, [], range, 'emptiest', 2).description).toBe('the 2 emptiest of 5 floor spaces by average headcount');
    expect(selectFloorSpaces(rows, [], range, 'change', 1).description).toBe(
      'the 1 of 5 floor spaces with the biggest change in average headcount between the first and the second half of the range',
    );
    expect(selectFloorSpaces(rows, [], range, 'busiest', 10).description).toBe('all 5 floor spaces');
    expect(selectFloorSpaces([rows[0]!], [], range, 'busiest', 10).description).toBe('the only floor space');
  });
});
