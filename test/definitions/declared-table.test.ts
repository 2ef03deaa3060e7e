import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { ExitCode } from '../../src/errors.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { runMain } from '../support/cli.ts';
import { DIALECTS, freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { ROOT } from '../support/process.ts';
import { tempDir } from '../support/tmp.ts';
import { childEnv, DAY, truthRows } from '../sync/helpers.ts';

/**
 * The worked example docs/examples/declared-tables against the sandbox's `per-space` variant (docs/tables.md): its floor
 * space listing and each space's readings kept in tables of the user's own (`sink: table`), synced by the CLI on both
 * dialects: created and equal to the truth, a field added to the declaration is a column added and filled (check says
 * so first), the readings of a fan-out stream over the declared table equal the truth, a removed building's spaces
 * soft-deleted, and a type change refused by check and on sync's stderr with exactly one line (exit 78) while the table
 * keeps what it held.
 */

const EXAMPLE = join(ROOT, 'docs/examples/declared-tables');
const CAPACITY = '      capacity: { path: capacity, type: count, nullable: true }\n';
const example = readFileSync(join(EXAMPLE, 'occupancy-sync.streams.yaml'), 'utf8');
/** The example as it was before the platform's capacity was declared, and with capacity declared as text. */
const definitions = (capacity: 'none' | 'count' | 'string') =>
  capacity === 'count' ? example : example.replace(CAPACITY, capacity === 'none' ? '' : CAPACITY.replace('type: count', 'type: string'));

describe.each(DIALECTS)('a declared table against the sandbox (%s)', (dialect) => {
  let sandbox: Sandbox | undefined;
  let db: TestDatabase | undefined;
  let dir: { dir: string; remove(): void } | undefined;
  afterEach(async () => {
    await sandbox?.close();
    await db?.drop();
    dir?.remove();
  });

  it('docs/examples/declared-tables: created, a column added with the field, readings fanned out over it exactly the truth, soft deletes, a type change refused in one line', async () => {
    // The platform's clock stands still: every reading it holds is visible to the runs, whose windows reach past it.
    // The sandbox's clock at a 5-minute tick at least 10 s past: the sync's window (real now - SYNC_SETTLE_DELAY) then
    // always reaches the readings of that tick, however close to a tick the test starts. That clock (its Date header)
    // is then up to 5 min 10 s behind the real one: SYNC_MAX_CLOCK_SKEW above it, or the sync warns of the skew.
    const now = Math.floor((Date.now() - 10_000) / 300_000) * 300_000;
    sandbox = await startSandbox({ apiVariant: 'per-space', clock: new FakeClock(now), seed: 5, customers: 1, dataStart: now - DAY, lateArrivalMaxMs: 0 });
    db = await freshDatabase(dialect, 'declared-table');
    dir = tempDir('declared-table-');
    cpSync(EXAMPLE, dir.dir, { recursive: true });
    expect(example).toContain(CAPACITY);
    const file = join(dir.dir, 'occupancy-sync.streams.yaml');
    const env = childEnv(sandbox, db.url, { LOG_LEVEL: 'silent', DEFINITIONS_FILE: file, SYNC_INITIAL_HISTORY: '2d', SYNC_SETTLE_DELAY: '1s', SYNC_MAX_CLOCK_SKEW: '15m', SYNC_PAGE_SIZE: '200' });
    const customer = sandbox.customers[0]!.id;
    const truth = () => sandbox!.truth.floorSpaces(customer).map((f) => ({ id: f.id, building_id: f.buildingId, name: f.name }));
    const rows = async (columns: string, from = 'api_spaces ', order = 'id') => {
      const store = await openTestStore(db!);
      try {
        return await store.query<Record<string, unknown>>(`SELECT ${columns} FROM ${from} WHERE customer_id = $1 ORDER BY ${order}`, [customer]);
      } finally {
        await store.close();
      }
    };
    // The platform's capacity: unknown (null) for some spaces, stored NULL, never 0.
    const truthWithCapacity = () => sandbox!.truth.floorSpaces(customer).map((f) => ({ id: f.id, building_id: f.buildingId, name: f.name, capacity: f.capacity }));
    const byId = <T extends { id: string }>(list: T[]) => [...list].sort((a, b) => (a.id < b.id ? -1 : 1));

    writeFileSync(file, definitions('none'));
    expect((await runMain(['check'], env)).stdout).toContain('declared tables\n  ok    no occupancy-sync tables in the database yet: occupancy-sync migrate (or else the first sync) creates every declared table\n');
    const first = await runMain(['sync', '--stream', 'spaces'], env);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(ExitCode.OK);
    expect(await rows('id, building_id, name')).toEqual(byId(truth()));
    await expect(rows('capacity')).rejects.toThrow(/capacity/);

    // The platform's capacity, now declared: the column is added, and the next listing fills it in every row.
    writeFileSync(file, definitions('count'));
    // check says beforehand what the next sync does to the table (the rest of its report is about the API).
    expect((await runMain(['check'], env)).stdout).toContain('declared tables\n  ok    the next sync: added column capacity (integer) to api_spaces\n');
    const second = await runMain(['sync', '--stream', 'spaces'], env);
    expect(second.stderr).toBe('');
    expect(second.code).toBe(ExitCode.OK);
    const filled = await rows('id, building_id, name, capacity');
    expect(filled).toEqual(byId(truthWithCapacity()));
    expect(filled.filter((r) => r.capacity !== null).length).toBeGreaterThan(0);

    // Each listed space's readings, a fan-out over the declared table, into a table of their own: exactly the truth.
    const readings = await runMain(['sync', '--stream', 'space-readings'], env);
    expect(readings.stderr).toBe('');
    expect(readings.code).toBe(ExitCode.OK);
    const stored = await rows('floor_space_id, observed_at, status, headcount, reading_id', 'api_space_readings', 'observed_at, floor_space_id');
    const expected = truthRows(sandbox, customer, { to: Number.MAX_SAFE_INTEGER });
    expect(expected.length).toBeGreaterThan(1000);
    expect(stored).toEqual(expected.map((r) => ({ floor_space_id: r.floorSpaceId, observed_at: r.observedAt, status: r.occupancyStatus, headcount: r.headcount, reading_id: r.eventId })));

    // A building leaves the platform: its spaces leave the complete listing and are soft-deleted, the rest stay.
    const [gone] = sandbox.truth.buildings(customer);
    const leaving = new Set(truth().filter((s) => s.building_id === gone!.id).map((s) => s.id));
    expect(leaving.size).toBeGreaterThan(0);
    sandbox.removeBuilding(customer, gone!.id);
    expect((await runMain(['sync', '--stream', 'spaces'], env)).code).toBe(ExitCode.OK);
    const after = await rows('id, deleted_at');
    expect(after.filter((r) => r.deleted_at !== null).map((r) => r.id)).toEqual([...leaving].sort());

    // capacity declared as a string: refused before any page, one line, exit 78; the table keeps what it held.
    writeFileSync(file, definitions('string'));
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
