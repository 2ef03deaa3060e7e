import { describe, expect, it } from 'vitest';
import { parseDocumentSource } from '../../src/api/documents.ts';
import { missingFields, readOffered, withoutFields, type OfferedSchema } from '../../src/api/offered.ts';
import { adaptToOffer } from '../../src/app/offered-streams.ts';
import { streams } from '../../jobs/index.ts';
import { loadDocument } from '../../src/api/documents.ts';

/**
 * What the API offers (src/api/offered.ts) and what a run makes of it (src/app/offered-streams.ts): a stream declared
 * ifOffered whose query the API lacks is skipped, a field declared ifOffered is left out of the query and stored
 * NULL, and everything else runs as declared.
 */

function offer(types: Record<string, Record<string, string>>): OfferedSchema {
  return { query: 'Query', types: new Map(Object.entries(types).map(([t, f]) => [t, new Map(Object.entries(f))])) };
}

const DOCUMENTED = offer({
  Query: { buildings: 'Building', occupancy: 'OccupancyConnection' },
  Building: { id: 'ID', name: 'String' },
  OccupancyConnection: { nodes: 'OccupancyObservation', pageInfo: 'PageInfo' },
  OccupancyObservation: { id: 'ID', floorSpaceId: 'ID', occupancyStatus: 'String', headcount: 'Int', created: 'DateTime' },
  PageInfo: { hasNextPage: 'Boolean', endCursor: 'String' },
});

describe('what the API offers', () => {
  it('reads the introspection answer into types and their fields (lists and non-null unwrapped)', () => {
    const offered = readOffered({
      __schema: {
        queryType: { name: 'Root' },
        types: [
          { name: 'Root', kind: 'OBJECT', fields: [{ name: 'floors', type: { kind: 'NON_NULL', name: null, ofType: { kind: 'LIST', name: null, ofType: { kind: 'NON_NULL', name: null, ofType: { kind: 'OBJECT', name: 'Floor' } } } } }] },
          { name: 'Floor', kind: 'OBJECT', fields: [{ name: 'level', type: { kind: 'SCALAR', name: 'Int' } }] },
          { name: 'Int', kind: 'SCALAR', fields: null },
        ],
      },
    });
    expect(offered?.query).toBe('Root');
    expect(offered?.types.get('Root')?.get('floors')).toBe('Floor');
    expect(offered?.types.get('Floor')?.get('level')).toBe('Int');
    expect(readOffered({ data: 'no schema' })).toBeUndefined();
  });

  it('names the fields a document asks for that the API lacks, through nesting and fragments', () => {
    const doc = parseDocumentSource('query B { buildings { id name timeZone ...More } floors { id } }\nfragment More on Building { address }', 'b.graphql');
    expect(missingFields(DOCUMENTED, doc.document).map((m) => [m.type, m.field, m.path.join('.')])).toEqual([
      ['Building', 'timeZone', 'buildings.timeZone'],
      ['Building', 'address', 'buildings.address'],
      ['Query', 'floors', 'floors'],
    ]);
    const pruned = withoutFields(doc, missingFields(DOCUMENTED, doc.document).filter((m) => m.field === 'timeZone'));
    expect(pruned.source).toContain('buildings {\n    id\n    name\n    ...More\n  }');
    expect(pruned.operationName).toBe('B');
  });

  it('the built-in streams against the documented API: floors and floor-spaces skipped, buildings without timeZone, occupancy as declared', () => {
    const adapted = adaptToOffer(streams, DOCUMENTED, loadDocument, (p) => p.replace(/^.*\/jobs\//, 'jobs/'));
    expect(adapted.streams.map((s) => s.name)).toEqual(['buildings', 'occupancy']);
    expect(adapted.notes.map((n) => n.message)).toEqual([
      'stream buildings: the API offers no Building.timeZone, which jobs/buildings.graphql asks for: buildings.time_zone is stored NULL',
      'stream floors skipped: the API offers no floors query (Query.floors), which jobs/floors.graphql asks for; the floors table is not filled: floor spaces are reported without their floor',
      'stream floor-spaces skipped: the API offers no floorSpaces query (Query.floorSpaces), which jobs/floor-spaces.graphql asks for; reports will name floor spaces by id (no names, floors, capacity or space type)',
    ]);
    const buildings = adapted.streams[0]!;
    expect(buildings.record).toMatchObject({ id: { path: 'id' }, name: { path: 'name' }, timeZone: { path: '(unmapped)', nullable: true } });
    const sent = adapted.documents.get(buildings.document)!;
    expect(sent.source).not.toContain('timeZone');
    expect(missingFields(DOCUMENTED, sent.document)).toEqual([]);
    // The readings stream is the same object: nothing about it is optional.
    expect(adapted.streams[1]).toBe(streams.find((s) => s.name === 'occupancy'));
  });

  it('the built-in streams against an API offering the hierarchy: every stream as declared, no note', () => {
    const full = offer({
      ...Object.fromEntries([...DOCUMENTED.types].map(([t, f]) => [t, Object.fromEntries(f)])),
      Query: { ...Object.fromEntries(DOCUMENTED.types.get('Query')!), floors: 'Floor', floorSpaces: 'FloorSpace' },
      Building: { id: 'ID', name: 'String', timeZone: 'String' },
      Floor: { id: 'ID', buildingId: 'ID', name: 'String', level: 'Int' },
      FloorSpace: { id: 'ID', buildingId: 'ID', floorId: 'ID', name: 'String', capacity: 'Int', spaceType: 'String' },
    });
    const adapted = adaptToOffer(streams, full, loadDocument);
    expect(adapted.notes).toEqual([]);
    expect(adapted.documents.size).toBe(0);
    expect(adapted.streams).toEqual([...streams]);
  });

  it('a stream declared ifOffered is skipped when a field no ifOffered field covers is missing, not only its query', () => {
    const noLevel = offer({ Query: { floors: 'Floor' }, Floor: { id: 'ID', buildingId: 'ID', name: 'String' } });
    const floors = streams.filter((s) => s.name === 'floors');
    expect(adaptToOffer(floors, noLevel, loadDocument).notes.map((n) => n.detail)).toEqual([
      expect.stringMatching(/^the API offers no Floor\.level, which .*floors\.graphql asks for; the floors table is not filled/),
    ]);
  });
});
