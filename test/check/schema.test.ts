import { afterEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.ts';
import { runMain } from '../support/cli.ts';
import { introspectionOff, sandboxFor, type Target } from './support.ts';

/** `occupancy-sync schema`: what it says when it cannot print what was asked, and its help. */
describe('occupancy-sync schema', () => {
  let target: Target | undefined;
  let proxy: { url: string; close(): Promise<void> } | undefined;
  afterEach(async () => {
    await proxy?.close();
    await target?.sandbox.close();
    target = proxy = undefined;
  });

  it('a NAME the schema lacks: exit 64, with the close names it has', async () => {
    target = await sandboxFor('edges');
    const { code, stdout, stderr } = await target.run(['schema', 'occupancy']);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      'occupancy-sync: "occupancy": the live schema has no type, query or mutation of that name. Close names: OccupancyEvent, OccupancyState, occupancyEvents, OccupancyFilter, OccupancyEventEdge, OccupancyEventConnection. Fix: run `npx occupancy-sync schema` to print the whole schema\n',
    );
    expect(code).toBe(ExitCode.USAGE);
  });

  it('a type NAME prints its fields with their types; --json its introspection entry', async () => {
    target = await sandboxFor('token');
    const text = await target.run(['schema', 'OccupancyReading']);
    expect(text.stdout).toBe('type OccupancyReading {\n  id: ID!\n  floorSpaceId: ID!\n\n  """occupied or vacant."""\n  status: String!\n  headcount: Int!\n\n  """Epoch milliseconds."""\n  timestamp: Float!\n}\n');
    expect(text.code).toBe(ExitCode.OK);
    const json = JSON.parse((await target.run(['schema', 'listOccupancyReadings', '--json'])).stdout) as { fields: Array<{ root: string; field: { name: string; args: Array<{ name: string }> } }> };
    expect(json.fields.map((f) => [f.root, f.field.name, f.field.args.map((a) => a.name)])).toEqual([['Query', 'listOccupancyReadings', ['startTime', 'endTime', 'limit', 'nextToken']]]);
  });

  it('an API without introspection: exit 1, saying so and where to read the schema instead', async () => {
    target = await sandboxFor('v1');
    proxy = await introspectionOff(target.sandbox.url);
    const { code, stdout, stderr } = await target.run(['schema'], { API_BASE_URL: proxy.url });
    expect(stdout).toBe('');
    expect(stderr).toBe(
      "occupancy-sync: the API does not allow introspection (GraphQL introspection is not allowed, but the query contained __schema or __type). Fix: read the schema in the platform's API Explorer (GraphiQL; a key with ReadPublicApi opens it), or ask the platform for its SDL, and write the documents from it\n",
    );
    expect(code).toBe(ExitCode.FAILURE);
  });

  it('authenticates like check: a wrong secret is exit 77, an unknown --customer 64', async () => {
    target = await sandboxFor('v1');
    const wrong = await target.run(['schema'], { API_SECRET: 'not-the-secret-at-all' });
    expect(wrong.stderr).toContain(`the platform refused API key "${target.env.API_KEY}"`);
    expect(wrong.code).toBe(ExitCode.AUTH);
    const unknown = await target.run(['schema', '--customer', 'nope']);
    expect(unknown.stderr).toContain('--customer "nope": no such customer is configured');
    expect(unknown.code).toBe(ExitCode.USAGE);
  });

  it('--help explains NAME, the exit codes, and gives examples', async () => {
    const { code, stdout } = await runMain(['schema', '--help'], {});
    expect(stdout).toContain('Usage: occupancy-sync schema [options] [name]');
    expect(stdout).toContain('$ npx occupancy-sync schema occupancyEvents');
    expect(stdout).toContain('64 NAME is not in the schema');
    expect(code).toBe(ExitCode.OK);
  });
});
