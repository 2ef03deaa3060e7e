import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { runMain } from '../support/cli.ts';
import { DIALECTS, freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { tempDir } from '../support/tmp.ts';
import { childEnv } from '../sync/helpers.ts';

/**
 * A declared table against the sandbox (docs/tables.md): the `per-space` variant's floor space listing, declared by a
 * user as a table of their own (`sink: table`), synced by the CLI on both dialects: created and equal to the truth, a
 * field added to the declaration is a column added and filled, a removed building's spaces soft-deleted, and a type
 * change refused on stderr with exactly one line (exit 78) while the table keeps what it held.
 */

const DOCUMENT = 'query Spaces { floorSpaces { id buildingId name capacity } }\n';

function definitions(extra = ''): string {
  return `version: 2
streams:
  - name: spaces
    document: spaces.graphql
    sink: table
    table: spaces
    key: [id]
    kind: full
    paging: { style: single, records: floorSpaces, maxPageSize: 10000 }
    record:
      id: { path: id, type: id }
      buildingId: { path: buildingId, type: id }
      name: { path: name, type: string }
${extra}    softDelete: { completeWhenUnset: [] }
`;
}

describe.each(DIALECTS)('a declared table against the sandbox (%s)', (dialect) => {
  let sandbox: Sandbox | undefined;
  let db: TestDatabase | undefined;
  let dir: { dir: string; remove(): void } | undefined;
  afterEach(async () => {
    await sandbox?.close();
    await db?.drop();
    dir?.remove();
  });

  it('is created, gains a column when the declaration adds a field, soft-deletes what the listing lost, refuses a type change in one line', async () => {
    sandbox = await startSandbox({ apiVariant: 'per-space', seed: 5, customers: 1 });
    db = await freshDatabase(dialect, 'declared-table');
    dir = tempDir('declared-table-');
    writeFileSync(join(dir.dir, 'spaces.graphql'), DOCUMENT);
    const file = join(dir.dir, 'occupancy-sync.streams.yaml');
    const env = childEnv(sandbox, db.url, { LOG_LEVEL: 'silent', DEFINITIONS_FILE: file });
    const customer = sandbox.customers[0]!.id;
    const truth = () => sandbox!.truth.floorSpaces(customer).map((f) => ({ id: f.id, building_id: f.buildingId, name: f.name }));
    const rows = async (columns: string) => {
      const store = await openTestStore(db!);
      try {
        return await store.query<Record<string, unknown>>(`SELECT ${columns} FROM api_spaces WHERE customer_id = $1 ORDER BY id`, [customer]);
      } finally {
        await store.close();
      }
    };
    // The platform's capacity: unknown (null) for some spaces, stored NULL, never 0.
    const truthWithCapacity = () => sandbox!.truth.floorSpaces(customer).map((f) => ({ id: f.id, building_id: f.buildingId, name: f.name, capacity: f.capacity }));
    const byId = <T extends { id: string }>(list: T[]) => [...list].sort((a, b) => (a.id < b.id ? -1 : 1));

    writeFileSync(file, definitions());
    expect((await runMain(['check'], env)).stdout).toContain('declared tables\n  ok    no occupancy-sync tables in the database yet: the first sync creates every declared table\n');
    const first = await runMain(['sync', '--stream', 'spaces'], env);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(ExitCode.OK);
    expect(await rows('id, building_id, name')).toEqual(byId(truth()));
    await expect(rows('capacity')).rejects.toThrow(/capacity/);

    // The platform's capacity, now declared: the column is added, and the next listing fills it in every row.
    writeFileSync(file, definitions('      capacity: { path: capacity, type: count, nullable: true }\n'));
    // check says beforehand what the next sync does to the table (the rest of its report is about the API).
    expect((await runMain(['check'], env)).stdout).toContain('declared tables\n  ok    the next sync: added column capacity (integer) to api_spaces\n');
    const second = await runMain(['sync', '--stream', 'spaces'], env);
    expect(second.stderr).toBe('');
    expect(second.code).toBe(ExitCode.OK);
    const filled = await rows('id, building_id, name, capacity');
    expect(filled).toEqual(byId(truthWithCapacity()));
    expect(filled.filter((r) => r.capacity !== null).length).toBeGreaterThan(0);

    // A building leaves the platform: its spaces leave the complete listing and are soft-deleted, the rest stay.
    const [gone] = sandbox.truth.buildings(customer);
    const leaving = new Set(truth().filter((s) => s.building_id === gone!.id).map((s) => s.id));
    expect(leaving.size).toBeGreaterThan(0);
    sandbox.removeBuilding(customer, gone!.id);
    expect((await runMain(['sync', '--stream', 'spaces'], env)).code).toBe(ExitCode.OK);
    const after = await rows('id, deleted_at');
    expect(after.filter((r) => r.deleted_at !== null).map((r) => r.id)).toEqual([...leaving].sort());

    // capacity declared as a string: refused before any page, one line, exit 78; the table keeps what it held.
    writeFileSync(file, definitions('      capacity: { path: capacity, type: string, nullable: true }\n'));
    const checked = await runMain(['check'], env);
    expect(checked.code).toBe(ExitCode.FAILURE);
    expect(checked.stdout).toMatch(/declared tables\n  FAIL  table api_spaces: field capacity \(column capacity\) is stored as integer and is now declared text; .* Fix: .*\n(?!  FAIL)/);
    const refused = await runMain(['sync', '--stream', 'spaces'], env);
    expect(refused.code).toBe(ExitCode.CONFIG);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toMatch(/table api_spaces: field capacity \(column capacity\) is stored as integer and is now declared text; .* Fix: /);
    expect(await rows('id, building_id, name, capacity')).toEqual(filled);
  });
});
