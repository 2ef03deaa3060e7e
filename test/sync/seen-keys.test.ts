import { describe, expect, it } from 'vitest';
import { SeenKeys } from '../../src/sync/seen-keys.ts';

describe('the keys a window has seen', () => {
  it('counts a key once it is remembered, and only then', () => {
    const seen = new SeenKeys(['space', 'at']);
    expect(seen.record({ space: 'a', at: 't1' }, false)).toBe(true);
    expect(seen.record({ space: 'a', at: 't1' }, true)).toBe(true);
    expect(seen.record({ space: 'a', at: 't1' }, true)).toBe(false);
    expect(seen.record({ space: 'a', at: 't2' }, false)).toBe(true);
    expect(seen.record({ space: 'b', at: 't1' }, false)).toBe(true);
  });

  it('tells 1 from "1" and compares object values by their JSON', () => {
    const seen = new SeenKeys(['id']);
    seen.record({ id: 1 }, true);
    expect(seen.record({ id: '1' }, true)).toBe(true);
    expect(seen.record({ id: 1 }, true)).toBe(false);
    seen.record({ id: { a: 1 } }, true);
    expect(seen.record({ id: { a: 1 } }, true)).toBe(false);
    expect(seen.record({ id: { a: 2 } }, true)).toBe(true);
  });

  it("keeps rejected records' fingerprints apart from record keys", () => {
    const seen = new SeenKeys(['id']);
    seen.record({ id: 'f1' }, true);
    expect(seen.rejected('f1', true)).toBe(true);
    expect(seen.rejected('f1', true)).toBe(false);
  });
});
