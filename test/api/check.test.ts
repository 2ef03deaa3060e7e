import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { startSandbox, type Sandbox, type SandboxOptions } from '../../src/sandbox/index.ts';
import { tempDir } from '../support/tmp.ts';

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

describe('occupancy-sync check', () => {
  let sandbox: Sandbox | undefined;
  let tmp: ReturnType<typeof tempDir> | undefined;
  afterEach(async () => {
    await sandbox?.close();
    tmp?.remove();
    sandbox = tmp = undefined;
  });

  async function run(args: string[], options: SandboxOptions = {}, secret?: string) {
    sandbox = await startSandbox({ seed: 9, ...options });
    const customer = sandbox.customers[0]!;
    let stdout = '';
    let stderr = '';
    const code = await main(['node', 'occupancy-sync', 'check', ...args], {
      env: {
        API_BASE_URL: sandbox.url,
        API_KEY: customer.readKey.key,
        API_SECRET: secret ?? customer.readKey.secret,
        CUSTOMER_ID: customer.id,
        LOG_LEVEL: 'error',
        HTTP_MAX_ATTEMPTS: '2',
      },
      stdout: { write: (s: string) => (stdout += s) },
      stderr: { write: (s: string) => (stderr += s) },
      signal: new AbortController().signal,
    });
    return { code, stdout, stderr, customer, sandbox };
  }

  it('passes against the sandbox, showing token lifetime, customer, scopes and the query result', async () => {
    const { code, stdout, customer, sandbox } = await run([]);
    expect(stdout).toMatch(new RegExp(`authenticated: token valid for (899|900) s \\(until [^)]+\\); token customer ${customer.id}; scopes ReadPublicApi`));
    expect(stdout).toContain(`query CheckBuildings: ${sandbox.truth.buildings(customer.id).length} building(s)`);
    expect(stdout).toMatch(/ok {4}schema \(introspection\): \d+ job document\(s\) valid/);
    expect(stdout).toContain('=> all good');
    expect(code).toBe(0);
  });

  it('fails with file:line:column when the live schema lacks the assumed occupancy query', async () => {
    const { code, stdout } = await run([], { schemaSdl: sdlWithoutOccupancy() });
    const { line, column } = occupancyFieldLocation();
    expect(stdout).toContain(`\njobs/occupancy.graphql:${line}:${column}: Cannot query field "occupancy" on type "Query".\n`);
    expect(stdout).toContain('FAIL  schema (introspection): 1 mismatch(es)');
    expect(code).toBe(1);
  });

  it('reports JSON with --json', async () => {
    const { code, stdout, customer } = await run(['--json'], { schemaSdl: sdlWithoutOccupancy() });
    const report = JSON.parse(stdout) as { ok: boolean; customers: Array<Record<string, any>> };
    expect(report.ok).toBe(false);
    expect(report.customers[0]).toMatchObject({
      customer: customer.id,
      ok: false,
      token: { jwtCustomer: customer.id, scopes: ['ReadPublicApi'] },
      schema: { source: 'introspection', mismatches: [{ file: 'jobs/occupancy.graphql', message: 'Cannot query field "occupancy" on type "Query".' }] },
    });
    expect(code).toBe(1);
  });

  it('exits 77 on a wrong secret, naming the key and never printing the secret', async () => {
    const wrong = 'definitely-not-the-secret-42';
    const { code, stdout, stderr, customer, sandbox } = await run([], {}, wrong);
    expect(code).toBe(77);
    expect(stdout).toContain(`FAIL  the platform refused API key "${customer.readKey.key}"`);
    expect(stdout + stderr).not.toContain(wrong);
    expect(sandbox.stats.authCalls).toBe(1);
  });

  it('fails at start on a document with a syntax error, before any request', async () => {
    tmp = tempDir();
    writeFileSync(join(tmp.dir, 'broken.graphql'), 'query Broken {\n  buildings { id\n');
    const { code, stderr, sandbox } = await run(['--documents', tmp.dir]);
    expect(stderr).toContain(`${join(tmp.dir, 'broken.graphql')}:3:1: Syntax Error`);
    expect(code).toBe(78);
    expect(sandbox.stats.authCalls).toBe(0);
  });

  it('rejects an unknown --customer with the configured ones listed', async () => {
    const { code, stderr, customer } = await run(['--customer', 'nope']);
    expect(stderr).toContain(`--customer "nope": no such customer is configured. Fix: use one of ${customer.id}`);
    expect(code).toBe(64);
  });
});
