import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.ts';
import type { ApiVariant } from '../../src/sandbox/api-variants.ts';
import { BUILDINGS_CAP } from '../../src/sandbox/index.ts';
import { failures, FIXTURES, fixtureCopy, positionOf, sandboxFor, type Target } from './support.ts';

/**
 * `check` fails, with one clear line (what, where, the fix), on each way a definitions file can be wrong for the API
 * it meets, each broken in a copy of a variant's correct definitions (which pass: test/check/variants.test.ts).
 */
describe('check names what is wrong in the definitions in force', () => {
  let target: Target | undefined;
  let copy: ReturnType<typeof fixtureCopy> | undefined;
  afterEach(async () => {
    await target?.sandbox.close();
    copy?.remove();
    target = copy = undefined;
  });

  async function broken(variant: ApiVariant, edit: (c: NonNullable<typeof copy>) => void, args: string[] = []) {
    copy = fixtureCopy(variant);
    edit(copy);
    target = await sandboxFor(variant);
    return target.run(['check', ...args], { DEFINITIONS_FILE: copy.dir });
  }

  it('a count mapped to an enum: the schema type at the mapping, and the records the probe rejects', async () => {
    const { code, stdout } = await broken('edges', (c) => c.edit('occupancy-sync.streams.yaml', 'headcount: { path: headcount', 'headcount: { path: status'));
    const at = positionOf(copy!.file, 'type: count');
    expect(failures(stdout)).toEqual([
      `${copy!.file}:${at.line}:${at.column + 6}: stream occupancy: headcount is a count mapped to an enum (OccupancyEvent.status is OccupancyState!), which holds no whole numbers. Fix: map headcount to an Int field (\`npx occupancy-sync schema OccupancyEvent\` lists them)`,
      expect.stringMatching(
        new RegExp(`^${copy!.file}:${at.line}:${at.column + 6}: stream occupancy: the probe of window \\[[^\\]]+\\): (\\d+) of \\1 record\\(s\\) break their declaration \\(field headcount\\): status: expected a whole number from 0 to 2,147,483,647, got the string "(CURRENTLY_OCCUPIED|NOT_OCCUPIED)"`),
      ),
    ]);
    expect(code).toBe(ExitCode.FAILURE);
  });

  it('a paging variable of the wrong type: the document line, besides the schema mismatch', async () => {
    const { code, stdout } = await broken('edges', (c) => c.edit('occupancy-events.graphql', '$first: Int!', '$first: String!'));
    const doc = join(copy!.dir, 'occupancy-events.graphql');
    const at = positionOf(doc, '$first: String!');
    expect(failures(stdout)).toContain(
      `${doc}:${at.line}:${at.column}: stream occupancy: $first carries a page size (paging.variables.pageSize) and is declared String!; a page size is an Int. Fix: declare $first: Int (as the argument it is passed to is typed), or name the right variable in paging.variables.pageSize`,
    );
    expect(failures(stdout)).toContain(
      `${doc}:${at.line}:${at.column}: Variable "$first" of type "String!" used in position expecting type "Int!". Fix: adapt ${doc} to the live schema (\`npx occupancy-sync schema Query\` lists the queries, \`npx occupancy-sync schema NAME\` one of them or a type)`,
    );
    expect(stdout).toContain('  skip  stream occupancy: not probed: its document does not match the live schema');
    expect(code).toBe(ExitCode.FAILURE);
  });

  it("a page size the API refuses for a run (no maxPageSize, SYNC_PAGE_SIZE 1000 against first <= 100): the API's limit as the fix", async () => {
    const { code, stdout } = await broken('edges', (c) => c.edit('occupancy-sync.streams.yaml', /\n {6}maxPageSize: 100/, ''));
    const at = positionOf(copy!.file, 'style: relay-edges');
    expect(failures(stdout)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^${copy!.file}:${at.line}:${at.column}: stream occupancy: the probe of window \\[[^\\]]+\\): with the page size a run asks for \\(1000\\): the API refused the request \\(\\$first = 1000\\): first must be between 1 and 100, got 1000\\. Fix: set \`paging\\.maxPageSize: 100\` for stream occupancy in the definitions file$`,
        ),
      ),
    ]);
    expect(code).toBe(ExitCode.FAILURE);
  });

  it('a connection whose document selects no pageInfo: the definitions line, before any request (exit 78), in --json too', async () => {
    const edit = (c: NonNullable<typeof copy>) => c.edit('occupancy-events.graphql', /\n {4}pageInfo \{\n {6}hasNextPage\n {6}endCursor\n {4}\}/, '');
    const { code, stdout, stderr } = await broken('edges', edit);
    const at = positionOf(copy!.file, 'style: relay-edges');
    const line = `${copy!.file}:${at.line}:${at.column}: ${join(copy!.dir, 'occupancy-events.graphql')}: the document does not select data.occupancyEvents.pageInfo.hasNextPage, which relay-edges paging reads to find the next page. Fix: select it in the document (without it the stream could never ask for a second page)`;
    expect(stderr).toBe(`occupancy-sync: ${line}\n`);
    expect(stdout).toBe('');
    expect(code).toBe(ExitCode.CONFIG);
    expect(target!.sandbox.stats.authCalls).toBe(0);

    const json = await target!.run(['check', '--json'], { DEFINITIONS_FILE: copy!.dir });
    expect(JSON.parse(json.stdout)).toEqual({
      ok: false,
      exitCode: ExitCode.CONFIG,
      problems: [
        {
          kind: 'definitions',
          file: copy!.file,
          line: at.line,
          column: at.column,
          message: `${join(copy!.dir, 'occupancy-events.graphql')}: the document does not select data.occupancyEvents.pageInfo.hasNextPage, which relay-edges paging reads to find the next page`,
          fix: 'select it in the document (without it the stream could never ask for a second page)',
        },
      ],
      customers: [],
    });
    expect(json.code).toBe(ExitCode.CONFIG);
  });

  it('a mapped field the live schema lacks: the document line and the mapping, naming the fields the type has', async () => {
    const { code, stdout } = await broken('edges', (c) => {
      c.edit('occupancy-sync.streams.yaml', 'path: status', 'path: state');
      c.edit('occupancy-events.graphql', /\n {8}status\n/, '\n        state\n');
    });
    const doc = join(copy!.dir, 'occupancy-events.graphql');
    const inDoc = positionOf(doc, 'state');
    const mapping = positionOf(copy!.file, 'path: state');
    expect(failures(stdout)).toEqual([
      'schema (introspection): 1 of 5 document(s) in force do not match the live schema',
      `${doc}:${inDoc.line}:${inDoc.column}: Cannot query field "state" on type "OccupancyEvent". Did you mean "status"? Fix: adapt ${doc} to the live schema (\`npx occupancy-sync schema Query\` lists the queries, \`npx occupancy-sync schema NAME\` one of them or a type)`,
      `${copy!.file}:${mapping.line}:${mapping.column + 6}: stream occupancy: occupancyStatus is read from state, and the live schema's OccupancyEvent has no field state (its fields: id, floorSpace, status, headcount, observedAt). Fix: map occupancyStatus to a field the type has, and select it in ${doc}`,
    ]);
    expect(code).toBe(ExitCode.FAILURE);
  });

  it('an incremental single-page stream whose probe page holds the API\'s cap (capped): truncated, at the window step', async () => {
    // The fixture's 15-minute windows hold 36 readings; six hours hold 864, cut at 500.
    const { code, stdout } = await broken('capped', (c) => c.edit('occupancy-sync.streams.yaml', 'step: 15m', 'step: 6h'));
    const at = positionOf(copy!.file, '6h');
    expect(failures(stdout)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^${copy!.file}:${at.line}:${at.column}: stream occupancy: the probe of window \\[[^\\]]+\\): the answer broke the page contract \\(truncated\\): the answer holds 500 records, the most the API answers \\(maxPageSize 500\\), and a single page cannot ask for more: records may be missing\\. Fix: give the stream a smaller window`,
        ),
      ),
    ]);
    expect(code).toBe(ExitCode.FAILURE);
  });

  it('a window bound in the wrong format (ISO where the token API takes epoch seconds): the variable, and the API\'s refusal', async () => {
    const { code, stdout } = await broken('token', (c) => c.edit('occupancy-sync.streams.yaml', '{{window.from | epoch-seconds}}', '{{window.from}}'));
    const at = positionOf(copy!.file, "'{{window.from}}'");
    const lines = failures(stdout);
    expect(lines[0]).toBe(
      `${copy!.file}:${at.line}:${at.column}: stream occupancy: a window bound is sent to $startTime (Int!) as ISO text (e.g. "2026-01-01T00:00:00.000Z"), and the API takes a number there. Fix: send it as a number in the unit the API reads, e.g. '{{window.from | epoch-seconds}}' (or epoch-milliseconds)`,
    );
    expect(lines[1]).toMatch(/stream occupancy: the probe of window \[[^\]]+\]: the API refused the request \(\$startTime = "[^"]+"\): Variable "\$startTime" has invalid value: Int cannot represent non-integer value/);
    expect(lines).toHaveLength(2);
    expect(code).toBe(ExitCode.FAILURE);
  });

  it('a webhook operation the platform lacks (edges: no sendTestEvent) fails unless declared absent, which exits 0', async () => {
    const { code, stdout } = await broken('edges', (c) => c.edit('occupancy-sync.streams.yaml', /\n {2}sendTestEvent: absent\n/, '\n'));
    expect(failures(stdout)).toEqual([
      'schema (introspection): 1 of 6 document(s) in force do not match the live schema',
      'src/webhooks/graphql/sendTestEvent.graphql:3:3: Cannot query field "sendTestEvent" on type "Mutation". Fix: give the platform\'s operation in a definitions file (webhooks: { sendTestEvent: { document, result, errors } }, docs/api-assumptions.md; `npx occupancy-sync schema Mutation` lists them), or declare `webhooks: { sendTestEvent: absent }` if the platform has none',
    ]);
    expect(code).toBe(ExitCode.FAILURE);
    await target!.sandbox.close();
    copy!.remove();

    const declared = await broken('edges', () => {});
    const at = positionOf(copy!.file, 'sendTestEvent: absent');
    expect(declared.stdout).toContain(`definitions: ${copy!.file} (streams buildings, floors, floor-spaces, occupancy; 3 webhook document(s) replaced; absent: sendTestEvent)\n`);
    expect(declared.stdout).toContain(`  skip  webhook sendTestEvent: absent (declared in ${copy!.file}:${at.line}:${at.column})\n`);
    expect(declared.stdout).not.toContain('FAIL');
    expect(declared.code).toBe(ExitCode.OK);
  });

  it('a full listing whose probe answer holds its declared cap (buildings cut at 2, under an alias): truncated, at maxPageSize', async () => {
    copy = fixtureCopy('v1');
    copy.edit('occupancy-sync.streams.yaml', 'maxPageSize: 10000', `maxPageSize: ${BUILDINGS_CAP}`);
    target = await sandboxFor('v1', { misbehave: 'cappedBuildings' });
    const { code, stdout } = await target.run(['check'], { DEFINITIONS_FILE: copy.dir });
    const at = positionOf(copy.file, `maxPageSize: ${BUILDINGS_CAP}`);
    expect(failures(stdout)).toEqual([
      `${copy.file}:${at.line}:${at.column + 13}: stream buildings: the probe of the listing's first page: the answer broke the page contract (truncated): the answer holds 2 records, the most the API answers (maxPageSize 2), and a single page cannot ask for more: records may be missing. Fix: page the listing with the API's paging style, or correct \`paging.maxPageSize\` if the API's documented limit is higher (docs/api-assumptions.md); nothing was soft-deleted`,
    ]);
    expect(code).toBe(ExitCode.FAILURE);
  });

  it('an enum stored without a map is a warning naming its spellings and what the views count, not a failure', async () => {
    const { code, stdout } = await broken('edges', (c) => c.edit('occupancy-sync.streams.yaml', /\n {8}map: \{ CURRENTLY_OCCUPIED: CurrentlyOccupied, NOT_OCCUPIED: Unoccupied \}/, ''));
    const at = positionOf(copy!.file, 'type: text');
    expect(stdout).toContain(
      `  warn  ${copy!.file}:${at.line}:${at.column + 6}: stream occupancy: occupancyStatus is mapped to an enum (OccupancyEvent.status is OccupancyState!): without a map the stored values are its spellings (CURRENTLY_OCCUPIED, NOT_OCCUPIED); the reporting views count only CurrentlyOccupied as occupied (docs/reporting.md). Fix: add map: { CURRENTLY_OCCUPIED: CurrentlyOccupied, NOT_OCCUPIED: Unoccupied }\n`,
    );
    expect(stdout).toContain('  => all good (1 warning(s))');
    expect(code).toBe(ExitCode.OK);
  });

  it('a String status spelled Occupied/Available with no map: a warning naming the values the probe read and the map to add', async () => {
    const { code, stdout } = await broken('change', (c) => c.edit('occupancy-sync.streams.yaml', /\n {8}map: \{ Occupied: CurrentlyOccupied, Available: Unoccupied \}/, ''));
    const at = positionOf(copy!.file, 'occupancyStatus:');
    // Which of the two the probe's recent window holds depends on the hour the test runs: both are named when read.
    const line = new RegExp(
      `^  warn  ${copy!.file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:${at.line}:${at.column}: stream occupancy: the probe read occupancyStatus values ((Occupied|Available)(, )?)+: ((Occupied|Available)(, )?)+ (is|are) neither CurrentlyOccupied nor Unoccupied and not mapped; stored as spelled, the reports count (it|them) neither occupied nor vacant \\(0 % occupied\\)\\. Fix: add the value map of occupancyStatus: map: \\{ [^}]+ \\}$`,
      'm',
    );
    expect(stdout).toMatch(line);
    const fix = /map: \{ ([^}]+) \}$/m.exec(stdout)![1]!;
    for (const entry of fix.split(', ')) expect(['Occupied: CurrentlyOccupied', 'Available: Unoccupied']).toContain(entry);
    expect(stdout).toContain('  => all good (1 warning(s))');
    expect(code).toBe(ExitCode.OK);

    // With the map of the worked example, nothing to say.
    const fine = await target!.run(['check'], { DEFINITIONS_FILE: join(FIXTURES, 'change') });
    expect(fine.stdout).not.toContain('the probe read occupancyStatus');
    expect(fine.stdout).toContain('  => all good\n');
  });

  it('a map that stores a status the reports do not read (Occupied kept as spelled): the map to correct', async () => {
    const { code, stdout } = await broken('pages', (c) => c.edit('occupancy-sync.streams.yaml', 'map: { Occupied: CurrentlyOccupied, Unoccupied: Unoccupied }', 'map: { Occupied: occupied, Unoccupied: occupied }'));
    expect(stdout).toMatch(/stream occupancy: the probe read occupancyStatus values occupied: occupied is neither CurrentlyOccupied nor Unoccupied after the map; stored as spelled, the reports count it neither occupied nor vacant \(0 % occupied\)\. Fix: correct the value map of occupancyStatus: map: \{ Occupied: CurrentlyOccupied, Unoccupied: Unoccupied \}\n/);
    expect(code).toBe(ExitCode.OK);
  });

  it('--json: ok is false exactly when the exit code is not 0, every problem with its place and fix', async () => {
    const { code, stdout } = await broken('token', (c) => c.edit('occupancy-sync.streams.yaml', 'observedAt: { path: timestamp, type: timestamp, format: epoch-milliseconds }', 'observedAt: { path: timestamp, type: timestamp }'), ['--json']);
    const report = JSON.parse(stdout) as { ok: boolean; exitCode: number; customers: Array<{ ok: boolean; problems: Array<Record<string, unknown>> }> };
    const at = positionOf(copy!.file, 'type: timestamp }');
    expect(report.ok).toBe(false);
    expect(report.exitCode).toBe(code);
    expect(code).toBe(ExitCode.FAILURE);
    expect(report.customers[0]!.ok).toBe(false);
    expect(report.customers[0]!.problems[0]).toEqual({
      kind: 'record',
      stream: 'occupancy',
      file: copy!.file,
      line: at.line,
      column: at.column + 6,
      message: 'observedAt is a timestamp in format iso mapped to a Float (OccupancyReading.timestamp is Float!): the API answers numbers',
      fix: 'declare format: epoch-seconds or epoch-milliseconds for it',
    });
    expect(report.customers[0]!.problems[1]).toMatchObject({ kind: 'probe', stream: 'occupancy', message: expect.stringMatching(/break their declaration \(field observedAt\): timestamp: expected an ISO 8601 date-time with a zone .*a number: declare format: epoch-milliseconds or epoch-seconds/) });
  });
});
