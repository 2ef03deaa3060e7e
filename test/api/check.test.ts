import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.ts';
import { startSandbox, type Sandbox, type SandboxOptions } from '../../src/sandbox/index.ts';
import { runMain } from '../support/cli.ts';
import { failures, FIXTURES, fixtureCopy, introspectionOff, positionOf } from '../check/support.ts';

const JOBS = fileURLToPath(new URL('../../jobs/', import.meta.url));

/** The committed SDL without the assumed `occupancy` query (and its description). */
function sdlWithoutOccupancy(): string {
  const sdl = readFileSync(join(JOBS, 'schema.graphql'), 'utf8');
  const without = sdl.replace(/^(\s*"[^"\n]*"\s*\n)?\s*occupancy\(.*\n/m, '');
  expect(without).not.toMatch(/^\s*occupancy\(/m);
  return without;
}

/** Where jobs/occupancy.graphql selects `occupancy`, as graphql-js reports it (1-based line and column). */
function occupancyFieldLocation(): { line: number; column: number } {
  const lines = readFileSync(join(JOBS, 'occupancy.graphql'), 'utf8').split('\n');
  const line = lines.findIndex((l) => /^\s*occupancy\s*\(/.test(l));
  return { line: line + 1, column: lines[line]!.search(/\S/) + 1 };
}

describe('occupancy-sync check (the built-in definitions against the assumed API)', () => {
  let sandbox: Sandbox | undefined;
  let tmp: { dir: string; remove(): void } | undefined;
  let proxy: { url: string; close(): Promise<void> } | undefined;
  afterEach(async () => {
    await proxy?.close();
    await sandbox?.close();
    tmp?.remove();
    sandbox = tmp = proxy = undefined;
  });

  async function run(args: string[], options: SandboxOptions = {}, env: Record<string, string> = {}) {
    sandbox ??= await startSandbox({ seed: 9, ...options });
    const customer = sandbox.customers[0]!;
    const result = await runMain(['check', ...args], {
      API_BASE_URL: sandbox.url,
      API_KEY: customer.readKey.key,
      API_SECRET: customer.readKey.secret,
      CUSTOMER_ID: customer.id,
      LOG_LEVEL: 'error',
      HTTP_MAX_ATTEMPTS: '2',
      ...env,
    });
    return { ...result, customer, sandbox };
  }

  it('passes: token lifetime, customer and scopes, every document in force valid, each stream probed, each webhook operation listed', async () => {
    const { code, stdout, customer, sandbox } = await run([]);
    expect(stdout).toMatch(new RegExp(`authenticated: token valid for (899|900) s \\(until [^)]+\\); token customer ${customer.id}; scopes ReadPublicApi`));
    expect(stdout).toContain('  ok    schema (introspection): 8 job document(s) valid\n');
    expect(stdout).toContain(`  ok    stream buildings: probe read ${sandbox.truth.buildings(customer.id).length} record(s) from the listing's first page (no more pages)\n`);
    // The assumed hierarchy, which the default sandbox offers.
    expect(stdout).toContain(`  ok    stream floors: probe read ${sandbox.truth.floors(customer.id).length} record(s) from the listing's first page (no more pages)\n`);
    expect(stdout).toContain(`  ok    stream floor-spaces: probe read ${sandbox.truth.floorSpaces(customer.id).length} record(s) from the listing's first page (no more pages)\n`);
    expect(stdout).toMatch(/ {2}ok {4}stream occupancy: probe read 10 record\(s\) from window \[\S+, \S+\) \(page size 10; more pages follow; a run's page size 1000 accepted\)\n/);
    for (const op of ['registerWebhook', 'updateWebhook', 'webhooks', 'sendTestEvent']) expect(stdout).toContain(`  ok    webhook ${op}: src/webhooks/graphql/${op}.graphql\n`);
    expect(stdout).not.toContain('CheckBuildings');
    expect(stdout).toContain('=> all good');
    expect(code).toBe(ExitCode.OK);
  });

  it('fails with file:line:column and the fix when the live schema lacks the assumed occupancy query, and does not probe it', async () => {
    const { code, stdout } = await run([], { schemaSdl: sdlWithoutOccupancy() });
    const { line, column } = occupancyFieldLocation();
    expect(failures(stdout)).toEqual([
      'schema (introspection): 1 of 8 document(s) in force do not match the live schema',
      `jobs/occupancy.graphql:${line}:${column}: Cannot query field "occupancy" on type "Query". Fix: give stream occupancy a document the API answers in a definitions file (DEFINITIONS_FILE, docs/api-assumptions.md; \`npx occupancy-sync schema Query\` lists the queries)`,
    ]);
    expect(stdout).toContain('  skip  stream occupancy: not probed: its document does not match the live schema\n');
    expect(stdout).toContain('  => 1 problem(s) found');
    expect(code).toBe(ExitCode.FAILURE);
  });

  it('reports JSON with --json: ok false exactly when the exit code is not 0, each problem structured', async () => {
    const { code, stdout, customer } = await run(['--json'], { schemaSdl: sdlWithoutOccupancy() });
    const report = JSON.parse(stdout) as { ok: boolean; exitCode: number; definitions: unknown; customers: Array<Record<string, any>> };
    expect(report.ok).toBe(false);
    expect(report.exitCode).toBe(ExitCode.FAILURE);
    expect(report.definitions).toEqual({
      file: null,
      streams: [
        { name: 'buildings', kind: 'full', document: 'jobs/buildings.graphql', definedIn: 'jobs/streams.yaml' },
        { name: 'floors', kind: 'full', document: 'jobs/floors.graphql', definedIn: 'jobs/streams.yaml' },
        { name: 'floor-spaces', kind: 'full', document: 'jobs/floor-spaces.graphql', definedIn: 'jobs/streams.yaml' },
        { name: 'occupancy', kind: 'incremental', document: 'jobs/occupancy.graphql', definedIn: 'jobs/streams.yaml' },
      ],
    });
    const { line, column } = occupancyFieldLocation();
    expect(report.customers[0]).toMatchObject({
      customer: customer.id,
      ok: false,
      token: { jwtCustomer: customer.id, scopes: ['ReadPublicApi'] },
      schema: { source: 'introspection', documents: 8, valid: 7 },
      problems: [{ kind: 'document', stream: 'occupancy', file: 'jobs/occupancy.graphql', line, column, message: 'Cannot query field "occupancy" on type "Query".', fix: expect.stringContaining('definitions file') }],
      warnings: [],
    });
    expect(report.customers[0]!.streams[3]).toEqual({ name: 'occupancy', kind: 'incremental', document: 'jobs/occupancy.graphql', valid: false, skipped: 'its document does not match the live schema' });
    expect(code).toBe(ExitCode.FAILURE);

    await sandbox!.close();
    sandbox = undefined;
    const passing = await run(['--json']);
    expect(JSON.parse(passing.stdout)).toMatchObject({ ok: true, exitCode: 0 });
    expect(passing.code).toBe(ExitCode.OK);
  });

  it('exits 77 on a wrong secret, naming the key and never printing the secret', async () => {
    const wrong = 'definitely-not-the-secret-42';
    const { code, stdout, stderr, customer, sandbox } = await run([], {}, { API_SECRET: wrong });
    expect(code).toBe(77);
    expect(stdout).toContain(`FAIL  the platform refused API key "${customer.readKey.key}"`);
    expect(stdout + stderr).not.toContain(wrong);
    expect(sandbox.stats.authCalls).toBe(1);
  });

  it('fails at start on a document of the definitions with a syntax error, before any request (exit 78)', async () => {
    const copy = fixtureCopy('v1');
    tmp = copy;
    writeFileSync(join(copy.dir, 'sites.graphql'), 'query Sites($nameLike: String) {\n  sites: buildings(nameLike: $nameLike) { siteId: id\n');
    const { code, stderr, stdout, sandbox } = await run([], {}, { DEFINITIONS_FILE: copy.dir });
    expect(stderr).toContain(`${join(copy.dir, 'sites.graphql')}:3:1: Syntax Error`);
    expect(stdout).toBe('');
    expect(code).toBe(ExitCode.CONFIG);
    expect(sandbox.stats.authCalls).toBe(0);
  });

  it('rejects an unknown --customer with the configured ones listed', async () => {
    const { code, stderr, customer } = await run(['--customer', 'nope']);
    expect(stderr).toContain(`--customer "nope": no such customer is configured. Fix: use one of ${customer.id}`);
    expect(code).toBe(64);
    // --json: still one JSON object, whose ok is false as the exit code is not 0.
    const json = await run(['--customer', 'nope', '--json']);
    expect(JSON.parse(json.stdout)).toEqual({
      ok: false,
      exitCode: 64,
      problems: [{ kind: 'configuration', message: '--customer "nope": no such customer is configured', fix: `use one of ${customer.id}` }],
      customers: [],
    });
    expect(json.stderr).toBe('');
    expect(json.code).toBe(64);
  });

  it('a redefined buildings stream is what is validated and probed: no query of check\'s own', async () => {
    const definitions = { DEFINITIONS_FILE: join(FIXTURES, 'v1') };
    const first = await run([], {}, definitions);
    const queries = sandbox!.stats.queries;
    expect(first.stdout).toContain(`  ok    stream buildings: probe read ${sandbox!.truth.buildings(first.customer.id).length} record(s) from the listing's first page`);
    expect(first.code).toBe(ExitCode.OK);
    // Introspection, the user's buildings query, the floors and floor spaces listings, the occupancy page (and again
    // at a run's page size).
    expect(queries).toBe(6);

    const copy = fixtureCopy('v1');
    tmp = copy;
    copy.edit('sites.graphql', 'label: name', 'label: title');
    const broken = await run([], {}, { DEFINITIONS_FILE: copy.dir });
    const at = positionOf(join(copy.dir, 'sites.graphql'), 'label: title');
    expect(failures(broken.stdout)).toContain(
      `${join(copy.dir, 'sites.graphql')}:${at.line}:${at.column}: Cannot query field "title" on type "Building". Fix: adapt ${join(copy.dir, 'sites.graphql')} to the live schema (\`npx occupancy-sync schema Query\` lists the queries, \`npx occupancy-sync schema NAME\` one of them or a type)`,
    );
    // The occupancy stream is still checked: a redefined buildings stream stops nothing.
    expect(broken.stdout).toMatch(/ok {4}stream occupancy: probe read 10 record\(s\)/);
    expect(broken.code).toBe(ExitCode.FAILURE);
  });

  it('an API without introspection: a warning saying so and what to do, the streams still probed for real (exit 0)', async () => {
    sandbox = await startSandbox({ seed: 9 });
    proxy = await introspectionOff(sandbox.url);
    const { code, stdout } = await run([], {}, { API_BASE_URL: proxy.url });
    expect(stdout).toContain(
      "  warn  the API does not allow introspection (GraphQL introspection is not allowed, but the query contained __schema or __type): the documents, record types and webhook operations were not compared with the schema; the probes below still read real answers. Fix: read the schema in the platform's API Explorer (GraphiQL; a key with ReadPublicApi opens it), or ask the platform for its SDL, and write the documents from it\n",
    );
    expect(stdout).toMatch(/ok {4}stream occupancy: probe read 10 record\(s\)/);
    expect(stdout).toContain('  skip  webhook sendTestEvent: src/webhooks/graphql/sendTestEvent.graphql not validated (no schema)\n');
    expect(stdout).toContain('  => all good (1 warning(s))');
    expect(code).toBe(ExitCode.OK);
  });
});
