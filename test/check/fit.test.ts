import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildSchema } from 'graphql';
import { afterEach, describe, expect, it } from 'vitest';
import { formatFinding } from '../../src/api/diagnose.ts';
import { loadDocument, parseDocumentSource } from '../../src/api/documents.ts';
import { fitStream } from '../../src/app/check-fit.ts';
import { DefinitionPlaces } from '../../src/app/check-places.ts';
import { loadDefinitionsFile } from '../../src/sync/definitions.ts';
import { tempDir } from '../support/tmp.ts';

/**
 * The comparison of a stream's declarations with a schema's types (src/app/check-fit.ts), rule by rule, on schemas
 * the sandbox does not serve: each finding is the line check prints, at its place in the definitions or the document.
 */

const SDL = `
scalar DateTime
scalar Long
enum Kind { BUSY FREE }
type Query { readings(from: DateTime!, to: DateTime!, size: Int, page: Int, fromMs: String): ReadingPage! }
type ReadingPage { items: [Reading!]! total: Int! more: String }
type Reading { id: ID! space: Int! busy: Boolean! kind: Kind! people: Long! at: Int! atText: String! tags: [Tag!]! }
type Tag { name: String! }
`;

const DOCUMENT = `query Readings($from: DateTime!, $to: DateTime!, $size: Int, $page: Int) {
  readings(from: $from, to: $to, size: $size, page: $page) {
    total
    items { id space busy kind people at atText tags { name } }
  }
}
`;

describe('declared record types against the schema', () => {
  let tmp: ReturnType<typeof tempDir> | undefined;
  afterEach(() => tmp?.remove());

  /** The findings for one occupancy stream whose `record` (and other keys) are `yaml`, as check prints them. */
  function fit(record: string, options: { document?: string; paging?: string; variables?: string } = {}) {
    tmp = tempDir('fit-');
    writeFileSync(join(tmp.dir, 'readings.graphql'), options.document ?? DOCUMENT);
    const file = join(tmp.dir, 'defs.yaml');
    writeFileSync(
      file,
      `version: 2
streams:
  - name: occupancy
    document: readings.graphql
    sink: occupancy
    kind: incremental
    paging: ${options.paging ?? '{ style: page-number, records: readings.items, total: readings.total, variables: { pageSize: size, page: page } }'}
    variables: ${options.variables ?? "{ from: '{{window.from}}', to: '{{window.to}}' }"}
    record:
${record}
    cursorField: observedAt
`,
    );
    const stream = loadDefinitionsFile(file, { parseDocument: parseDocumentSource }).streams[0]!;
    const place = new DefinitionPlaces([{ path: file, label: 'defs.yaml' }]).stream('occupancy');
    const doc = { ...loadDocument(stream.document), file: 'readings.graphql' };
    const result = fitStream(buildSchema(SDL), stream, doc, place, {});
    return { problems: result.problems.map(formatFinding), warnings: result.warnings.map(formatFinding) };
  }

  const base = (over: Record<string, string>) =>
    Object.entries({
      floorSpaceId: '{ path: id, type: id }',
      observedAt: '{ path: atText, type: timestamp }',
      occupancyStatus: '{ path: kind, type: text, map: { BUSY: CurrentlyOccupied, FREE: Unoccupied } }',
      headcount: "{ path: at, type: count }",
      ...over,
    })
      .map(([k, v]) => `      ${k}: ${v}`)
      .join('\n');

  it('a fitting declaration has no finding', () => {
    expect(fit(base({}))).toEqual({ problems: [], warnings: [] });
  });

  it('an ISO timestamp mapped to an Int, and epoch milliseconds mapped to an Int', () => {
    expect(fit(base({ observedAt: '{ path: at, type: timestamp }' })).problems).toEqual([
      'defs.yaml:11:37: stream occupancy: observedAt is a timestamp in format iso mapped to an Int (Reading.at is Int!): the API answers numbers. Fix: declare format: epoch-seconds or epoch-milliseconds for it',
    ]);
    expect(fit(base({ observedAt: '{ path: at, type: timestamp, format: epoch-milliseconds }' })).problems[0]).toMatch(/observedAt is a timestamp in epoch-milliseconds mapped to an Int \(Reading\.at is Int!\), whose 32 bits hold no epoch milliseconds/);
    expect(fit(base({ observedAt: '{ path: at, type: timestamp, format: epoch-seconds }' })).problems).toEqual([]);
  });

  it('an id mapped to an Int without a map; a Boolean with a map that misses a value', () => {
    expect(fit(base({ floorSpaceId: '{ path: space, type: id }' })).problems).toEqual([
      'defs.yaml:10:42: stream occupancy: floorSpaceId is declared id (text) and mapped to an Int (Reading.space is Int!): the API answers numbers. Fix: map a text field, or translate the values with a map (map: { ... })',
    ]);
    expect(fit(base({ occupancyStatus: "{ path: busy, type: text, map: { 'true': CurrentlyOccupied } }" })).warnings).toEqual([
      "defs.yaml:12:44: stream occupancy: occupancyStatus is mapped to a Boolean (Reading.busy is Boolean!), and its map does not translate false. Fix: add 'false': ... to the map",
    ]);
  });

  it('an enum whose values the map does not all translate; a count from a custom scalar', () => {
    const result = fit(base({ occupancyStatus: '{ path: kind, type: text, map: { BUSY: CurrentlyOccupied } }', headcount: '{ path: people, type: count }' }));
    expect(result.problems).toEqual([]);
    expect(result.warnings).toEqual([
      'defs.yaml:12:44: stream occupancy: occupancyStatus is mapped to an enum (Reading.kind is Kind!), whose values FREE its map does not translate: records with them will be rejected. Fix: add them to the map (FREE: ...)',
      'defs.yaml:13:40: stream occupancy: headcount is a count mapped to a custom scalar (Reading.people is Long!), whose values the schema does not describe. Fix: make sure it answers whole numbers (the probe below reads real records)',
    ]);
  });

  it('a field read through a list, and a page number declared otherwise than Int', () => {
    expect(fit(base({ eventId: '{ path: tags.name, type: id, nullable: true }' })).problems).toEqual([
      'defs.yaml:14:24: stream occupancy: eventId is read from tags.name, through Reading.tags, which is a list ([Tag!]!): a column holds one value. Fix: map a field outside the list, or walk the list with [] in the paging records path',
    ]);
    const document = DOCUMENT.replace('$page: Int', '$page: ID').replace('page: $page', 'page: $page');
    expect(fit(base({}), { document }).problems).toEqual([
      'readings.graphql:1:62: stream occupancy: $page carries a page number (paging.variables.page) and is declared ID; a page number is an Int. Fix: declare $page: Int (as the argument it is passed to is typed), or name the right variable in paging.variables.page',
    ]);
  });

  it('a window bound sent as a number where the API takes text, and paging information of the wrong type', () => {
    // $from goes to an argument of type String; $to to a DateTime (a custom scalar: any value may be right).
    const document = DOCUMENT.replace('$from: DateTime!', '$from: String').replace('readings(from: $from, to: $to,', 'readings(from: $to, to: $to, fromMs: $from,');
    const result = fit(base({}), { document, variables: "{ from: '{{window.from | epoch-milliseconds}}', to: '{{window.to | epoch-milliseconds}}' }" });
    expect(result.problems).toEqual([
      "defs.yaml:8:24: stream occupancy: a window bound is sent to $from (String) as a number (1767225600000 for 2026-01-01T00:00:00.000Z), and the API takes text there. Fix: send it as text: add | string ('{{window.from | epoch-milliseconds | string}}')",
    ]);
    const paged = fit(base({}), { document: DOCUMENT.replace('total\n', 'total\n    more\n'), paging: '{ style: page-number, records: readings.items, total: readings.more, variables: { pageSize: size, page: page } }' });
    expect(paged.problems).toEqual([
      'readings.graphql:4:5: stream occupancy: data.readings.more is String, and page-number paging reads a Int there. Fix: correct the paging in the definitions, or select the field that carries it',
    ]);
  });
});
