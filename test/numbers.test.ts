import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatCount } from '../src/numbers.ts';

describe('formatCount', () => {
  it("writes whole numbers as toLocaleString('en-US') does", () => {
    fc.assert(fc.property(fc.integer({ min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }), (n) => formatCount(n) === n.toLocaleString('en-US')));
    expect(formatCount(0)).toBe('0');
    expect(formatCount(999)).toBe('999');
    expect(formatCount(1000)).toBe('1,000');
    expect(formatCount(-1234567)).toBe('-1,234,567');
    expect(formatCount(2_147_483_647)).toBe('2,147,483,647');
  });

  it('rounds a fraction to the nearest whole number first', () => {
    expect(formatCount(1234.4)).toBe('1,234');
    expect(formatCount(999.5)).toBe('1,000');
    expect(formatCount(Number.NaN)).toBe('NaN');
  });
});
