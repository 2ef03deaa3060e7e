import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { CANONICAL_FAST, canonicalIso, parseIsoInstant, toIsoUtc } from '../src/time.ts';

describe('parseIsoInstant', () => {
  it('reads ISO 8601 date-times with a zone, cutting fractions beyond milliseconds', () => {
    expect(parseIsoInstant('2026-01-08T10:00:00Z')).toBe(Date.UTC(2026, 0, 8, 10));
    expect(parseIsoInstant('2026-01-08T12:00:00.000+02:00')).toBe(Date.UTC(2026, 0, 8, 10));
    expect(parseIsoInstant('2026-01-08T12:00+0200')).toBe(Date.UTC(2026, 0, 8, 10));
    expect(parseIsoInstant('2026-01-08T10:00:00.1239999Z')).toBe(Date.UTC(2026, 0, 8, 10, 0, 0, 123));
    expect(parseIsoInstant('2024-02-29T00:00:00Z')).toBe(Date.UTC(2024, 1, 29));
  });

  it.each([
    ['2026-02-30T00:00:00Z', 'a day February does not have (Date.parse rolls it into March)'],
    ['2026-02-29T00:00:00Z', '29 February of a common year'],
    ['2026-04-31T00:00:00.000Z', '31 April'],
    ['2026-13-01T00:00:00Z', 'month 13'],
    ['2026-01-01T24:00:00Z', 'hour 24'],
    ['2026-01-01T10:60:00Z', 'minute 60'],
    ['2026-01-01T10:00:00+25:00', 'an offset of 25 hours'],
    ['2026-01-01T10:00:00', 'no zone (local time would be a guess)'],
    ['2026-01-01', 'a date without a time'],
    ['1767261600000', 'epoch milliseconds as text'],
    [' 2026-01-01T10:00:00Z', 'leading space'],
  ])('refuses %s: %s', (text) => {
    expect(parseIsoInstant(text)).toBeUndefined();
    expect(canonicalIso(text)).toBeUndefined();
  });

  it('agrees with Date for every valid instant, in canonical form and with offsets', () => {
    fc.assert(
      fc.property(fc.integer({ min: Date.UTC(1970, 0, 1), max: Date.UTC(2100, 0, 1) }), fc.integer({ min: -14 * 60, max: 14 * 60 }), (ms, offsetMin) => {
        const canonical = toIsoUtc(ms);
        expect(canonicalIso(canonical)).toBe(canonical);
        const local = new Date(ms + offsetMin * 60_000).toISOString().slice(0, 23);
        const sign = offsetMin < 0 ? '-' : '+';
        const abs = Math.abs(offsetMin);
        const zone = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
        expect(parseIsoInstant(`${local}${zone}`)).toBe(ms);
      }),
    );
  });

  it('the fast path only matches what the strict path would return unchanged', () => {
    fc.assert(
      fc.property(fc.integer({ min: Date.UTC(1970, 0, 1), max: Date.UTC(2100, 0, 1) }), (ms) => {
        const canonical = toIsoUtc(ms);
        if (CANONICAL_FAST.test(canonical)) expect(parseIsoInstant(canonical)).toBe(ms);
      }),
    );
  });
});
