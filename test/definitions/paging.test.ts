import { describe, expect, it } from 'vitest';
import { ContractViolation } from '../../src/errors.ts';
import { DEFAULT_LIMITS, flattenNested, offsetOf, readOffsetPage, WindowPaging } from '../../src/sync/contract.ts';
import { sinkKey } from '../../src/store/sinks.ts';
import { compileRecord } from '../../src/sync/records.ts';

/** Offset paging and nested records (declarative definitions) under the page contract of src/sync/contract.ts. */

const FROM = '2026-01-08T10:00:00.000Z';
const TO = '2026-01-08T11:00:00.000Z';
const reading = (i: number) => ({ id: `r${i}`, observedAt: `2026-01-08T10:${String(i % 60).padStart(2, '0')}:00.000Z`, status: 'Unoccupied', people: i });
/** buildings -> floor spaces -> readings, two floor spaces with the readings split between them. */
const answer = (readings: ReturnType<typeof reading>[]) => ({
  floorSpaceReadings: [
    {
      buildingId: 'b1',
      floorSpaces: [
        { floorSpaceId: 'f1', readings: readings.filter((_, i) => i % 2 === 0) },
        { floorSpaceId: 'f2', readings: readings.filter((_, i) => i % 2 === 1) },
      ],
    },
  ],
});
const EACH = [['floorSpaces'], ['readings']];
const record = compileRecord({
  floorSpaceId: { path: '$parent.floorSpaceId', type: 'id' },
  observedAt: { path: 'observedAt', type: 'timestamp' },
  occupancyStatus: { path: 'status', type: 'text' },
  headcount: { path: 'people', type: 'count' },
  eventId: { path: 'id', type: 'id', nullable: true },
});

function windowPaging() {
  return new WindowPaging({
    where: 'window [10:00, 11:00)',
    validate: record,
    keyFields: sinkKey('occupancy'),
    window: { from: FROM, to: TO, cursorField: 'observedAt', apiPath: 'observedAt' },
    startCursor: null,
    limits: DEFAULT_LIMITS,
  });
}

describe('nested records', () => {
  it('are flattened with their enclosing element, without the list they came from, under $parent', () => {
    const nodes = flattenNested(answer([reading(1), reading(2)]).floorSpaceReadings, EACH, 'data.floorSpaceReadings') as unknown[];
    expect(nodes).toEqual([
      { ...reading(1), $parent: { floorSpaceId: 'f1', $parent: { buildingId: 'b1' } } },
      { ...reading(2), $parent: { floorSpaceId: 'f2', $parent: { buildingId: 'b1' } } },
    ]);
    expect(record(nodes[0])).toMatchObject({ ok: true, record: { floorSpaceId: 'f1', headcount: 1 } });
  });

  it('a level that is not a list is a shape violation naming it', () => {
    expect(flattenNested([{ floorSpaces: null }], EACH, 'data.floorSpaceReadings')).toBe('data.floorSpaceReadings[].floorSpaces is null, expected a list');
    expect(flattenNested([7], EACH, 'data.floorSpaceReadings')).toBe('an element of data.floorSpaceReadings is the number 7, expected an object');
  });
});

describe('offset paging', () => {
  it('a full page asks for the next offset; a shorter one is the last', () => {
    const full = readOffsetPage(answer([reading(1), reading(2), reading(3)]), ['floorSpaceReadings'], EACH, 6, 3);
    expect(full).toMatchObject({ hasNextPage: true, endCursor: '9' });
    expect((full as { nodes: unknown[] }).nodes).toHaveLength(3);
    expect(readOffsetPage(answer([reading(1)]), ['floorSpaceReadings'], EACH, 9, 3)).toMatchObject({ hasNextPage: false, endCursor: null });
    expect(readOffsetPage(answer([]), ['floorSpaceReadings'], EACH, 0, 3)).toMatchObject({ nodes: [], hasNextPage: false });
  });

  it('a page longer than the limit is a shape violation (the limit counts another level?)', () => {
    expect(readOffsetPage(answer([reading(1), reading(2), reading(3)]), ['floorSpaceReadings'], EACH, 0, 2)).toBe(
      'a page of 3 records, more than the limit of 2 asked for (does the limit count another level?)',
    );
  });

  it('an API that ignores the offset cannot page forever: the same page three times fails the window (no-progress)', () => {
    const paging = windowPaging();
    const same = answer([reading(1), reading(2)]);
    let offset = 0;
    const next = () => {
      const page = paging.accept(readOffsetPage(same, ['floorSpaceReadings'], EACH, offset, 2));
      offset = Number(page.endCursor);
      return page;
    };
    expect(next().records).toHaveLength(2);
    next();
    next();
    expect(() => next()).toThrow(ContractViolation);
    expect(paging.pages).toBe(4);
  });

  it('a stored cursor that is not an offset is refused, not read as 0', () => {
    expect(offsetOf(null)).toBe(0);
    expect(offsetOf('1200')).toBe(1200);
    expect(() => offsetOf('MTcwMDAwMDAwMDAwMDpvMQ==')).toThrow(/is not an offset \(was the stream's paging changed mid-window\?\)/);
  });
});
