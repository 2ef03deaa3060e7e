import { describe, expect, it } from 'vitest';
import { ConfigError, ContractViolation } from '../../src/errors.ts';
import { sinkKey } from '../../src/store/sinks.ts';
import { DEFAULT_LIMITS, PageContract } from '../../src/sync/contract.ts';
import { compileRecord } from '../../src/sync/records.ts';
import { checkpoint, DIALECTS, fresh } from './harness.ts';
import { parseDefinitionsText } from '../support/definitions.ts';

/**
 * A user maps an API's own shape onto the built-in dimension sinks with a definitions file alone (the engine takes
 * each sink's fields from src/store/columns.ts): it validates, its records are stored as they say, a full listing is
 * guarded against truncation and soft-deletes, and a presence-only reading stream may leave headcount out.
 */

const DOCUMENTS: Record<string, string> = {
  '/defs/sites.graphql': 'query Sites { sites { key title tz } }',
  '/defs/storeys.graphql': 'query Storeys { storeys { key label number site { key } } }',
  '/defs/rooms.graphql': 'query Rooms { rooms { key title kind seats { max } storey { key site { key } } } }',
  '/defs/presence.graphql': 'query Presence($since: DateTime!, $until: DateTime!) { presence(since: $since, until: $until) { room at occupied } }',
};

const FILE = `version: 2
streams:
  - name: sites
    document: sites.graphql
    sink: buildings
    kind: full
    paging: { style: single, records: sites, maxPageSize: 500 }
    record:
      id: { path: key, type: id }
      name: { path: title, type: string }
      timeZone: { path: tz, type: text, nullable: true }
    softDelete: { completeWhenUnset: [] }
  - name: storeys
    document: storeys.graphql
    sink: floors
    kind: full
    paging: { style: single, records: storeys, maxPageSize: 500 }
    record:
      id: { path: key, type: id }
      buildingId: { path: site.key, type: id, nullable: true }
      name: { path: label, type: string, nullable: true }
      level: { path: number, type: count, nullable: true }
    softDelete: { completeWhenUnset: [] }
  - name: rooms
    document: rooms.graphql
    sink: floorSpaces
    kind: full
    paging: { style: single, records: rooms, maxPageSize: 3 }
    record:
      id: { path: key, type: id }
      name: { path: title, type: string, nullable: true }
      floor_id: { path: storey.key, type: id, nullable: true }
      buildingId: { path: storey.site.key, type: id, nullable: true }
      capacity: { path: seats.max, type: count, nullable: true }
      space_type: { path: kind, type: text, nullable: true, map: { MEETING: meeting_room, DESK: desk } }
    softDelete: { completeWhenUnset: [] }
  - name: presence
    document: presence.graphql
    sink: occupancy
    kind: incremental
    cursorField: observedAt
    paging: { style: single, records: presence, maxPageSize: 1000 }
    variables: { since: '{{window.from}}', until: '{{window.to}}' }
    record:
      floorSpaceId: { path: room, type: id }
      observedAt: { path: at, type: timestamp }
      occupancyStatus: { path: occupied, type: text, map: { 'true': CurrentlyOccupied, 'false': CurrentlyUnoccupied } }
`;

const parse = (text: string) => parseDefinitionsText(DOCUMENTS, text);

const streamNamed = (name: string) => {
  const stream = parse(FILE).streams.find((s) => s.name === name);
  if (!stream) throw new Error(`no stream ${name}`);
  return stream;
};

const ROOMS = [
  { key: 'r-1', title: 'Oak', kind: 'MEETING', seats: { max: 8 }, storey: { key: 's-3', site: { key: 'hh' } } },
  { key: 'r-2', title: null, kind: null, seats: null, storey: null },
];

describe('a definitions file mapping an API onto the dimension sinks', () => {
  it('validates: buildings with a time zone, floors and floor spaces, each a full listing that soft-deletes', () => {
    const streams = parse(FILE).streams;
    expect(streams.map((s) => [s.name, s.sink, s.kind, s.softDelete !== undefined])).toEqual([
      ['sites', 'buildings', 'full', true],
      ['storeys', 'floors', 'full', true],
      ['rooms', 'floorSpaces', 'full', true],
      ['presence', 'occupancy', 'incremental', false],
    ]);
  });

  it('maps an answer onto FloorSpaceRecords, unknown values null (never invented)', () => {
    const validate = compileRecord(streamNamed('rooms').record as never);
    expect(ROOMS.map((room) => validate(room))).toEqual([
      { ok: true, record: { id: 'r-1', floorId: 's-3', buildingId: 'hh', name: 'Oak', capacity: 8, spaceType: 'meeting_room' } },
      { ok: true, record: { id: 'r-2', floorId: null, buildingId: null, name: null, capacity: null, spaceType: null } },
    ]);
  });

  it('a presence-only stream may leave headcount out: it is stored NULL', () => {
    const validate = compileRecord(streamNamed('presence').record as never);
    expect(validate({ room: 'r-1', at: '2026-03-01T10:00:00Z', occupied: true })).toEqual({
      ok: true,
      record: { floorSpaceId: 'r-1', observedAt: '2026-03-01T10:00:00.000Z', occupancyStatus: 'CurrentlyOccupied', headcount: null, eventId: null },
    });
  });

  it('says which columns a dimension sink has when a mapping names one it lacks', () => {
    const wrong = FILE.replace('      space_type: { path: kind', '      roomType: { path: kind');
    expect(() => parse(wrong)).toThrow(ConfigError);
    expect(() => parse(wrong)).toThrow(/sink floorSpaces has no column "roomType".*map only its columns: id \(floor_space_id\), name \(name\), floorId \(floor_id\), buildingId \(building_id\), capacity \(capacity\), spaceType \(space_type\)/);
  });

  it('a listing answer holding its declared maximum breaks the page contract (truncated): nothing is committed or soft-deleted', () => {
    const stream = streamNamed('rooms');
    const contract = new PageContract({
      where: 'the listing',
      style: stream.paging,
      validate: compileRecord(stream.record as never),
      keyFields: sinkKey('floorSpaces'),
      startCursor: null,
      limits: DEFAULT_LIMITS,
    });
    const answer = { rooms: [ROOMS[0], ROOMS[1], { ...ROOMS[1], key: 'r-3' }] };
    let error: unknown;
    try {
      contract.accept(stream.paging.read(answer, { position: null, pageSize: 3 }), 3);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ContractViolation);
    expect((error as ContractViolation).reason).toBe('truncated');
    expect((error as Error).message).toContain('nothing was soft-deleted');
  });
});

describe.each(DIALECTS)('records a definitions file maps, stored on %s', (dialect) => {
  it('are the rows of floor_spaces, floors and buildings', async () => {
    const { store } = await fresh(dialect, 'defs');
    const commit = async (name: string, items: unknown[]) => {
      const stream = streamNamed(name);
      const validate = compileRecord(stream.record as never);
      const records = items.map((item) => {
        const result = validate(item) as { ok: boolean; record?: unknown };
        expect(result.ok).toBe(true);
        return result.record;
      });
      await store.commitPage({ customerId: 'c', sink: stream.sink, records: records as never, at: '2026-03-01T10:00:00.000Z', checkpoint: { ...checkpoint('c', null), stateKey: name } });
    };
    await commit('sites', [{ key: 'hh', title: 'Harbour Hall', tz: 'Pacific/Auckland' }]);
    await commit('storeys', [{ key: 's-3', label: 'Third', number: 3, site: { key: 'hh' } }]);
    await commit('rooms', ROOMS);
    expect(await store.query('SELECT id, name, time_zone FROM buildings')).toEqual([{ id: 'hh', name: 'Harbour Hall', time_zone: 'Pacific/Auckland' }]);
    expect(await store.query('SELECT id, building_id, name, level FROM floors')).toEqual([{ id: 's-3', building_id: 'hh', name: 'Third', level: 3 }]);
    expect(await store.query('SELECT floor_space_id, name, floor_id, building_id, capacity, space_type FROM floor_spaces ORDER BY floor_space_id')).toEqual([
      { floor_space_id: 'r-1', name: 'Oak', floor_id: 's-3', building_id: 'hh', capacity: 8, space_type: 'meeting_room' },
      { floor_space_id: 'r-2', name: null, floor_id: null, building_id: null, capacity: null, space_type: null },
    ]);
  });
});
