import { describe, expect, it } from 'vitest';
import { ContractViolation } from '../../src/errors.ts';
import { DEFAULT_LIMITS, PageContract, type PagingLimits } from '../../src/sync/contract.ts';
import { sinkKey } from '../../src/store/sinks.ts';
import { compileRecord } from '../../src/sync/records.ts';
import type { PagingStyle } from '../../src/sync/paging/index.ts';
import { occupancy } from '../../jobs/occupancy.ts';
import { styleOf } from '../support/paging.ts';

const FROM = '2026-01-08T10:00:00.000Z';
const TO = '2026-01-08T11:00:00.000Z';
const relay = styleOf({ style: 'relay-nodes', connection: 'occupancy', variables: { pageSize: 'first', cursor: 'after' } });

function node(i: number, patch: Record<string, unknown> = {}) {
  const minute = String(i % 60).padStart(2, '0');
  return { id: `o${i}`, floorSpaceId: `f${i}`, occupancyStatus: 'Unoccupied', headcount: i, created: `2026-01-08T10:${minute}:00.000Z`, ...patch };
}

function paging(limits: Partial<PagingLimits> = {}, startCursor: string | null = null, options: { style?: PagingStyle; endSlackMs?: number } = {}) {
  return new PageContract({
    where: 'window [10:00, 11:00)',
    style: options.style ?? relay,
    validate: compileRecord(occupancy.record),
    keyFields: sinkKey('occupancy'),
    window: { from: FROM, to: TO, endSlackMs: options.endSlackMs ?? 0, cursorField: 'observedAt', apiPath: 'created' },
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
/** One answer through the style and the contract, as the engine reads it. */
const read = (p: PageContract<any>, data: unknown, style: PagingStyle = relay) => p.accept(style.read(data, { position: null, pageSize: 100 }), 100);

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
    expect(relay.read(data, { position: null, pageSize: 10 })).toBe(detail);
    const error = violation(() => read(paging(), data));
    expect(error.reason).toBe('shape');
    expect(error.message).toContain('window [10:00, 11:00), page 1: the API answer broke the page contract (shape)');
  });

  it('a last page may leave endCursor null', () => {
    expect(relay.read(page([], false, null), { position: null, pageSize: 10 })).toEqual({ nodes: [], next: null });
  });
});

describe('records inside the window, paging that progresses', () => {
  it('accepts pages of new records, passing equal keys on to the store in order (it keeps the last)', () => {
    const p = paging();
    const first = read(p, page([node(1), node(2), node(1, { headcount: 9 })], true, 'A'));
    // The one de-duplication rule is the store's (test/store/store.test.ts, "duplicates inside one page").
    expect(first.records.map((r: any) => [r.floorSpaceId, r.headcount])).toEqual([['f1', 1], ['f2', 2], ['f1', 9]]);
    expect(first).toMatchObject({ number: 1, next: 'A', newest: Date.parse('2026-01-08T10:02:00.000Z') });
    const second = read(p, page([node(3)], false, null));
    expect(second).toMatchObject({ number: 2, next: null, rejected: [] });
  });

  it('refuses records outside [from, to) at either edge, naming how many, where they lie and the evidence instants', () => {
    const after = violation(() => read(paging(), page([node(1, { created: TO })], false, null)));
    expect(after.reason).toBe('window');
    expect(after.detail).toBe(`1 record(s) lie outside the requested window [${FROM}, ${TO}): created from ${TO} to ${TO}`);
    expect(after.message).toContain('declare `window: { end: inclusive }`');
    const before = violation(() => read(paging(), page([node(1, { created: '2026-01-08T08:00:00.000Z' }), node(2, { created: '2026-01-08T08:30:00.000Z' })], false, null)));
    expect(before.outside).toEqual({ earliest: Date.parse('2026-01-08T08:00:00.000Z'), latest: Date.parse('2026-01-08T08:30:00.000Z') });
    expect(read(paging(), page([node(1, { created: FROM })], false, null)).records).toHaveLength(1);
  });

  it('with an inclusive end, records at the end bound (within its precision) are left to the next window, not refused', () => {
    const p = paging({}, null, { endSlackMs: 1000 });
    const result = read(p, page([node(1), node(2, { created: TO }), node(3, { created: '2026-01-08T11:00:00.999Z' })], false, null));
    expect(result.records.map((r: any) => r.observedAt)).toEqual(['2026-01-08T10:01:00.000Z']);
    expect(violation(() => read(paging({}, null, { endSlackMs: 1000 }), page([node(1, { created: '2026-01-08T11:00:01.000Z' })], false, null))).reason).toBe('window');
  });

  it('refuses a cursor seen before in the window: the same cursor again, a cycle, and the checkpoint it resumed at', () => {
    const same = paging();
    read(same, page([node(1)], true, 'A'));
    expect(violation(() => read(same, page([node(2)], true, 'A'))).reason).toBe('cursor-repeated');

    const cycle = paging();
    read(cycle, page([node(1)], true, 'A'));
    read(cycle, page([node(2)], true, 'B'));
    const error = violation(() => read(cycle, page([node(3)], true, 'A')));
    expect(error.reason).toBe('cursor-repeated');
    expect(error.message).toContain('page 3');

    const resumed = paging({}, 'R');
    const back = violation(() => read(resumed, page([node(1)], true, 'R')));
    expect(back.message).toContain('page 1 after the checkpoint');
  });

  it('a page that repeats the records before it is a broken cursor at once, on the last page too (an API ignoring after)', () => {
    const repeat = paging();
    read(repeat, page([node(1), node(2)], true, 'A'));
    const error = violation(() => read(repeat, page([node(1), node(2)], true, 'B')));
    expect(error.reason).toBe('no-progress');
    expect(error.detail).toContain('does it ignore the paging variables $first, $after?');

    const last = paging();
    read(last, page([node(1), node(2)], true, 'A'));
    expect(violation(() => read(last, page([node(1), node(2)], false, null))).reason).toBe('no-progress');
  });

  it('an overlap of one record per page passes, and so does a last page holding only the overlapping record', () => {
    const p = paging();
    read(p, page([node(1), node(2), node(3)], true, 'A'));
    read(p, page([node(3), node(4), node(5)], true, 'B'));
    read(p, page([node(5), node(6)], true, 'C'));
    expect(read(p, page([node(6)], false, null)).number).toBe(4);
  });

  it('empty pages may not go on: three in a row while more are announced fail; a record resets the count', () => {
    const empty = paging();
    read(empty, page([], true, 'A'));
    read(empty, page([], true, 'B'));
    expect(violation(() => read(empty, page([], true, 'C'))).reason).toBe('no-progress');

    const p = paging();
    read(p, page([], true, 'A'));
    read(p, page([], true, 'B'));
    read(p, page([node(1)], true, 'C'));
    read(p, page([], true, 'D'));
    read(p, page([], true, 'E'));
    expect(read(p, page([], false, null)).number).toBe(6);
  });

  it('no window pages forever: the page limit', () => {
    const p = paging({ maxPages: 3 });
    read(p, page([node(1)], true, 'A'));
    read(p, page([node(2)], true, 'B'));
    expect(violation(() => read(p, page([node(3)], true, 'C'))).reason).toBe('page-limit');
  });
});

describe('the truncation guard', () => {
  const single = styleOf({ style: 'single', records: 'readings', maxPageSize: 3 });
  const list = (n: number) => ({ readings: Array.from({ length: n }, (_, i) => node(i + 1)) });

  it('a single page holding the declared maximum fails the window: it may have been cut, and nothing can ask for more', () => {
    const error = violation(() => read(paging({}, null, { style: single }), list(3), single));
    expect(error.reason).toBe('truncated');
    expect(error.message).toContain('the answer holds 3 records, the most the API answers (maxPageSize 3)');
    expect(error.message).toContain('Fix: give the stream a smaller window');
    expect(read(paging({}, null, { style: single }), list(2), single).records).toHaveLength(2);
  });

  it('a paged style reaching its page size asks for the next page instead', () => {
    const p = paging();
    expect(read(p, page([node(1), node(2), node(3)], true, 'A')).next).toBe('A');
  });
});

describe('rejected records', () => {
  it('quarantines a stray bad record with its reason and raw JSON, and goes on', () => {
    const bad = node(2, { headcount: null });
    const result = read(paging(), page([node(1), bad, node(3)], false, null));
    expect(result.records).toHaveLength(2);
    expect(result.rejected).toEqual([{ fingerprint: expect.stringMatching(/^[0-9a-f]{32}$/), raw: JSON.stringify(bad), reason: expect.stringMatching(/^headcount: /) }]);
  });

  it('one bad record alone in a page does not fail the window (it must not block a stream)', () => {
    const result = read(paging(), page([node(1, { floorSpaceId: null })], false, null));
    expect(result.rejected).toHaveLength(1);
  });

  it('fails the window when rejections are wholesale: at least 10 and more than the share', () => {
    const nodes = Array.from({ length: 12 }, (_, i) => node(i, { headcount: null }));
    expect(violation(() => read(paging(), page(nodes, false, null))).reason).toBe('records-rejected');
    const mixed = [...Array.from({ length: 10 }, (_, i) => node(i, { headcount: null })), ...Array.from({ length: 11 }, (_, i) => node(20 + i))];
    expect(read(paging(), page(mixed, false, null)).rejected).toHaveLength(10);
  });

  it('with SYNC_REJECTED_RECORDS=fail any rejected record fails the window', () => {
    expect(violation(() => read(paging({ onRejected: 'fail' }), page([node(1), node(2, { created: 5 })], false, null))).reason).toBe('record-rejected');
  });
});
