import { describe, expect, it } from 'vitest';
import { compileRecord } from '../../src/sync/records.ts';
import { occupancy } from '../../jobs/occupancy.ts';
import { buildings } from '../../jobs/buildings.ts';

const validate = compileRecord(occupancy.record);
const good = { id: 'o1', floorSpaceId: 'f1', occupancyStatus: 'CurrentlyOccupied', headcount: 3, created: '2026-01-08T10:00:00.000Z' };

describe('occupancy records are checked against their declared types, never coerced', () => {
  it('maps a valid node onto the sink row, canonicalising the timestamp', () => {
    expect(validate(good)).toEqual({
      ok: true,
      record: { floorSpaceId: 'f1', observedAt: '2026-01-08T10:00:00.000Z', occupancyStatus: 'CurrentlyOccupied', headcount: 3, eventId: 'o1' },
    });
    expect(validate({ ...good, created: '2026-01-08T12:00:00+02:00' })).toMatchObject({ ok: true, record: { observedAt: '2026-01-08T10:00:00.000Z' } });
    // The observation id is optional: a missing or null id is stored as NULL, not as "null".
    expect(validate({ ...good, id: null })).toMatchObject({ ok: true, record: { eventId: null } });
  });

  it.each([
    [{ headcount: null }, 'headcount: expected a whole number from 0 to 2,147,483,647, got null'],
    [{ headcount: -1 }, 'headcount: expected a whole number from 0 to 2,147,483,647, got number -1'],
    [{ headcount: 2.5 }, 'headcount: expected a whole number from 0 to 2,147,483,647, got number 2.5'],
    [{ headcount: '4' }, 'headcount: expected a whole number from 0 to 2,147,483,647, got the string "4"'],
    [{ headcount: 3_000_000_000 }, 'headcount: expected a whole number from 0 to 2,147,483,647, got number 3000000000'],
    [{ floorSpaceId: null }, 'floorSpaceId: expected a non-empty string id, got null'],
    [{ floorSpaceId: '' }, 'floorSpaceId: expected a non-empty string id, got the string ""'],
    [{ floorSpaceId: 42 }, 'floorSpaceId: expected a non-empty string id, got number 42'],
    [{ floorSpaceId: 'f\u0000' }, 'floorSpaceId: contains a NUL character'],
    [{ occupancyStatus: null }, 'occupancyStatus: expected a non-empty string, got null'],
    [{ occupancyStatus: '\ud800' }, 'occupancyStatus: contains a lone surrogate (not valid UTF-8)'],
    [{ created: 1767866400000 }, 'created: expected an ISO 8601 date-time with a zone (e.g. 2026-01-01T10:00:00Z), got number 1767866400000'],
    [{ created: '2026-01-08T10:00:00' }, 'created: expected an ISO 8601 date-time with a zone (e.g. 2026-01-01T10:00:00Z), got the string "2026-01-08T10:00:00"'],
    [{ created: '2026-02-30T10:00:00Z' }, 'created: expected an ISO 8601 date-time with a zone (e.g. 2026-01-01T10:00:00Z), got the string "2026-02-30T10:00:00Z"'],
    [{ created: undefined }, 'created: expected an ISO 8601 date-time with a zone (e.g. 2026-01-01T10:00:00Z), got nothing (the field is missing)'],
    [{ id: '' }, 'id: expected a non-empty string id, got the string ""'],
  ])('rejects %j with its reason', (patch, reason) => {
    expect(validate({ ...good, ...patch })).toEqual({ ok: false, reason });
  });

  it('rejects nodes that are not objects', () => {
    expect(validate(null)).toEqual({ ok: false, reason: 'expected an object, got null' });
    expect(validate([good])).toEqual({ ok: false, reason: 'expected an object, got an array' });
  });

  it('building names may be empty strings but not missing', () => {
    const building = compileRecord(buildings.record);
    expect(building({ id: 'b1', name: '' })).toEqual({ ok: true, record: { id: 'b1', name: '' } });
    expect(building({ id: 'b1', name: null })).toEqual({ ok: false, reason: 'name: expected a string, got null' });
  });

  it('reads nested paths', () => {
    const nested = compileRecord({ a: { path: 'x.y', type: 'count' } });
    expect(nested({ x: { y: 2 } })).toEqual({ ok: true, record: { a: 2 } });
    expect(nested({ x: null })).toEqual({ ok: false, reason: 'x.y: expected a whole number from 0 to 2,147,483,647, got nothing (the field is missing)' });
  });
});
