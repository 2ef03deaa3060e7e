import { buildSchema } from 'graphql';
import { describe, expect, it } from 'vitest';
import { parseDocumentSource } from '../../src/api/documents.ts';
import { fitStream } from '../../src/app/check-fit.ts';
import { compileRecord } from '../../src/sync/records.ts';
import { keyFieldsOf, targetOf } from '../../src/sync/stream.ts';
import { parseDefinitionsText, refusalLines } from '../support/definitions.ts';

/**
 * `sink: table` in the definitions format (docs/tables.md): the stream names its table and key, its record's fields are
 * the columns; everything is checked at load, one line per problem.
 */

const DOCUMENTS: Record<string, string> = {
  '/defs/desks.graphql': 'query Desks { desks { id name seats bookable floor { id } installed weight } }',
  '/defs/sensors.graphql': [
    'query Sensors($from: DateTime!, $to: DateTime!, $first: Int, $after: String) {',
    '  sensorReadings(from: $from, to: $to, first: $first, after: $after) { nodes { sensor at value } pageInfo { hasNextPage endCursor } }',
    '}',
  ].join('\n'),
};

const parse = (text: string) => parseDefinitionsText(DOCUMENTS, text);

const errors = (text: string): string[] => refusalLines(() => parse(text));

const DESKS = `version: 2
streams:
  - name: desks
    document: desks.graphql
    sink: table
    table: desks
    key: [id]
    kind: full
    paging: { style: single, records: desks, maxPageSize: 5000 }
    record:
      id: { path: id, type: id }
      name: { path: name, type: string, nullable: true }
      seats: { path: seats, type: count, nullable: true }
      bookable: { path: bookable, type: boolean }
      floorId: { path: floor.id, type: id, nullable: true }
      installedAt: { path: installed, type: timestamp, format: epoch-seconds, nullable: true }
      weight: { path: weight, type: number, nullable: true }
    softDelete: { completeWhenUnset: [] }
`;

const SENSORS = `version: 2
streams:
  - name: sensor-readings
    document: sensors.graphql
    sink: table
    table: sensor_readings
    key: [sensorId, observedAt]
    kind: incremental
    paging: { style: relay-nodes, connection: sensorReadings, variables: { pageSize: first, cursor: after }, maxPageSize: 1000 }
    variables: { from: '{{window.from}}', to: '{{window.to}}' }
    record:
      sensorId: { path: sensor, type: id }
      observedAt: { path: at, type: timestamp }
      value: { path: value, type: integer }
    cursorField: observedAt
`;

describe('declared tables in the definitions format', () => {
  it('a full stream declares its table, key and typed columns: the record fields are the columns', () => {
    const [stream] = parse(DESKS).streams;
    expect(stream!.sink).toBe('table');
    expect(targetOf(stream!)).toEqual({
      name: 'desks',
      key: ['id'],
      columns: [
        { field: 'id', column: 'id', type: 'text' },
        { field: 'name', column: 'name', type: 'text' },
        { field: 'seats', column: 'seats', type: 'integer' },
        { field: 'bookable', column: 'bookable', type: 'boolean' },
        { field: 'floorId', column: 'floor_id', type: 'text' },
        { field: 'installedAt', column: 'installed_at', type: 'timestamp' },
        { field: 'weight', column: 'weight', type: 'double' },
      ],
      stream: { name: 'desks', incremental: false },
    });
    expect(keyFieldsOf(stream!)).toEqual(['id']);
    expect(stream!.softDelete?.isComplete({})).toBe(true);
    const validate = compileRecord(stream!.record as never);
    expect(validate({ id: 'd-1', name: '', seats: 2, bookable: false, floor: { id: 'f-1' }, installed: 1767225600, weight: 12.5 })).toEqual({
      ok: true,
      record: { id: 'd-1', name: '', seats: 2, bookable: false, floorId: 'f-1', installedAt: '2026-01-01T00:00:00.000Z', weight: 12.5 },
    });
    // Nothing coerced: a string is not a boolean, nor a number a string.
    expect(validate({ id: 'd-1', bookable: 'true' })).toEqual({ ok: false, reason: 'bookable: expected true or false, got the string "true"' });
  });

  it('an incremental stream keys its table on several fields and cuts windows on a timestamp field', () => {
    const [stream] = parse(SENSORS).streams;
    expect(stream!.kind).toBe('incremental');
    expect(stream!.cursorField).toBe('observedAt');
    expect(targetOf(stream!)).toMatchObject({ name: 'sensor_readings', key: ['sensorId', 'observedAt'] });
    const validate = compileRecord(stream!.record as never);
    expect(validate({ sensor: 's', at: '2026-01-01T00:00:00Z', value: -5_000_000_000 })).toMatchObject({ ok: true });
    expect(validate({ sensor: 's', at: '2026-01-01T00:00:00Z', value: 1.5 })).toMatchObject({ ok: false, reason: expect.stringMatching(/^value: expected a whole number/) });
  });

  it('refuses a table without its name or key, an unsafe or reserved name, a key that is not a declared non-null field', () => {
    expect(errors(DESKS.replace('    table: desks\n', '').replace('    key: [id]\n', ''))).toEqual([
      expect.stringMatching(/a stream of sink table has no table\. Fix: add `table: <name>`/),
    ]);
    expect(errors(DESKS.replace('    key: [id]\n', ''))).toEqual([expect.stringMatching(/a stream of sink table has no key\. Fix: add `key:/)]);
    expect(errors(DESKS.replace('table: desks', 'table: Desks; DROP'))).toEqual([expect.stringMatching(/table .* must be lower case letters, digits and underscores/)]);
    expect(errors(DESKS.replace('table: desks', 'table: budgets'))).toEqual([expect.stringMatching(/table budgets would be api_budgets, one of occupancy-sync's own tables/)]);
    expect(errors(DESKS.replace('key: [id]', 'key: [desk]'))).toEqual([expect.stringMatching(/key field desk is not a field of the record/)]);
    expect(errors(DESKS.replace('key: [id]', 'key: [name]'))).toEqual([expect.stringMatching(/key field name is declared nullable, and a row's key can never be null/)]);
  });

  it('refuses fields that would collide with the store\'s columns or with each other, types a built-in sink has not, a table on another sink', () => {
    expect(errors(DESKS.replace('      weight:', '      lastSeenAt: { path: id, type: id }\n      weight:'))).toEqual([
      expect.stringMatching(/field lastSeenAt would be column last_seen_at, which every declared table keeps for itself/),
    ]);
    expect(errors(DESKS.replace('      weight:', '      floor_id: { path: id, type: id }\n      weight:'))).toEqual([expect.stringMatching(/fields floorId and floor_id would both be column floor_id/)]);
    expect(errors(DESKS.replace('type: boolean', 'type: flag'))).toEqual([expect.stringMatching(/unknown type "flag"\. Fix: use one of id, text, string, count, timeZone, timestamp, integer, number, boolean/)]);
    expect(errors(DESKS.replace('sink: table', 'sink: buildings'))).toEqual(expect.arrayContaining([expect.stringMatching(/only a stream of sink table declares a table/)]));
    const twice = DESKS + DESKS.slice(DESKS.indexOf('  - name: desks')).replace('name: desks', 'name: desks-again');
    expect(errors(twice)).toEqual([expect.stringMatching(/:22:12: table desks is declared by stream desks too: one declaration per table\. Fix: give this stream's table another name \(table: desks_desks_again\)/)]);
  });
});

describe('check compares a declared table\'s field types with the schema', () => {
  const SDL = `
scalar Long
type Query { desks: [Desk!]! }
type Floor { id: ID! }
type Desk { id: ID! name: String seats: Int bookable: Boolean! floor: Floor installed: Int weight: Float }
`;
  const findings = (text: string) => {
    const [stream] = parse(text).streams;
    const doc = parseDocumentSource(DOCUMENTS[stream!.document]!, 'desks.graphql');
    const fit = fitStream(buildSchema(SDL), stream!, doc, undefined, {});
    return [...fit.problems, ...fit.warnings].map((f) => f.message);
  };

  it('a boolean from a Boolean, a number from a Float, an integer from an Int fit; across kinds they are named', () => {
    expect(findings(DESKS)).toEqual([]);
    expect(findings(DESKS.replace('weight: { path: weight, type: number', 'weight: { path: weight, type: integer'))).toEqual([
      expect.stringMatching(/^weight is an integer mapped to a Float .*a value with a fraction will be rejected/),
    ]);
    expect(findings(DESKS.replace('bookable: { path: bookable, type: boolean }', 'bookable: { path: name, type: boolean }'))).toEqual([
      expect.stringMatching(/^bookable is a boolean mapped to a String .*which holds no true or false/),
    ]);
  });
});
