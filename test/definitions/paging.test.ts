import { describe, expect, it } from 'vitest';
import { ContractViolation } from '../../src/errors.ts';
import { DEFAULT_LIMITS, PageContract } from '../../src/sync/contract.ts';
import { sinkKey } from '../../src/store/sinks.ts';
import { compileRecord } from '../../src/sync/records.ts';
import { flattenNested } from '../../src/sync/paging/answer.ts';
import { PAGING_STYLES, STYLES, type PageAt } from '../../src/sync/paging/index.ts';
import { styleOf, stylesErrors } from '../support/paging.ts';

/** Each paging style of src/sync/paging/ on its own answers, and nested records, under the page contract. */

const FROM = '2026-01-08T10:00:00.000Z';
const TO = '2026-01-08T11:00:00.000Z';
const reading = (i: number) => ({ id: `r${i}`, observedAt: `2026-01-08T10:${String(i % 60).padStart(2, '0')}:00.000Z`, status: 'Unoccupied', people: i });
/** buildings -> floor spaces -> readings, two floor spaces with the readings split between them. */
const nestedAnswer = (readings: ReturnType<typeof reading>[]) => ({
  floorSpaceReadings: [
    {
      buildingId: 'b1',
      floorSpaces: [
        { floorSpaceId: 'f1', readings: readings.filter((_, i) => i % 2 === 0) },
        { floorSpaceId: 'f2', readings: readings.filter((_, i) => i % 2 === 1) },
      ],
    },
  ],
});
const EACH = [['floorSpaces'], ['readings']];
const nestedRecord = compileRecord({
  floorSpaceId: { path: '$parent.floorSpaceId', type: 'id' },
  observedAt: { path: 'observedAt', type: 'timestamp' },
  occupancyStatus: { path: 'status', type: 'text' },
  headcount: { path: 'people', type: 'count' },
  eventId: { path: 'id', type: 'id', nullable: true },
});
const flatRecord = compileRecord({
  floorSpaceId: { path: 'space', type: 'id' },
  observedAt: { path: 'observedAt', type: 'timestamp' },
  occupancyStatus: { path: 'status', type: 'text' },
  headcount: { path: 'people', type: 'count' },
  eventId: { path: 'id', type: 'id', nullable: true },
});
const flat = (i: number) => ({ ...reading(i), space: `f${i}` });
const at = (cursor: string | null, pageSize = 3): PageAt => ({ position: cursor, pageSize });

describe('nested records', () => {
  it('are flattened with their enclosing element, without the list they came from, under $parent', () => {
    const nodes = flattenNested(nestedAnswer([reading(1), reading(2)]).floorSpaceReadings, EACH, 'data.floorSpaceReadings') as unknown[];
    expect(nodes).toEqual([
      { ...reading(1), $parent: { floorSpaceId: 'f1', $parent: { buildingId: 'b1' } } },
      { ...reading(2), $parent: { floorSpaceId: 'f2', $parent: { buildingId: 'b1' } } },
    ]);
    expect(nestedRecord(nodes[0])).toMatchObject({ ok: true, record: { floorSpaceId: 'f1', headcount: 1 } });
  });

  it('a level that is not a list is a shape violation naming it', () => {
    expect(flattenNested([{ floorSpaces: null }], EACH, 'data.floorSpaceReadings')).toBe('data.floorSpaceReadings[].floorSpaces is null, expected a list');
    expect(flattenNested([7], EACH, 'data.floorSpaceReadings')).toBe('an element of data.floorSpaceReadings is the number 7, expected an object');
  });
});

describe('the styles', () => {
  it('every style is one module named as in the definitions file', () => {
    expect(Object.keys(STYLES).sort()).toEqual([...PAGING_STYLES].sort());
    for (const [name, module] of Object.entries(STYLES)) expect(module.name).toBe(name);
  });

  it('each style carries what the loader, check, the probe and messages need to know of it', () => {
    const edges = styleOf({ style: 'relay-edges', connection: 'events', variables: { pageSize: 'first', cursor: 'after' } });
    expect(edges).toMatchObject({ recordsKey: 'connection', lists: [['events', 'edges']] });
    expect(edges.reads).toEqual([
      { paths: [['events', 'pageInfo', 'hasNextPage']], holds: 'Boolean' },
      { paths: [['events', 'pageInfo', 'endCursor'], ['events', 'edges', 'cursor']], holds: 'text' },
    ]);
    expect(styleOf({ style: 'relay-nodes', connection: 'o', variables: { cursor: 'after' } }).lists).toEqual([['o', 'nodes']]);
    const token = styleOf({ style: 'token', records: 'list.items', nextToken: 'list.next', variables: { token: 't' } });
    expect(token).toMatchObject({ recordsKey: 'records', lists: [['list', 'items']], reads: [{ paths: [['list', 'next']], holds: 'text' }] });
    expect(token.roles.token).toMatchObject({ type: 'text', carries: 'token of the next page' });
    const offset = styleOf({ style: 'offset', records: 'a[].b[].c', total: 'n', variables: { pageSize: 'l', offset: 'o' } });
    expect(offset.lists).toEqual([['a'], ['a', 'b'], ['a', 'b', 'c']]);
    expect(offset.reads).toEqual([{ paths: [['n']], holds: 'Int' }]);
    expect(Object.fromEntries(Object.entries(offset.roles).map(([role, r]) => [role, r.type]))).toEqual({ pageSize: 'Int', offset: 'Int' });
    // A single page sets no variable: no page size is asked for (the probe reports none).
    expect(styleOf({ style: 'single', records: 'list', maxPageSize: 10 }).roles).toEqual({});
    for (const module of Object.values(STYLES)) {
      for (const [role, r] of Object.entries(module.roles)) expect(r.fix, `${module.name} ${role}`).toMatch(/paging\.|SYNC_PAGE_SIZE/);
    }
  });

  it('single: one answer, nothing to ask for', () => {
    const style = styleOf({ style: 'single', records: 'list' });
    expect(style.variables(at(null))).toEqual({});
    expect(style.read({ list: [1, 2] }, at(null))).toEqual({ nodes: [1, 2], next: null });
    expect(style.read({ list: null }, at(null))).toBe('data.list is null, expected a list');
  });

  it('relay-edges: the nodes of the edges; the last edge\'s cursor when pageInfo has no endCursor', () => {
    const style = styleOf({ style: 'relay-edges', connection: 'events', variables: { pageSize: 'first', cursor: 'after' } });
    expect(style.variables(at('c1', 50))).toEqual({ first: 50, after: 'c1' });
    const answer = { events: { edges: [{ cursor: 'a', node: { n: 1 } }, { cursor: 'b', node: { n: 2 } }], pageInfo: { hasNextPage: true } } };
    expect(style.read(answer, at(null))).toEqual({ nodes: [{ n: 1 }, { n: 2 }], next: 'b' });
    expect(style.read({ events: { ...answer.events, pageInfo: { hasNextPage: true, endCursor: 'z' } } }, at(null))).toMatchObject({ next: 'z' });
    expect(style.read({ events: { edges: [7], pageInfo: { hasNextPage: false } } }, at(null))).toBe('data.events.edges[0] is the number 7, expected an object with node');
    expect(style.read({ events: { nodes: [], pageInfo: { hasNextPage: false } } }, at(null))).toBe('data.events.edges is missing, expected a list');
  });

  it('token: the answer\'s token is sent back; an absent, null or empty token ends the listing', () => {
    const style = styleOf({ style: 'token', records: 'list.items', nextToken: 'list.nextToken', variables: { pageSize: 'limit', token: 'nextToken' } });
    expect(style.variables(at(null, 10))).toEqual({ limit: 10, nextToken: null });
    expect(style.read({ list: { items: [1], nextToken: 't2' } }, at(null))).toEqual({ nodes: [1], next: 't2' });
    for (const end of [null, undefined, '']) expect(style.read({ list: { items: [1], nextToken: end } }, at('t2'))).toEqual({ nodes: [1], next: null });
    expect(style.read({ list: { items: [], nextToken: 5 } }, at(null))).toBe('data.list.nextToken is the number 5, expected a string token or null');
  });

  it('offset: a full page asks for the next offset, a short one or one reaching the total is the last', () => {
    const style = styleOf({ style: 'offset', records: 'floorSpaceReadings[].floorSpaces[].readings', variables: { pageSize: 'limit', offset: 'offset' } });
    expect(style.variables(at('6'))).toEqual({ limit: 3, offset: 6 });
    expect(style.read(nestedAnswer([reading(1), reading(2), reading(3)]), at('6'))).toMatchObject({ next: '9' });
    expect(style.read(nestedAnswer([reading(1)]), at('9'))).toMatchObject({ next: null });
    expect(style.read(nestedAnswer([reading(1), reading(2), reading(3)]), at(null, 2))).toBe(
      'a page of 3 records, more than the 2 asked for (does the limit count another level of the answer?)',
    );
    const total = styleOf({ style: 'offset', records: 'r.items', total: 'r.total', variables: { pageSize: 'limit', offset: 'offset' } });
    expect(total.read({ r: { items: [1, 2, 3], total: 6 } }, at('3'))).toMatchObject({ next: null });
    expect(total.read({ r: { items: [1, 2, 3], total: 7 } }, at('3'))).toMatchObject({ next: '6' });
    expect(total.read({ r: { items: [1, 2, 3], total: '7' } }, at('3'))).toBe('data.r.total is the string "7", expected a whole number');
  });

  it('page-number: pages from firstPage; a short page, the total records or the total pages end the listing', () => {
    const style = styleOf({ style: 'page-number', records: 'p.readings', total: 'p.totalCount', variables: { pageSize: 'pageSize', page: 'page' } });
    expect(style.variables(at(null))).toEqual({ pageSize: 3, page: 1 });
    expect(style.read({ p: { readings: [1, 2, 3], totalCount: 7 } }, at(null))).toEqual({ nodes: [1, 2, 3], next: '2' });
    expect(style.read({ p: { readings: [4, 5, 6], totalCount: 6 } }, at('2'))).toMatchObject({ next: null });
    const zero = styleOf({ style: 'page-number', records: 'p.readings', totalPages: 'p.pages', firstPage: 0, variables: { pageSize: 'size', page: 'n' } });
    expect(zero.variables(at(null))).toEqual({ size: 3, n: 0 });
    expect(zero.read({ p: { readings: [1, 2, 3], pages: 2 } }, at(null))).toMatchObject({ next: '1' });
    expect(zero.read({ p: { readings: [1, 2, 3], pages: 2 } }, at('1'))).toMatchObject({ next: null });
    const short = styleOf({ style: 'page-number', records: 'p.readings', variables: { pageSize: 'size', page: 'n' } });
    expect(short.read({ p: { readings: [1, 2] } }, at('4'))).toMatchObject({ next: null });
  });

  it('a stored checkpoint of another style is refused, not read as a number', () => {
    const offset = styleOf({ style: 'offset', records: 'r', variables: { pageSize: 'limit', offset: 'offset' } });
    expect(offset.unresumable('1200')).toBeUndefined();
    expect(offset.unresumable('MTcwMDAwMDAwMDAwMDpvMQ==')).toMatch(/is not an offset \(was the stream's paging changed mid-window\?\)/);
    expect(styleOf({ style: 'page-number', records: 'r', variables: { pageSize: 's', page: 'p' } }).unresumable('x')).toMatch(/not a page number/);
  });

  it('version 1 words (none, cursor, offset with limit) read as the same styles', () => {
    expect(styleOf({ style: 'none', records: 'buildings' }, 1)).toMatchObject({ style: 'single', records: { path: ['buildings'], each: [] } });
    // The cap a single page must declare (definitions.ts) can be given in a version-1 file too.
    expect(styleOf({ style: 'none', records: 'buildings', maxPageSize: 50 }, 1)).toMatchObject({ style: 'single', maxPageSize: 50 });
    const relay = styleOf({ style: 'cursor', connection: 'occupancy', pageSize: 'first', cursor: 'after' }, 1);
    expect(relay).toMatchObject({ style: 'relay-nodes', variableNames: { pageSize: 'first', cursor: 'after' } });
    expect(styleOf({ style: 'offset', records: 'r', offset: 'o', limit: 'l' }, 1)).toMatchObject({ style: 'offset', variableNames: { pageSize: 'l', offset: 'o' } });
    expect(stylesErrors({ style: 'relay-nodes', connection: 'x' }, 1)[0]).toMatch(/is not one of none, cursor, offset \(version 1\)/);
  });

  it('each problem is one located line: unknown style, missing variables, bad sizes', () => {
    expect(stylesErrors({ style: 'cursor' })[0]).toMatch(/^streams\.yaml:\d+:\d+: paging style "cursor" is not one of single, relay-nodes, relay-edges, token, offset, page-number\. Fix: /);
    expect(stylesErrors({ style: 'token', records: 'r', nextToken: 'n' })).toEqual([
      expect.stringMatching(/token paging needs the variable that carries the token of the next page\. Fix: add variables: \{ token: /),
    ]);
    expect(stylesErrors({ style: 'offset', records: 'r', variables: { pageSize: 'l', offset: 'o', cursor: 'c' } })[0]).toMatch(/unknown key "cursor" in the variables of offset paging/);
    expect(stylesErrors({ style: 'relay-nodes', connection: 'c', variables: { cursor: 'after' }, pageSize: 600, maxPageSize: 500 })[0]).toMatch(/pageSize 600 is above maxPageSize 500/);
    expect(stylesErrors({ style: 'single', records: 'r', maxPageSize: 0 })[0]).toMatch(/maxPageSize must be a whole number from 1, got number 0/);
    expect(stylesErrors({ style: 'page-number', records: 'r', firstPage: 2, variables: { pageSize: 's', page: 'p' } })[0]).toMatch(/firstPage must be 0 or 1/);
  });
});

describe('an API that ignores the paging variables cannot page on', () => {
  function pageContract(style: ReturnType<typeof styleOf>, validate = flatRecord) {
    return new PageContract({
      where: 'window [10:00, 11:00)',
      style,
      validate,
      keyFields: sinkKey('occupancy'),
      window: { from: FROM, to: TO, endSlackMs: 0, cursorField: 'observedAt', apiPath: 'observedAt' },
      startCursor: null,
      limits: DEFAULT_LIMITS,
    });
  }

  it.each([
    ['offset', { style: 'offset', records: 'r', variables: { pageSize: 'limit', offset: 'offset' } }, { r: [flat(1), flat(2)] }],
    ['page-number', { style: 'page-number', records: 'r', variables: { pageSize: 'size', page: 'page' } }, { r: [flat(1), flat(2)] }],
    ['token', { style: 'token', records: 'r', nextToken: 't', variables: { token: 't' } }, { r: [flat(1), flat(2)], t: 'fresh' }],
  ])('%s: the same records on the second page fail the window at once (no-progress)', (_, paging, answer) => {
    const style = styleOf(paging);
    const contract = pageContract(style);
    let page = contract.accept(style.read(answer, at(null, 2)), 2);
    expect(page.records).toHaveLength(2);
    const again = style.serverCursors ? { ...answer, t: 'fresher' } : answer;
    expect(() => (page = contract.accept(style.read(again, at(page.next, 2)), 2))).toThrow(ContractViolation);
    expect(contract.pages).toBe(2);
  });
});
