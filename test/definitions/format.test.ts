import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { loadDefinitionsFile, parseDefinitions } from '../../src/sync/definitions.ts';
import { parseDocumentSource } from '../../src/api/documents.ts';
import { compileRecord } from '../../src/sync/records.ts';
import { BUILTIN_DEFINITIONS_FILE, buildings, occupancy, streams } from '../../jobs/index.ts';
import { syncSettings } from '../sync/helpers.ts';
import { parseDefinitionsText, refusalLines } from '../support/definitions.ts';

/** Validation of definitions files (src/sync/definitions.ts): pure, over texts held here. */

const DOCUMENTS: Record<string, string> = {
  '/defs/readings.graphql': [
    'query Readings($since: DateTime!, $until: DateTime!, $limit: Int!, $offset: Int) {',
    '  readings(since: $since, until: $until, limit: $limit, offset: $offset) { id at space { id } people status }',
    '}',
  ].join('\n'),
  '/defs/nested.graphql': [
    'query Nested($since: DateTime!, $until: DateTime!, $limit: Int!, $offset: Int) {',
    '  buildings: sites(since: $since, until: $until, limit: $limit, offset: $offset) { id spaces { id readings { ...R } } }',
    '}',
    'fragment R on Reading { id at people ... on Reading { status } }',
  ].join('\n'),
  '/defs/broken.graphql': 'query Broken {\n  readings(\n}\n',
  '/defs/hook.graphql': 'mutation R($input: RegisterWebhookInput!) { registerWebhook: createWebhook(input: $input) { id } }',
  '/defs/unaliased.graphql': 'mutation R($input: RegisterWebhookInput!) { createWebhook(input: $input) { id } }',
  '/defs/subscription.graphql':
    'mutation C($url: String!, $signatureSecret: String) { create: subscriptionCreate(input: { callbackUrl: $url, secret: $signatureSecret }) { sub: subscription { id url: callbackUrl } userErrors { field message } } }',
  '/defs/subscription-no-url.graphql': 'mutation C($callback: String!) { create: subscriptionCreate(input: { callbackUrl: $callback }) { sub: subscription { id } userErrors { message } } }',
};

const parse = (text: string) => parseDefinitionsText(DOCUMENTS, text);

const errors = (text: string): string[] => refusalLines(() => parse(text));

const VALID = `version: 1
streams:
  - name: occupancy
    document: readings.graphql
    sink: occupancy
    kind: incremental-window
    paging: { style: offset, records: readings, offset: offset, limit: limit }
    variables:
      since: '{{window.from}}'
      until: '{{window.to}}'
    record:
      floor_space_id: { path: space.id, type: id }
      observedAt: { path: at, type: timestamp }
      occupancyStatus: { path: status, type: text }
      headcount: { path: people, type: count }
    cursorField: observedAt
`;

describe('definitions files', () => {
  it('a valid file becomes streams the engine runs: column names or field names, unmapped nullable columns read as null', () => {
    const [stream] = parse(VALID).streams;
    expect(stream).toMatchObject({
      name: 'occupancy',
      document: '/defs/readings.graphql',
      kind: 'incremental',
      paging: { style: 'offset', records: { path: ['readings'], each: [] }, variableNames: { offset: 'offset', pageSize: 'limit' } },
      cursorField: 'observedAt',
    });
    expect(stream!.variables({ settings: {}, window: { from: Date.parse('2026-01-01T00:00:00.000Z'), to: Date.parse('2026-01-01T01:00:00.000Z') } })).toEqual({
      since: '2026-01-01T00:00:00.000Z',
      until: '2026-01-01T01:00:00.000Z',
    });
    const validate = compileRecord(stream!.record as never);
    expect(validate({ id: 'e1', at: '2026-01-01T00:10:00Z', space: { id: 'fs1' }, people: 2, status: 'CurrentlyOccupied' })).toEqual({
      ok: true,
      record: { floorSpaceId: 'fs1', observedAt: '2026-01-01T00:10:00.000Z', occupancyStatus: 'CurrentlyOccupied', headcount: 2, eventId: null },
    });
  });

  it('the built-in streams (jobs/streams.yaml) are the definitions occupancy-sync always had', () => {
    // The hierarchy's listings run after the buildings and before the readings; the API may lack them (ifOffered).
    expect(streams.map((s) => s.name)).toEqual(['buildings', 'floors', 'floor-spaces', 'occupancy']);
    expect(streams.filter((s) => s.ifOffered).map((s) => s.name)).toEqual(['floors', 'floor-spaces']);
    const floors = streams.find((s) => s.name === 'floors')!;
    expect(floors).toMatchObject({ sink: 'floors', kind: 'full', paging: { style: 'single', records: { path: ['floors'], each: [] } } });
    expect(floors.record).toMatchObject({ level: { path: 'level', type: 'integer', nullable: true, int4: true } });
    const spaces = streams.find((s) => s.name === 'floor-spaces')!;
    expect(spaces.record).toMatchObject({ capacity: { path: 'capacity', type: 'count', nullable: true }, floorId: { path: 'floorId', type: 'id', nullable: true } });
    expect(floors.softDelete!.isComplete({})).toBe(true);
    expect(spaces.softDelete!.isComplete({})).toBe(true);
    expect(occupancy).toMatchObject({
      sink: 'occupancy',
      kind: 'incremental',
      paging: { style: 'relay-nodes', records: { path: ['occupancy', 'nodes'], each: [] }, variableNames: { pageSize: 'first', cursor: 'after' } },
      record: {
        floorSpaceId: { path: 'floorSpaceId', type: 'id' },
        observedAt: { path: 'created', type: 'timestamp' },
        occupancyStatus: { path: 'occupancyStatus', type: 'text' },
        headcount: { path: 'headcount', type: 'count' },
        eventId: { path: 'id', type: 'id', nullable: true },
      },
      cursorField: 'observedAt',
    });
    expect(occupancy.document).toMatch(/jobs\/occupancy\.graphql$/);
    expect(occupancy.softDelete).toBeUndefined();
    const window = { from: Date.parse('2026-01-01T00:00:00.000Z'), to: Date.parse('2026-01-01T01:00:00.000Z') };
    expect(occupancy.variables({ settings: {}, window })).toEqual({ from: '2026-01-01T00:00:00.000Z', to: '2026-01-01T01:00:00.000Z' });
    expect(occupancy.window).toEqual({ endInclusive: false, stepMs: undefined, gridMs: 1, endSlackMs: 0 });
    expect(buildings).toMatchObject({ sink: 'buildings', kind: 'full', paging: { style: 'single', records: { path: ['buildings'], each: [] } } });
    expect(buildings.record).toEqual({
      id: { path: 'id', type: 'id' },
      name: { path: 'name', type: 'string' },
      // Assumed, so left out (stored NULL) when the API's buildings have no timeZone.
      timeZone: { path: 'timeZone', type: 'timeZone', nullable: true, ifOffered: true },
    });
    expect(buildings.variables({ settings: syncSettings() })).toEqual({});
    expect(buildings.variables({ settings: { buildingsNameLike: 'HQ%' } })).toEqual({ nameLike: 'HQ%' });
    expect(buildings.softDelete!.isComplete({})).toBe(true);
    expect(buildings.softDelete!.isComplete({ nameLike: null })).toBe(true);
    expect(buildings.softDelete!.isComplete({ nameLike: 'HQ%' })).toBe(false);
  });

  it('the built-in definitions pass the document checks too (commands that send requests run them on a user\'s file)', () => {
    const checked = loadDefinitionsFile(BUILTIN_DEFINITIONS_FILE, { parseDocument: parseDocumentSource });
    expect(checked.streams.map((s) => [s.name, s.document])).toEqual(streams.map((s) => [s.name, s.document]));
  });

  it('the JSON the build ships of the built-in definitions (read without the YAML parser) is the same definitions', () => {
    const text = readFileSync(BUILTIN_DEFINITIONS_FILE, 'utf8');
    const json = JSON.stringify(parseYaml(text));
    const io = { readText: (path: string) => readFileSync(path, 'utf8'), parseDocument: parseDocumentSource };
    const fromJson = parseDefinitions(json, BUILTIN_DEFINITIONS_FILE.replace(/\.yaml$/, '.json'), io);
    const fromYaml = parseDefinitions(text, BUILTIN_DEFINITIONS_FILE, io);
    // Functions aside (JSON drops them), and the soft-delete rule by what it answers.
    const shape = (d: typeof fromJson) => d.streams.map(({ variables: _v, softDelete, ...s }) => ({ ...JSON.parse(JSON.stringify(s)), softDelete: softDelete?.isComplete({}) }));
    expect(shape(fromJson)).toEqual(shape(fromYaml));
  });

  it('without a document parser (status, state) the documents are only read: no graphql needed to start', () => {
    const read = parseDefinitions(VALID.replace('document: readings.graphql', 'document: broken.graphql'), '/defs/streams.yaml', { readText: (path) => DOCUMENTS[path]! });
    expect(read.streams.map((s) => s.document)).toEqual(['/defs/broken.graphql']);
  });

  it('a file without a version, or of a version this release does not read, is refused naming the version', () => {
    expect(errors('streams: []\n')).toEqual([
      '/defs/streams.yaml:1:1: the definitions file has no version, and this release of occupancy-sync reads version 1, 2. Fix: add `version: 2` at the top',
    ]);
    expect(errors('version: 3\nstreams: []\n')).toEqual([
      "/defs/streams.yaml:1:10: the definitions file is version 3, and this release of occupancy-sync reads version 1, 2. Fix: rewrite it for this release (docs/api-assumptions.md lists each version's changes), or install the release that reads it",
    ]);
  });

  it('a signed integer only where a sink\'s column may be negative (a floor\'s level): a count column refuses it', () => {
    expect(errors(VALID.replace('headcount: { path: people, type: count }', 'headcount: { path: people, type: integer }'))).toEqual([
      expect.stringMatching(/^\/defs\/streams\.yaml:\d+:\d+: type integer is for a declared table's fields; sink occupancy's column headcount is not one\. Fix: use one of /),
    ]);
  });

  it('every problem is one line with file, line and column: unknown keys, sinks, columns, types, an unmapped or untyped cursor', () => {
    const text = VALID.replace('    kind: incremental-window\n', '    kind: incremental-window\n    schedule: hourly\n')
      .replace('occupancyStatus: { path: status, type: text }', 'occupancy_state: { path: status, type: text }')
      .replace('headcount: { path: people, type: count }', 'headcount: { path: people, type: int }')
      .replace('floor_space_id: { path: space.id, type: id }', 'floor_space_id: { path: space.id, type: id, nullable: true }');
    expect(errors(text)).toEqual([
      '/defs/streams.yaml:7:5: unknown key "schedule" in a stream. Fix: use only name, document, sink, table, kind, paging, variables, record, key, cursorField, window, softDelete, deliveries, sampling, samplingInterval, maxHold, partition, ifOffered',
      '/defs/streams.yaml:13:61: column floorSpaceId cannot be null. Fix: remove nullable',
      '/defs/streams.yaml:15:7: sink occupancy has no column "occupancy_state". Fix: map only its columns: floorSpaceId (floor_space_id), observedAt (observed_at), occupancyStatus (occupancy_status), headcount (headcount), eventId (event_id)',
      '/defs/streams.yaml:16:40: unknown type "int". Fix: use one of id, text, string, count, timeZone, timestamp',
      '/defs/streams.yaml:12:5: column occupancyStatus (occupancy_status) of sink occupancy is not mapped. Fix: add `occupancyStatus: { path: <field in the answer>, type: ... }`',
    ]);
    expect(errors(VALID.replace('observedAt: { path: at, type: timestamp }', 'observedAt: { path: at, type: string }'))).toEqual([
      '/defs/streams.yaml:16:18: cursorField observedAt is mapped as string, not a timestamp. Fix: map it with type: timestamp',
    ]);
    expect(errors(VALID.replace('cursorField: observedAt', 'cursorField: created'))).toEqual([
      '/defs/streams.yaml:16:18: cursorField "created" is not a mapped column of the record. Fix: name the timestamp column the windows are cut on, e.g. observedAt',
    ]);
    expect(errors(VALID.replace('    cursorField: observedAt\n', '    key: [floorSpaceId]\n    cursorField: observedAt\n'))).toEqual([
      '/defs/streams.yaml:16:10: the key of sink occupancy is [floorSpaceId, observedAt], not ["floorSpaceId"]. Fix: write key: [floorSpaceId, observedAt] or leave key out',
    ]);
    expect(errors(VALID.replace('sink: occupancy', 'sink: desks'))).toEqual([
      '/defs/streams.yaml:5:11: unknown sink "desks". Fix: use one of buildings, floors, floorSpaces, occupancy, or table with the stream\'s own table (docs/tables.md)',
    ]);
  });

  it('documents are checked: syntax errors at their own line and column, variables the stream sends but the operation lacks', () => {
    expect(errors(VALID.replace('document: readings.graphql', 'document: broken.graphql'))).toEqual([
      '/defs/broken.graphql:3:1: Syntax Error: Expected Name, found "}". Fix: correct the GraphQL syntax in /defs/broken.graphql',
    ]);
    expect(errors(VALID.replace('document: readings.graphql', 'document: missing.graphql'))[0]).toBe(
      '/defs/streams.yaml:4:15: cannot read the document /defs/missing.graphql (ENOENT). Fix: give its path relative to the definitions file',
    );
    expect(errors(VALID.replace('offset: offset, limit: limit', 'offset: skip, limit: limit').replace("      until: '{{window.to}}'\n", "      until: '{{window.to}}'\n      site: '{{settings.site}}'\n"))).toEqual([
      '/defs/streams.yaml:7:57: the offset variable $skip is not declared by the document\'s operation Readings (/defs/readings.graphql). Fix: declare it in the document, or name the variable the operation has',
      '/defs/streams.yaml:11:13: {{settings.site}} is not a placeholder this release knows. Fix: use one of {{window.from}}, {{window.to}}, {{settings.buildingsNameLike}}',
      '/defs/streams.yaml:11:13: the variable $site is not declared by the document\'s operation Readings (/defs/readings.graphql). Fix: declare it in the document, or name the variable the operation has',
    ]);
    expect(errors(VALID.replace("      until: '{{window.to}}'\n", ''))).toEqual([
      '/defs/streams.yaml:8:5: the document\'s operation requires $until and the stream does not send it. Fix: add `until:` under variables (or paging)',
    ]);
  });

  it('nested records: $parent reaches the enclosing lists marked with [], and no further', () => {
    const nested = VALID.replace('document: readings.graphql', 'document: nested.graphql')
      .replace('records: readings', "records: 'buildings[].spaces[].readings'")
      .replace('path: space.id', 'path: $parent.$parent.$parent.id');
    expect(errors(nested)).toEqual([
      '/defs/streams.yaml:12:31: $parent.$parent.$parent.id goes 3 list(s) up, the records path nests 2. Fix: mark the enclosing lists with [] in paging.records, or drop $parent.',
    ]);
    const ok = parse(nested.replace('$parent.$parent.$parent.id', '$parent.id')).streams[0]!;
    expect(ok.paging).toMatchObject({ style: 'offset', records: { path: ['buildings'], each: [['spaces'], ['readings']] }, variableNames: { offset: 'offset', pageSize: 'limit' } });
  });

  it('the records path and every mapped field must be selected by the document (aliases and fragments count)', () => {
    const nested = VALID.replace('document: readings.graphql', 'document: nested.graphql').replace('records: readings', "records: 'buildings[].spaces[].readings'");
    expect(parse(nested.replace('path: space.id', 'path: $parent.$parent.id')).streams).toHaveLength(1);
    expect(errors(nested.replace('path: space.id', 'path: $parent.name').replace('path: at,', 'path: observedAt,'))).toEqual([
      '/defs/streams.yaml:12:31: /defs/nested.graphql: the document does not select $parent.name for floorSpaceId. Fix: add the field to the document, or map the column to a field it selects',
      '/defs/streams.yaml:13:27: /defs/nested.graphql: the document does not select observedAt for observedAt. Fix: add the field to the document, or map the column to a field it selects',
    ]);
    expect(errors(nested.replace("'buildings[].spaces[].readings'", "'buildings[].floors[].readings'"))).toEqual([
      '/defs/streams.yaml:7:39: /defs/nested.graphql: the document does not select data.buildings[].floors, where the records are. Fix: select it in the document, or correct the paging',
    ]);
  });

  it('webhook documents replace the built-in ones by operation and must answer under the operation\'s name', () => {
    expect(parse('version: 1\nwebhooks:\n  registerWebhook: hook.graphql\n').webhooks).toEqual({ registerWebhook: { document: '/defs/hook.graphql', result: 'registerWebhook' } });
    expect(errors('version: 1\nwebhooks:\n  registerWebhook: unaliased.graphql\n  deleteWebhook: hook.graphql\n')).toEqual([
      '/defs/streams.yaml:4:3: unknown key "deleteWebhook" in webhooks. Fix: use only registerWebhook, updateWebhook, webhooks, sendTestEvent',
      '/defs/streams.yaml:3:20: /defs/unaliased.graphql: the answer has no field registerWebhook, which occupancy-sync reads. Fix: alias the platform\'s field, e.g. `registerWebhook: createWebhook(...)`, or give `result:` the path to the webhook in the answer',
    ]);
  });

  it('a webhook operation may name where the webhook and the refusals are in its answer, or be declared absent', () => {
    const text = 'version: 2\nwebhooks:\n  registerWebhook: { document: subscription.graphql, result: create.sub, errors: create.userErrors }\n  sendTestEvent: absent\n';
    expect(parse(text).webhooks).toEqual({
      registerWebhook: { document: '/defs/subscription.graphql', result: 'create.sub', errors: 'create.userErrors' },
      sendTestEvent: { absent: true },
    });
    expect(errors(text.replace('errors: create.userErrors', 'errors: create.problems'))).toEqual([
      '/defs/streams.yaml:3:32: /defs/subscription.graphql: the answer has no create.problems, which occupancy-sync reads. Fix: select it, or correct the path',
    ]);
    expect(errors(text.replace('subscription.graphql', 'subscription-no-url.graphql'))).toEqual([
      '/defs/streams.yaml:3:32: /defs/subscription-no-url.graphql: the operation declares none of $input, $url, which occupancy-sync sends. Fix: declare $input (or another of them) and pass it to the platform\'s argument',
      '/defs/streams.yaml:3:32: /defs/subscription-no-url.graphql: the operation requires $callback, which occupancy-sync does not send. Fix: send only $input, $url, $eventTypes, $additionalHeaders, $signatureSecret, $compress',
    ]);
  });

  it('a JSON file reads the same (JSON is YAML), errors located alike', () => {
    const json = JSON.stringify({ version: 1, webhooks: { registerWebhook: 'hook.graphql' } }, null, 2);
    expect(parse(json).webhooks).toEqual({ registerWebhook: { document: '/defs/hook.graphql', result: 'registerWebhook' } });
    expect(errors(json.replace('"version": 1', '"version": 3'))[0]).toMatch(/^\/defs\/streams\.yaml:2:14: the definitions file is version 3, /);
  });

  it('text that is not YAML is refused at its line', () => {
    expect(errors('version: 1\nstreams:\n  - name: [occupancy\n')[0]).toMatch(/^\/defs\/streams\.yaml:\d+:\d+: not valid YAML \(.+\)\. Fix: correct the syntax$/);
    // An alias whose anchor is not set before it: the parser throws no place, so it is found.
    expect(errors('version: 1\nstreams:\n  - name: occupancy\n    query: *q\n')).toEqual(['/defs/streams.yaml:4:12: Unresolved alias (the anchor must be set before the alias): q. Fix: set each anchor (&name) before an alias (*name) uses it, or write the value out']);
  });
});
