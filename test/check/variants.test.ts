import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildSchema, printSchema } from 'graphql';
import { afterEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.ts';
import { API_VARIANT_INFO, API_VARIANTS } from '../../src/sandbox/api-variants.ts';
import { ROOT } from '../support/process.ts';
import { FIXTURES, sandboxFor, type Target } from './support.ts';

/**
 * `check` and `schema` against every API variant of the sandbox: with definitions written for the variant
 * (test/check/fixtures/<variant>/) check is a passing deploy gate, having validated the documents in force and read
 * one page of each stream; schema prints exactly the SDL the variant serves.
 */
describe.each(API_VARIANTS)('against the sandbox API variant %s', (variant) => {
  let target: Target | undefined;
  afterEach(async () => {
    await target?.sandbox.close();
    target = undefined;
  });

  // per-space reads its readings through a fan-out stream over its own floor space listing (docs/examples/api-per-space).
  const inForce = ['buildings', 'floors', 'floor-spaces', 'occupancy'];
  // v1 and per-space offer the assumed hierarchy (floors, floorSpaces); the built-in streams an API lacks are skipped
  // (ifOffered), not probed.
  const streams = variant === 'v1' || variant === 'per-space' ? inForce : ['buildings', 'occupancy'];

  it('check exits 0 with the definitions for the variant, after one request per stream besides introspection', async () => {
    target = await sandboxFor(variant);
    const definitions = { DEFINITIONS_FILE: join(FIXTURES, variant) };
    const before = target.sandbox.stats.queries;
    const { code, stdout, stderr } = await target.run(['check'], definitions);
    expect(stderr).toBe('');
    expect(stdout).toContain(`definitions: ${join(FIXTURES, variant, 'occupancy-sync.streams.yaml')} (streams ${inForce.join(', ')};`);
    for (const name of inForce.filter((n) => !streams.includes(n))) expect(stdout).toMatch(new RegExp(`\\n {2}skip {2}stream ${name}: the API offers no \\w+ query`));
    expect(stdout).toMatch(/ok {4}schema \(introspection\): \d job document\(s\) valid/);
    expect(stdout).toMatch(/ok {4}stream buildings: probe read 3 record\(s\) from the listing's first page/);
    // A recent window holds readings of every floor space: a probe that read none would prove nothing.
    expect(stdout).toMatch(/ok {4}stream occupancy: probe read [1-9]\d* record\(s\) from window \[/);
    // A fan-out stream is probed with the first parent its parent stream's probe read.
    if (variant === 'per-space') expect(stdout).toMatch(/ok {4}stream occupancy: probe read 10 record\(s\) from window \[[^\n]*\) of parent [0-9a-f-]{36} \(/);
    expect(stdout).not.toContain('FAIL');
    expect(stdout).toContain('  => all good');
    expect(code).toBe(ExitCode.OK);
    // Introspection, then one page of each stream the API offers, and the occupancy page once more at the page size a
    // run asks for (the single-page variant has none): no query of check's own.
    expect(target.sandbox.stats.queries - before).toBe(variant === 'capped' ? 3 : streams.length + 2);
    if (variant !== 'capped') expect(stdout).toMatch(/ok {4}stream occupancy: probe read 10 record\(s\) from window \[[^\n]*; a run's page size \d+ accepted\)\n/);

    const json = await target.run(['check', '--json'], definitions);
    const report = JSON.parse(json.stdout) as { ok: boolean; exitCode: number; customers: Array<Record<string, any>> };
    expect(report).toMatchObject({ ok: true, exitCode: 0 });
    expect(report.customers[0]!.problems).toEqual([]);
    expect(report.customers[0]!.streams.map((s: any) => [s.name, s.valid, s.probe?.failure, s.probe?.rejected, s.notOffered])).toEqual(
      inForce.map((name) => (streams.includes(name) ? [name, true, undefined, 0, undefined] : [name, undefined, undefined, undefined, true])),
    );
    expect(json.code).toBe(ExitCode.OK);
  });

  it('schema prints the SDL the variant serves, and the occupancy query with its arguments and answer', async () => {
    target = await sandboxFor(variant);
    const served = readFileSync(join(ROOT, API_VARIANT_INFO[variant].schemaFile), 'utf8');
    const all = await target.run(['schema']);
    expect(all.stderr).toBe('');
    expect(all.stdout).toBe(`${printSchema(buildSchema(served))}\n`);
    expect(all.code).toBe(ExitCode.OK);

    const query = API_VARIANT_INFO[variant].query.split('(')[0]!;
    const one = await target.run(['schema', query]);
    const field = buildSchema(served).getQueryType()!.getFields()[query]!;
    expect(one.stdout).toContain(`Query.${query}(\n`);
    for (const arg of field.args) expect(one.stdout).toMatch(new RegExp(`^  ${arg.name}: ${String(arg.type).replace(/[[\]!]/g, '\\$&')}`, 'm'));
    expect(one.stdout).toContain(`): ${String(field.type)}\n`);
    // The answer's type and the record type it leads to, as SDL.
    expect(one.stdout).toContain(`type ${String(field.type).replace(/[[\]!]/g, '')} {`);
    expect(one.code).toBe(ExitCode.OK);

    const json = JSON.parse((await target.run(['schema', '--json'])).stdout) as { __schema: { queryType: { name: string }; types: Array<{ name: string }> } };
    expect(json.__schema.queryType.name).toBe('Query');
    expect(json.__schema.types.map((t) => t.name)).toContain('Building');
  });
});

describe('a fan-out stream whose parent stream lists nothing (per-space, no buildings)', () => {
  it('is compared with the schema only, with a warning naming its parent stream; check still passes', async () => {
    const target = await sandboxFor('per-space', { buildingsPerCustomer: 0 });
    try {
      const before = target.sandbox.stats.queries;
      const { code, stdout, stderr } = await target.run(['check'], { DEFINITIONS_FILE: join(FIXTURES, 'per-space') });
      expect(stderr).toBe('');
      expect(stdout).toMatch(/skip {2}stream occupancy: not probed: its parent stream floor-spaces read no parent to probe with\n/);
      expect(stdout).toMatch(/warn.*stream occupancy fans out over the records of stream floor-spaces, whose probe read none: its own query was compared with the schema only/);
      expect(code).toBe(ExitCode.OK);
      // Introspection and the three listings (buildings, floors, floor spaces): no query for readings without a parent
      // to send.
      expect(target.sandbox.stats.queries - before).toBe(4);
    } finally {
      await target.sandbox.close();
    }
  });
});
