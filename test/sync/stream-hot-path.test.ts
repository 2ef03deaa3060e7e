import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toIsoUtc } from '../../src/store/types.ts';
import { dedupeByKey } from '../../src/sync/fetch.ts';
import { apiTimestamp } from '../../src/sync/stream.ts';

describe('apiTimestamp', () => {
  it('returns canonical strings unchanged and agrees with toIsoUtc on every instant (property)', () => {
    const min = Date.parse('1970-01-01T00:00:00Z');
    const max = Date.parse('2100-01-01T00:00:00Z');
    fc.assert(
      fc.property(fc.integer({ min, max }), (ms) => {
        const canonical = new Date(ms).toISOString();
        expect(apiTimestamp(canonical)).toBe(canonical);
        expect(apiTimestamp(canonical)).toBe(toIsoUtc(canonical));
        expect(apiTimestamp(ms)).toBe(canonical);
      }),
      { numRuns: 2000 },
    );
  });

  it('still normalises other forms and refuses garbage, naming the field', () => {
    expect(apiTimestamp('2026-01-08T10:00:00Z')).toBe('2026-01-08T10:00:00.000Z');
    expect(apiTimestamp('2026-01-08T10:00:00.1234567')).toBe('2026-01-08T10:00:00.123Z');
    expect(apiTimestamp('2026-01-08T12:00:00.000+02:00')).toBe('2026-01-08T10:00:00.000Z');
    // Canonical-looking but not a real instant: the slow path decides, as before the fast path existed.
    expect(apiTimestamp('2026-02-30T00:00:00.000Z')).toBe(toIsoUtc('2026-02-30T00:00:00.000Z'));
    expect(() => apiTimestamp('2026-13-01T00:00:00.000Z', 'occupancy.nodes.created')).toThrow(/occupancy\.nodes\.created: not a valid timestamp/);
    expect(() => apiTimestamp('2026-01-08T25:00:00.000Z')).toThrow(TypeError);
    expect(() => apiTimestamp(null, 'x')).toThrow(/x: expected an ISO 8601 timestamp, got null/);
  });
});

describe('dedupeByKey', () => {
  it('collapses equal keys to the last row, keeping first-seen order of the others', () => {
    const rows = [
      { a: 'f1', t: '2026-01-08T00:00:00.000Z', v: 1 },
      { a: 'f2', t: '2026-01-08T00:00:00.000Z', v: 2 },
      { a: 'f1', t: '2026-01-08T00:00:00.000Z', v: 3 },
    ];
    expect(dedupeByKey(rows, ['a', 't'])).toEqual([rows[1], rows[2]]);
    const unique = rows.slice(0, 2);
    expect(dedupeByKey(unique, ['a', 't'])).toBe(unique); // no copy when nothing collapsed
  });

  it('never merges keys that differ: field boundaries and value types are kept apart', () => {
    const rows = [
      { a: 'ab', b: 'c' },
      { a: 'a', b: 'bc' },
      { a: 1, b: 'x' },
      { a: '1', b: 'x' },
      { a: null, b: 'x' },
      { a: 'null', b: 'x' },
      { a: undefined, b: 'x' },
    ];
    expect(dedupeByKey(rows, ['a', 'b'])).toHaveLength(rows.length);
  });
});
