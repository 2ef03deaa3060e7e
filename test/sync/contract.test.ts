import { describe, expect, it } from 'vitest';
import { ContractViolation } from '../../src/errors.ts';
import { DEFAULT_LIMITS, readConnectionPage, readListPage, WindowPaging, type PagingLimits } from '../../src/sync/contract.ts';
import { sinkKey } from '../../src/store/sinks.ts';
import { compileRecord } from '../../src/sync/records.ts';
import { occupancy } from '../../jobs/occupancy.ts';

const FROM = '2026-01-08T10:00:00.000Z';
const TO = '2026-01-08T11:00:00.000Z';

function node(i: number, patch: Record<string, unknown> = {}) {
  const minute = String(i % 60).padStart(2, '0');
  return { id: `o${i}`, floorSpaceId: `f${i}`, occupancyStatus: 'Unoccupied', headcount: i, created: `2026-01-08T10:${minute}:00.000Z`, ...patch };
}

function paging(limits: Partial<PagingLimits> = {}, startCursor: string | null = null) {
  return new WindowPaging({
    where: 'window [10:00, 11:00)',
    validate: compileRecord(occupancy.record),
    keyFields: sinkKey('occupancy'),
    window: { from: FROM, to: TO, cursorField: 'observedAt', apiPath: 'created' },
    startCursor,
    limits: { ...DEFAULT_LIMITS, ...limits },
  });
}

function violation(fn: () => unknown): ContractViolation {
  try {
    fn();
  } catch (error) {
    if (error instanceof ContractViolation) return error;
    throw error;
  }
  throw new Error('expected a ContractViolation');
}

const page = (nodes: unknown[], hasNextPage: boolean, endCursor: string | null) => ({ occupancy: { nodes, pageInfo: { hasNextPage, endCursor } } });

describe('the shape of an answer', () => {
  it.each([
    [{ occupancy: { nodes: [], pageInfo: null } }, 'data.occupancy.pageInfo is null, expected { hasNextPage, endCursor }'],
    [{ occupancy: { nodes: [] } }, 'data.occupancy.pageInfo is missing, expected { hasNextPage, endCursor }'],
    [{ occupancy: { nodes: null, pageInfo: { hasNextPage: false } } }, 'data.occupancy.nodes is null, expected a list'],
    [{ occupancy: null }, 'data.occupancy is null, expected an object with nodes and pageInfo'],
    [null, 'data is null, expected an object'],
    [{ occupancy: { nodes: [], pageInfo: { hasNextPage: 'true', endCursor: 'x' } } }, 'data.occupancy.pageInfo.hasNextPage is the string "true", expected a boolean'],
    [{ occupancy: { nodes: [], pageInfo: { hasNextPage: true, endCursor: null } } }, 'data.occupancy.pageInfo.hasNextPage is true but endCursor is null, so the next page cannot be asked for'],
    [{ occupancy: { nodes: [], pageInfo: { hasNextPage: true, endCursor: '' } } }, 'data.occupancy.pageInfo.hasNextPage is true but endCursor is the string "", so the next page cannot be asked for'],
  ])('%j breaks the shape rule', (data, detail) => {
    expect(readConnectionPage(data, ['occupancy'])).toBe(detail);
    const error = violation(() => paging().accept(readConnectionPage(data, ['occupancy'])));
    expect(error.rule).toBe('shape');
    expect(error.message).toContain('window [10:00, 11:00), page 1: the API answer broke the page contract (shape)');
  });

  it('a list answer must be a list', () => {
    expect(readListPage({ buildings: null }, ['buildings'])).toBe('data.buildings is null, expected a list');
    expect(readListPage({ buildings: [] }, ['buildings'])).toEqual({ nodes: [], hasNextPage: false, endCursor: null });
  });

  it('a last page may leave endCursor null', () => {
    expect(readConnectionPage(page([], false, null), ['occupancy'])).toEqual({ nodes: [], hasNextPage: false, endCursor: null });
  });
});

describe('records inside the window, paging that progresses', () => {
  it('accepts pages of new records, passing equal keys on to the store in order (it keeps the last)', () => {
    const p = paging();
    const first = p.accept(readConnectionPage(page([node(1), node(2), node(1, { headcount: 9 })], true, 'A'), ['occupancy']));
    // The one de-duplication rule is the store's (test/store/store.test.ts, "duplicates inside one page").
    expect(first.records.map((r) => [r.floorSpaceId, r.headcount])).toEqual([['f1', 1], ['f2', 2], ['f1', 9]]);
    expect(first.number).toBe(1);
    const second = p.accept(readConnectionPage(page([node(3)], false, null), ['occupancy']));
    expect(second).toMatchObject({ number: 2, hasNextPage: false, rejected: [] });
  });

  it('refuses a record whose cursor field lies outside [from, to), at either edge', () => {
    expect(violation(() => paging().accept(readConnectionPage(page([node(1, { created: TO })], false, null), ['occupancy']))).detail).toBe(
      `a record's created ${TO} lies outside the requested window [${FROM}, ${TO})`,
    );
    expect(violation(() => paging().accept(readConnectionPage(page([node(1, { created: '2026-01-08T09:59:59.999Z' })], false, null), ['occupancy']))).rule).toBe('window');
    expect(paging().accept(readConnectionPage(page([node(1, { created: FROM })], false, null), ['occupancy'])).records).toHaveLength(1);
  });

  it('refuses a cursor seen before in the window: the same cursor again, a cycle, and the checkpoint it resumed at', () => {
    const same = paging();
    same.accept(readConnectionPage(page([node(1)], true, 'A'), ['occupancy']));
    expect(violation(() => same.accept(readConnectionPage(page([node(1)], true, 'A'), ['occupancy']))).rule).toBe('cursor-repeated');

    const cycle = paging();
    cycle.accept(readConnectionPage(page([node(1)], true, 'A'), ['occupancy']));
    cycle.accept(readConnectionPage(page([node(2)], true, 'B'), ['occupancy']));
    const error = violation(() => cycle.accept(readConnectionPage(page([node(3)], true, 'A'), ['occupancy'])));
    expect(error.rule).toBe('cursor-repeated');
    expect(error.message).toContain('page 3');

    const resumed = paging({}, 'R');
    const back = violation(() => resumed.accept(readConnectionPage(page([node(1)], true, 'R'), ['occupancy'])));
    expect(back.message).toContain('page 1 after the checkpoint');
  });

  it('fails after three pages in a row without a new record: empty pages or the same records under fresh cursors', () => {
    const empty = paging();
    empty.accept(readConnectionPage(page([], true, 'A'), ['occupancy']));
    empty.accept(readConnectionPage(page([], true, 'B'), ['occupancy']));
    expect(violation(() => empty.accept(readConnectionPage(page([], true, 'C'), ['occupancy']))).rule).toBe('no-progress');

    const repeat = paging();
    repeat.accept(readConnectionPage(page([node(1), node(2)], true, 'A'), ['occupancy']));
    repeat.accept(readConnectionPage(page([node(1), node(2)], true, 'B'), ['occupancy']));
    repeat.accept(readConnectionPage(page([node(1), node(2)], true, 'C'), ['occupancy']));
    expect(violation(() => repeat.accept(readConnectionPage(page([node(1), node(2)], true, 'D'), ['occupancy']))).rule).toBe('no-progress');
  });

  it('a new record resets the count; an empty last page is fine', () => {
    const p = paging();
    p.accept(readConnectionPage(page([], true, 'A'), ['occupancy']));
    p.accept(readConnectionPage(page([], true, 'B'), ['occupancy']));
    p.accept(readConnectionPage(page([node(1)], true, 'C'), ['occupancy']));
    p.accept(readConnectionPage(page([], true, 'D'), ['occupancy']));
    p.accept(readConnectionPage(page([], true, 'E'), ['occupancy']));
    expect(p.accept(readConnectionPage(page([], false, null), ['occupancy'])).number).toBe(6);
  });

  it('no window pages forever: the page limit', () => {
    const p = paging({ maxPages: 3 });
    p.accept(readConnectionPage(page([node(1)], true, 'A'), ['occupancy']));
    p.accept(readConnectionPage(page([node(2)], true, 'B'), ['occupancy']));
    expect(violation(() => p.accept(readConnectionPage(page([node(3)], true, 'C'), ['occupancy']))).rule).toBe('page-limit');
  });
});

describe('rejected records', () => {
  it('quarantines a stray bad record with its reason and raw JSON, and goes on', () => {
    const bad = node(2, { headcount: null });
    const result = paging().accept(readConnectionPage(page([node(1), bad, node(3)], false, null), ['occupancy']));
    expect(result.records).toHaveLength(2);
    expect(result.rejected).toEqual([{ fingerprint: expect.stringMatching(/^[0-9a-f]{32}$/), raw: JSON.stringify(bad), reason: expect.stringMatching(/^headcount: /) }]);
  });

  it('one bad record alone in a page does not fail the window (it must not block a stream)', () => {
    const result = paging().accept(readConnectionPage(page([node(1, { floorSpaceId: null })], false, null), ['occupancy']));
    expect(result.rejected).toHaveLength(1);
  });

  it('fails the window when rejections are wholesale: at least 10 and more than the share', () => {
    const nodes = Array.from({ length: 12 }, (_, i) => node(i, { headcount: null }));
    expect(violation(() => paging().accept(readConnectionPage(page(nodes, false, null), ['occupancy']))).rule).toBe('records-rejected');
    const mixed = [...Array.from({ length: 10 }, (_, i) => node(i, { headcount: null })), ...Array.from({ length: 11 }, (_, i) => node(20 + i))];
    expect(paging().accept(readConnectionPage(page(mixed, false, null), ['occupancy'])).rejected).toHaveLength(10);
  });

  it('with SYNC_REJECTED_RECORDS=fail any rejected record fails the window', () => {
    expect(violation(() => paging({ onRejected: 'fail' }).accept(readConnectionPage(page([node(1), node(2, { created: 5 })], false, null), ['occupancy']))).rule).toBe('record-rejected');
  });
});
