import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { UsageError } from '../src/errors.ts';
import { CANONICAL_FAST, canonicalIso, parseInstant, parseIsoInstant, toIsoUtc } from '../src/time.ts';

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

describe('parseInstant (command-line times)', () => {
  const HOUR = 3_600_000;
  const now = Date.UTC(2026, 2, 3, 10, 42, 17, 5);

  it('reads now as the start of this hour, the same instant as 0h, so a flag means one instant all hour', () => {
    expect(parseInstant('--to', 'now', now)).toBe(Date.UTC(2026, 2, 3, 10));
    expect(parseInstant('--to', ' now ', now)).toBe(parseInstant('--to', '0h', now));
    expect(parseInstant('--to', 'now', Date.UTC(2026, 2, 3, 10, 59, 59, 999))).toBe(parseInstant('--to', 'now', Date.UTC(2026, 2, 3, 10)));
    expect(parseInstant('--to', 'now', Date.UTC(2026, 2, 3, 11))).toBe(Date.UTC(2026, 2, 3, 10) + HOUR);
  });

  it('reads dates, date-times with a zone and times ago', () => {
    expect(parseInstant('--from', '2026-01-05', now)).toBe(Date.UTC(2026, 0, 5));
    expect(parseInstant('--from', '2026-01-05T08:00+02:00', now)).toBe(Date.UTC(2026, 0, 5, 6));
    expect(parseInstant('--from', '36h', now)).toBe(Date.UTC(2026, 2, 1, 22));
    expect(parseInstant('--from', '7d', now)).toBe(Date.UTC(2026, 1, 24, 10));
    expect(parseInstant('--from', '1w', now)).toBe(parseInstant('--from', '7d', now));
    expect(parseInstant('--from', '2w', now)).toBe(Date.UTC(2026, 1, 17, 10));
  });

  it.each([
    ['Now', 'not an ISO 8601 date or date-time with a zone, a time ago such as 36h or 7d, nor now'],
    ['tomorrow', 'not an ISO 8601 date or date-time with a zone, a time ago such as 36h or 7d, nor now'],
    ['2026-02-30', 'no such date or time'],
    ['2026-01-05T08:00', 'a time needs a zone (add Z for UTC)'],
  ])('refuses %s as a usage error that names the forms, now among them', (text, problem) => {
    const error = (() => {
      try {
        parseInstant('--to', text, now);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toBe(
      `--to ${JSON.stringify(text)}: ${problem}. Fix: use e.g. 2026-01-01, 2026-01-01T06:00:00Z, 7d (seven days ago) or now`,
    );
  });

  it.each(['1900-01-01', '3000000d', '2200-01-01', '9999-12-31T00:00:00Z'])('refuses %s, outside the years readings can have, by name (a backfill of it planned millions of windows; 3000000d showed as year 6188)', (text) => {
    expect(() => parseInstant('--from', text, now)).toThrow(
      new UsageError(`--from ${JSON.stringify(text)}: outside the years readings can have (1970 to 2199). Fix: use e.g. 2026-01-01, 7d (seven days ago) or now`),
    );
  });
});
