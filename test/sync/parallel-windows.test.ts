import { describe, expect, it } from 'vitest';
import { Frontier } from '../../src/sync/run/frontier.ts';
import { parallelWindowsSuite } from './parallel-windows.ts';

/**
 * Windows of one stream read at the same time (issue 25): whatever order they complete in, the watermark and a
 * backfill's progress move only over the completed windows from the first, and a run stopped at any page resumes to a
 * database equal to the truth.
 */

describe('the frontier', () => {
  const w = (from: number) => ({ from, to: from + 1, cursor: null });

  it('moves only over the completed windows from the first, whatever order they complete in', () => {
    const f = new Frontier([w(0), w(1), w(2), w(3)]);
    expect(f.page(2, null)).toEqual([]);
    expect(f.page(1, 'c1')).toEqual([]);
    expect(f.head).toMatchObject({ index: 0 });
    expect(f.beyondHead.map((x) => [x.index, x.cursor, x.done])).toEqual([[1, 'c1', false], [2, null, true]]);
    expect(f.page(0, null).map((x) => x.index)).toEqual([0]);
    expect(f.page(1, null).map((x) => x.index)).toEqual([1, 2]);
    expect(f.head).toMatchObject({ index: 3 });
    expect(f.page(3, null).map((x) => x.index)).toEqual([3]);
    expect(f.head).toBeUndefined();
    expect(() => f.page(3, null)).toThrow(RangeError);
  });
});

parallelWindowsSuite('sqlite');
