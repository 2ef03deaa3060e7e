import { describe, expect, it } from 'vitest';
import { mergeRanges } from '../../src/store/aggregate-floors.ts';

/**
 * A refresh sums a floor's rows again once per merged range (aggregate-floors.ts): ranges of several floor spaces on
 * one floor that overlap or touch are one, so no bucket start is summed (and inserted) twice, and apart ones stay
 * apart, so a late reading a month back does not make the floor's whole month be summed again.
 */
describe("a floor's ranges to sum again", () => {
  it('merges ranges that overlap or touch, keeps apart ones apart, in order, whatever order they came in', () => {
    expect(
      mergeRanges([
        { fromMs: 50, toMs: 60 },
        { fromMs: 0, toMs: 10 },
        { fromMs: 10, toMs: 20 },
        { fromMs: 5, toMs: 8 },
        { fromMs: 30, toMs: 40 },
        { fromMs: 35, toMs: 45 },
      ]),
    ).toEqual([
      { fromMs: 0, toMs: 20 },
      { fromMs: 30, toMs: 45 },
      { fromMs: 50, toMs: 60 },
    ]);
    expect(mergeRanges([])).toEqual([]);
  });

  it('does not change the ranges it was given', () => {
    const given = [
      { fromMs: 0, toMs: 10 },
      { fromMs: 5, toMs: 20 },
    ];
    mergeRanges(given);
    expect(given).toEqual([
      { fromMs: 0, toMs: 10 },
      { fromMs: 5, toMs: 20 },
    ]);
  });
});
