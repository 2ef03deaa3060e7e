import { describe, expect, it } from 'vitest';
import { mergeStreams } from '../../src/sync/definition-partitions.ts';
import { compileRecord, partitionContext } from '../../src/sync/records.ts';
import { partitionStateKey, runKeyOf, type AnyStream } from '../../src/sync/stream.ts';
import { streams as builtins } from '../../jobs/index.ts';
import { parseDefinitionsText, refusalLines } from '../support/definitions.ts';

/** A fan-out stream's `partition` (src/sync/definition-partitions.ts): pure, over texts held here. */

const DOCUMENTS: Record<string, string> = {
  '/defs/spaces.graphql': 'query Spaces { floorSpaces { id name buildingId } }',
  '/defs/space-readings.graphql': [
    'query SpaceReadings($spaceId: ID!, $from: DateTime!, $to: DateTime!, $first: Int, $after: String) {',
    '  floorSpaceOccupancy(floorSpaceId: $spaceId, from: $from, to: $to, first: $first, after: $after) {',
    '    nodes { id status headcount created }',
    '    pageInfo { hasNextPage endCursor }',
    '  }',
    '}',
  ].join('\n'),
};

const SPACES = `  - name: floor-spaces
    document: spaces.graphql
    sink: floorSpaces
    kind: full
    paging: { style: single, records: floorSpaces, maxPageSize: 10000 }
    record:
      id: { path: id, type: id }
      name: { path: name, type: string, nullable: true }
      buildingId: { path: buildingId, type: id, nullable: true }
    softDelete: { completeWhenUnset: [] }
`;

const READINGS = `  - name: space-readings
    document: space-readings.graphql
    sink: occupancy
    kind: incremental
    partition: { parent: floor-spaces, parentKey: id, variable: spaceId }
    paging: { style: relay-nodes, connection: floorSpaceOccupancy, variables: { pageSize: first, cursor: after } }
    variables: { from: '{{window.from}}', to: '{{window.to}}' }
    record:
      floorSpaceId: { path: $partition, type: id }
      observedAt: { path: created, type: timestamp }
      occupancyStatus: { path: status, type: text }
      headcount: { path: headcount, type: count }
      eventId: { path: id, type: id, nullable: true }
    cursorField: observedAt
`;

const parse = (text: string, under: ReadonlyArray<AnyStream> = []) => parseDefinitionsText(DOCUMENTS, text, under);

const errors = (text: string, under: ReadonlyArray<AnyStream> = []): string[] => refusalLines(() => parse(text, under));

describe('fan-out streams in the definitions format', () => {
  it('resolves a partition to its parent stream, sink and field', () => {
    const defs = parse(`version: 2\nstreams:\n${SPACES}${READINGS}`);
    const readings = defs.streams.find((s) => s.name === 'space-readings')!;
    expect(readings.partition).toEqual({ parent: 'floor-spaces', parentSink: 'floorSpaces', parentKey: 'id', variable: 'spaceId' });
    // The partition's variable is sent by the run, not by the stream's variables.
    expect(readings.variables({ settings: {}, window: { from: 0, to: 1000 } })).toEqual({ from: '1970-01-01T00:00:00.000Z', to: '1970-01-01T00:00:01.000Z' });
  });

  it('accepts the parent key by its column name and a parent among the streams the file is laid over', () => {
    const spaces = parse(`version: 2\nstreams:\n${SPACES}`).streams;
    const defs = parse(`version: 2\nstreams:\n${READINGS.replace('parentKey: id', 'parentKey: floor_space_id')}`, [...builtins, ...spaces]);
    expect(defs.streams[0]!.partition).toMatchObject({ parent: 'floor-spaces', parentKey: 'id' });
  });

  it('reads $partition from the parent key the partition sent', () => {
    const readings = parse(`version: 2\nstreams:\n${SPACES}${READINGS}`).streams[1]!;
    const validate = compileRecord(readings.record as never);
    const node = { id: 'r1', status: 'CurrentlyOccupied', headcount: 2, created: '2026-01-08T10:00:00.000Z' };
    expect(validate(node, partitionContext('space-a'))).toEqual({
      ok: true,
      record: { floorSpaceId: 'space-a', observedAt: '2026-01-08T10:00:00.000Z', occupancyStatus: 'CurrentlyOccupied', headcount: 2, eventId: 'r1' },
    });
    // Without a partition there is no parent key: the record is rejected, never stored under an invented id.
    expect(validate(node)).toMatchObject({ ok: false, reason: expect.stringContaining('$partition') });
  });

  it('refuses an unknown parent stream, naming the streams in force', () => {
    expect(errors(`version: 2\nstreams:\n${READINGS.replace('parent: floor-spaces', 'parent: rooms')}`, builtins)).toEqual([
      expect.stringMatching(/^\/defs\/streams\.yaml:7:26: no stream rooms to take the parents from \(streams in force: buildings, floors, floor-spaces, occupancy, space-readings\)\. Fix: /),
    ]);
  });

  it('runs a parent declared after its fan-out stream before it, built-in streams replaced in their place', () => {
    const defs = parse(`version: 2\nstreams:\n${READINGS.replace('name: space-readings', 'name: occupancy')}${SPACES}`, builtins);
    expect(mergeStreams(builtins, defs.streams).map((s) => s.name)).toEqual(['buildings', 'floors', 'floor-spaces', 'occupancy']);
  });

  it('refuses a circle of parents', () => {
    const a = READINGS.replace('parent: floor-spaces', 'parent: other');
    const b = READINGS.replace('name: space-readings', 'name: other').replace('parent: floor-spaces', 'parent: space-readings');
    expect(errors(`version: 2\nstreams:\n${a}${b}`)).toEqual([
      expect.stringMatching(/:7:26: the parents form a circle \(space-readings -> other -> space-readings\)/),
      expect.stringMatching(/:21:26: the parents form a circle \(other -> space-readings -> other\)/),
    ]);
  });

  it('refuses a partition variable the document does not declare', () => {
    const [line] = errors(`version: 2\nstreams:\n${SPACES}${READINGS.replace('variable: spaceId', 'variable: floorSpaceId')}`);
    expect(line).toMatch(/:17:\d+: the partition variable \$floorSpaceId is not declared by the document's operation SpaceReadings/);
  });

  it('refuses a partition variable the stream sends otherwise too', () => {
    const [line] = errors(`version: 2\nstreams:\n${SPACES}${READINGS.replace('variable: spaceId', 'variable: from')}`);
    expect(line).toMatch(/\$from is sent by the stream's variables or paging already/);
  });

  it('refuses a document variable nobody sends when the partition is missing', () => {
    const text = `version: 2\nstreams:\n${SPACES}${READINGS.replace(/ {4}partition: .*\n/, '').replace('path: $partition', 'path: id')}`;
    expect(errors(text).join('\n')).toMatch(/the document's operation requires \$spaceId and the stream does not send it/);
  });

  it('refuses $partition in a stream without a partition', () => {
    const text = `version: 2\nstreams:\n${SPACES}${READINGS.replace(/ {4}partition: .*\n/, '')}`;
    expect(errors(text)).toContainEqual(expect.stringMatching(/:20:29: \$partition is the parent key of a fan-out stream, and this stream has no partition\. Fix: declare partition/));
  });

  it('refuses a parent key the parent sink lacks, a parent that keeps no listing, and itself as parent', () => {
    expect(errors(`version: 2\nstreams:\n${SPACES}${READINGS.replace('parentKey: id', 'parentKey: spaceId')}`)).toEqual([
      expect.stringMatching(/sink floorSpaces of stream floor-spaces has no field spaceId\. Fix: name one of its fields, e.g\. id$/),
    ]);
    expect(errors(`version: 2\nstreams:\n${READINGS.replace('parent: floor-spaces', 'parent: occupancy')}`, builtins)).toEqual([
      expect.stringMatching(/stream occupancy writes sink occupancy, whose rows are not a listing that can drop a parent/),
    ]);
    expect(errors(`version: 2\nstreams:\n${READINGS.replace('parent: floor-spaces', 'parent: space-readings')}`)).toEqual([
      expect.stringMatching(/stream space-readings cannot be its own parent/),
    ]);
  });

  it('refuses unknown and missing keys in partition', () => {
    const lines = errors(`version: 2\nstreams:\n${SPACES}${READINGS.replace('partition: { parent: floor-spaces, parentKey: id, variable: spaceId }', 'partition: { parent: floor-spaces, field: id, variable: spaceId }')}`);
    expect(lines).toContainEqual(expect.stringMatching(/unknown key "field" in partition\. Fix: use only parent, parentKey, variable/));
    expect(lines).toContainEqual(expect.stringMatching(/partition has no parentKey\. Fix: add parentKey/));
  });
});

describe('partition state keys', () => {
  it('names the run key and the parent, and gives the run key back', () => {
    expect(partitionStateKey('space-readings', 'a1')).toBe('space-readings/a1');
    expect(partitionStateKey('space-readings#backfill', 'a/1')).toBe('space-readings#backfill/a/1');
    expect(runKeyOf('space-readings#backfill/a/1')).toBe('space-readings#backfill');
    expect(runKeyOf('occupancy#backfill')).toBe('occupancy#backfill');
  });
});
