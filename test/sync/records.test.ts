import { describe, expect, it } from 'vitest';
import { compileRecord, PARTITION_PATH } from '../../src/sync/records.ts';
import { occupancy } from '../../jobs/occupancy.ts';
import { buildings } from '../../jobs/buildings.ts';
import { spawnTs } from '../support/process.ts';

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
    [{ created: 1767866400000 }, 'created: expected an ISO 8601 date-time with a zone (e.g. 2026-01-01T10:00:00Z), got number 1767866400000 (a number: declare format: epoch-milliseconds or epoch-seconds)'],
    [{ created: '2026-01-08T10:00:00' }, 'created: expected an ISO 8601 date-time with a zone (e.g. 2026-01-01T10:00:00Z), got the string "2026-01-08T10:00:00" (a time without a zone is ambiguous: the API must give Z or an offset)'],
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
    // A building without a time zone: stored NULL, never invented.
    expect(building({ id: 'b1', name: '' })).toEqual({ ok: true, record: { id: 'b1', name: '', timeZone: null } });
    expect(building({ id: 'b1', name: null })).toEqual({ ok: false, reason: 'name: expected a string, got null' });
  });

  it('reads nested paths', () => {
    const nested = compileRecord({ a: { path: 'x.y', type: 'count' } });
    expect(nested({ x: { y: 2 } })).toEqual({ ok: true, record: { a: 2 } });
    expect(nested({ x: null })).toEqual({ ok: false, reason: 'x.y: expected a whole number from 0 to 2,147,483,647, got nothing (the field is missing)' });
  });
});

describe('time formats and value maps: the API\'s forms, stored in one canonical form', () => {
  const spec = (observedAt: Record<string, unknown>, status: Record<string, unknown> = {}) =>
    compileRecord({
      floorSpaceId: { path: 'space', type: 'id' },
      observedAt: { path: 'at', type: 'timestamp', ...observedAt },
      occupancyStatus: { path: 'state', type: 'text', ...status },
      headcount: { path: 'n', type: 'count' },
      eventId: { path: 'id', type: 'id', nullable: true },
    } as never);
  const node = (at: unknown, state: unknown = 'CurrentlyOccupied') => ({ space: 'f1', at, state, n: 1, id: null });
  const at = (v: ReturnType<ReturnType<typeof spec>>) => (v.ok ? (v.record as { observedAt: string }).observedAt : v.reason);

  it('ISO 8601 with Z or any offset, epoch milliseconds and seconds as numbers or digits in a string', () => {
    expect(at(spec({})(node('2026-01-08T12:30:00.5+02:00')))).toBe('2026-01-08T10:30:00.500Z');
    expect(at(spec({ format: 'epoch-milliseconds' })(node(1767868200500)))).toBe('2026-01-08T10:30:00.500Z');
    expect(at(spec({ format: 'epoch-milliseconds' })(node('1767868200500')))).toBe('2026-01-08T10:30:00.500Z');
    expect(at(spec({ format: 'epoch-seconds' })(node(1767868200)))).toBe('2026-01-08T10:30:00.000Z');
    expect(at(spec({ format: 'epoch-seconds' })(node('1767868200.25')))).toBe('2026-01-08T10:30:00.250Z');
    expect(at(spec({ format: 'date' })(node('2026-01-08')))).toBe('2026-01-08T00:00:00.000Z');
  });

  it('nothing is guessed: the wrong unit, text that is not digits, a negative instant are refused with the fix', () => {
    expect(at(spec({ format: 'epoch-seconds' })(node(1767868200500)))).toBe('at: epoch-seconds 1767868200500 is after the year 9999 (it looks like epoch milliseconds: format: epoch-milliseconds)');
    expect(at(spec({ format: 'epoch-milliseconds' })(node('2026-01-08T10:30:00Z')))).toBe('at: expected epoch-milliseconds (a number, or digits in a string), got the string "2026-01-08T10:30:00Z"');
    expect(at(spec({ format: 'epoch-milliseconds' })(node(-5)))).toMatch(/^at: expected epoch-milliseconds/);
    expect(at(spec({ format: 'epoch-milliseconds' })(node(null)))).toMatch(/got null$/);
  });

  it('a value map stores the canonical value; a spelling not in it is refused, naming it and the map', () => {
    const mapped = spec({}, { map: { CURRENTLY_OCCUPIED: 'CurrentlyOccupied', NOT_OCCUPIED: 'Unoccupied', true: 'CurrentlyOccupied', false: 'Unoccupied' } });
    const state = (v: ReturnType<typeof mapped>) => (v.ok ? (v.record as { occupancyStatus: string }).occupancyStatus : v.reason);
    expect(state(mapped(node('2026-01-08T10:00:00Z', 'CURRENTLY_OCCUPIED')))).toBe('CurrentlyOccupied');
    expect(state(mapped(node('2026-01-08T10:00:00Z', 'NOT_OCCUPIED')))).toBe('Unoccupied');
    expect(state(mapped(node('2026-01-08T10:00:00Z', true)))).toBe('CurrentlyOccupied');
    expect(state(mapped(node('2026-01-08T10:00:00Z', 'occupied')))).toBe(
      'state: the string "occupied" is not in the field\'s map (CURRENTLY_OCCUPIED, NOT_OCCUPIED, true, false); add its spelling to the map in the definitions',
    );
    expect(state(mapped(node('2026-01-08T10:00:00Z', null)))).toMatch(/^state: null is not in the field's map/);
  });
});

describe('integer and timeZone: a floor\'s level below ground, a building\'s IANA zone', () => {
  // A sink's integer column (floors.level): the definitions loader narrows `integer` to the column's int4.
  const floor = compileRecord({ level: { path: 'level', type: 'integer', int4: true } });
  const zone = compileRecord({ timeZone: { path: 'tz', type: 'timeZone', nullable: true } });

  it('an integer takes negative whole numbers (a basement is level -1), within a Postgres integer on a sink\'s column', () => {
    expect(floor({ level: -1 })).toEqual({ ok: true, record: { level: -1 } });
    expect(floor({ level: -2147483648 })).toEqual({ ok: true, record: { level: -2147483648 } });
    expect(floor({ level: 2147483647 })).toEqual({ ok: true, record: { level: 2147483647 } });
    for (const bad of [-2147483649, 2147483648, 1.5, '3', null]) {
      expect(floor({ level: bad })).toEqual({ ok: false, reason: expect.stringMatching(/^level: expected a whole number from -2,147,483,648 to 2,147,483,647, got /) });
    }
  });

  it('a time zone is an IANA name Intl knows; an unknown one is one line naming the field, the value and the fix', () => {
    for (const name of ['Europe/London', 'Australia/Adelaide', 'Asia/Kolkata', 'America/New_York', 'UTC']) expect(zone({ tz: name })).toEqual({ ok: true, record: { timeZone: name } });
    expect(zone({ tz: null })).toEqual({ ok: true, record: { timeZone: null } });
    expect(zone({ tz: 'Mars/Olympus_Mons' })).toEqual({
      ok: false,
      reason: 'tz: expected an IANA time zone name (e.g. Europe/London, Asia/Kolkata), got the string "Mars/Olympus_Mons": map the platform\'s spellings to zone names (map: { ... }), or leave the column unmapped (stored NULL)',
    });
    // An offset knows no daylight saving time, and the store refuses it: refused here, not as a failed page.
    for (const bad of ['+05:30', '', 'Europe/London\u0000', 42]) expect(zone({ tz: bad })).toMatchObject({ ok: false });
  });

  it('a value map turns the platform\'s spellings into zone names, and the result is still checked', () => {
    const mapped = compileRecord({ timeZone: { path: 'tz', type: 'timeZone', map: { 'GMT Standard Time': 'Europe/London', Bad: 'Nowhere/Town' } } });
    expect(mapped({ tz: 'GMT Standard Time' })).toEqual({ ok: true, record: { timeZone: 'Europe/London' } });
    expect(mapped({ tz: 'Bad' })).toMatchObject({ ok: false, reason: expect.stringContaining('got the string "Nowhere/Town"') });
  });
});

describe('the generated validator answers as the loop it is generated from', () => {
  // Names that would break code written from them unescaped, or change the record's prototype if assigned.
  // Object.fromEntries defines each name as an own key: `__proto__` in an object literal would set the prototype.
  const odd = Object.fromEntries([
    ['__proto__', { path: '__proto__', type: 'count', nullable: true }],
    ['a"b\\c', { path: "x');throw 1;('", type: 'text' }],
    ['constructor', { path: 'constructor', type: 'string', nullable: true }],
    ['0', { path: '0', type: 'count', nullable: true }],
  ]);
  const specs: Array<[string, Parameters<typeof compileRecord>[0]]> = [
    ['occupancy', occupancy.record],
    ['buildings', buildings.record],
    ['nested, envelope and partition paths', { a: { path: 'x.y', type: 'count' }, at: { path: '$delivery.Created', type: 'timestamp' }, parent: { path: '$partition', type: 'id' }, n: { path: 'n', type: 'integer', nullable: true } }],
    ['odd names', odd],
  ];
  const nodes: unknown[] = [
    good, { ...good, headcount: null }, { ...good, created: '2026-01-08T12:00:00+02:00' }, { ...good, id: null }, { ...good, occupancyStatus: '\ud800' },
    { id: 'b1', name: '' }, { id: 'b1', name: null, timeZone: 'Europe/London' }, { id: 'b1', name: 'x', timeZone: 'Mars/Olympus_Mons' },
    { x: { y: 2 }, n: -1 }, { x: null }, { x: { y: 2 }, n: 1.5 }, { x: [2] },
    JSON.parse('{"__proto__": 3, "x\');throw 1;(\'": "t", "constructor": "c", "0": 1}'), JSON.parse('{"__proto__": {"polluted": 1}, "x\');throw 1;(\'": "t"}'), { "x');throw 1;('": '' },
    Object.create({ floorSpaceId: 'inherited' }), null, [good], 'text', 42, {},
  ];
  const contexts = [undefined, { Created: '2026-01-08T10:00:00Z', [PARTITION_PATH]: 'p1' }, { Created: 5 }];

  it('the odd names are the spec\'s own', () => expect(Object.keys(odd)).toEqual(['0', '__proto__', 'a"b\\c', 'constructor']));

  it.each(specs)('%s', (_, spec) => {
    const generated = compileRecord(spec);
    const loop = compileRecord(spec, 'loop');
    let accepted = 0;
    for (const node of nodes) {
      for (const context of contexts) {
        const a = generated(node, context);
        const b = loop(node, context);
        expect(a).toEqual(b);
        if (a.ok && b.ok) {
          accepted += 1;
          expect(Object.getPrototypeOf(a.record)).toBe(Object.prototype);
          expect(Object.getOwnPropertyNames(a.record)).toEqual(Object.getOwnPropertyNames(b.record));
          expect(Object.getOwnPropertyNames(a.record).sort()).toEqual(Object.keys(spec).sort());
        }
      }
    }
    expect(accepted).toBeGreaterThan(0);
  });

  it('where the runtime forbids code from strings, the loop validates', async () => {
    const child = spawnTs('test/sync/fixtures/records-child.ts', [], { nodeFlags: ['--disallow-code-generation-from-strings'] });
    expect(await child.exit(30_000)).toEqual({ code: 0, signal: null });
    expect(JSON.parse(child.stdout())).toEqual({
      generated: false,
      good: { ok: true, record: { floorSpaceId: 'f1', observedAt: '2026-01-08T10:00:00.000Z', occupancyStatus: 'CurrentlyOccupied', headcount: 3, eventId: 'o1' } },
      bad: { ok: false, reason: 'headcount: expected a whole number from 0 to 2,147,483,647, got number -1' },
    });
  });

  it('a column named __proto__ is an own field of the record, never its prototype', () => {
    const spec = JSON.parse('{"__proto__": {"path": "p", "type": "count"}}');
    for (const how of ['generated', 'loop'] as const) {
      const result = compileRecord(spec, how)({ p: 3 });
      expect(result).toMatchObject({ ok: true });
      const record = (result as { record: Record<string, unknown> }).record;
      expect(Object.getOwnPropertyDescriptor(record, '__proto__')?.value).toBe(3);
      expect(Object.getPrototypeOf(record)).toBe(Object.prototype);
    }
  });
});
