import { describe, expect, it } from 'vitest';
import { readingsOf } from '../../src/store/aggregates.ts';

// Postgres sends a floor space's readings as lists (aggregates.ts readReadings); these are what the buckets are computed from.
describe('readingsOf', () => {
  const occupied = new Map<number, boolean | null>([
    [1, true],
    [2, false],
    [3, null],
  ]);

  it('reads instants, statuses and headcounts, an empty headcount as none and an unknown code as unknown', () => {
    expect(readingsOf(['1000', '2000', '3000'], ['1', '2', '9'], ['4', '', '0'], occupied)).toEqual([
      { at: 1000, occupied: true, headcount: 4 },
      { at: 2000, occupied: false, headcount: null },
      { at: 3000, occupied: null, headcount: 0 },
    ]);
  });

  it('puts lists that arrive out of time order back in order, each reading with its own status and headcount', () => {
    expect(readingsOf(['3000', '1000', '2000'], ['3', '1', '2'], ['', '5', '6'], occupied)).toEqual([
      { at: 1000, occupied: true, headcount: 5 },
      { at: 2000, occupied: false, headcount: 6 },
      { at: 3000, occupied: null, headcount: null },
    ]);
  });
});
