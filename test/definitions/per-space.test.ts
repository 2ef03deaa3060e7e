import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { ExitCode } from '../../src/errors.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import type { Store, SyncState } from '../../src/store/types.ts';
import { runMain } from '../support/cli.ts';
import { DIALECTS, freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { ROOT } from '../support/process.ts';
import { tempDir } from '../support/tmp.ts';
import { DAY, HOUR, childEnv, dbRows, truthRows } from '../sync/helpers.ts';

/**
 * The worked definitions of docs/examples/api-per-space (a fan-out stream over the floor space listing) against the
 * sandbox's `per-space` variant, where no query returns every reading, copied as a user would: a backfill and syncs
 * store exactly the truth, each floor space under its own state key; a space listed later is read from the start of
 * history, a removed one is no longer read; on both dialects.
 */

/**
 * Each space's stored readings equal its whole truth (every space but those of `except`): the platform's clock stands
 * still, so every reading it holds was visible to the runs, whose windows reach past it.
 */
async function expectEachSpaceTruth(store: Store, sandbox: Sandbox, customer: string, states: Map<string, SyncState>, except = new Set<string>()) {
  const rows = await dbRows(store, customer);
  let compared = 0;
  for (const [space, state] of states) {
    if (except.has(space)) continue;
    expect(state.watermark).not.toBeNull();
    const truth = truthRows(sandbox, customer, { to: Number.MAX_SAFE_INTEGER }).filter((r) => r.floorSpaceId === space);
    expect(rows.filter((r) => r.floorSpaceId === space), `floor space ${space}`).toEqual(truth);
    compared += truth.length;
  }
  expect(compared).toBeGreaterThan(1000);
}

const partitions = async (store: Store, customer: string): Promise<Map<string, SyncState>> =>
  new Map((await store.listStates(customer)).filter((s) => s.stateKey.startsWith('occupancy/')).map((s) => [s.stateKey.slice('occupancy/'.length), s]));

describe.each(DIALECTS)('docs/examples/api-per-space (%s)', (dialect) => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let dir: { dir: string; remove(): void };

  beforeEach(() => {
    dir = tempDir('per-space-');
  });
  afterEach(async () => {
    await sandbox?.close();
    await db?.drop();
    dir.remove();
  });

  it('backfill and sync store exactly the truth; a space listed later is read from the start, a removed one no longer; state rewind and reset by stream or partition', async () => {
    // The platform's clock stands still (the command's runs on): nothing becomes visible between the steps, and a
    // building removed and restored at the same instant loses no tick of its history.
    // The sandbox's clock at a 5-minute tick at least 10 s past: the sync's window (real now - SYNC_SETTLE_DELAY) then
    // always reaches the readings of that tick, however close to a tick the test starts. That clock (its Date header)
    // is then up to 5 min 10 s behind the real one: SYNC_MAX_CLOCK_SKEW above it, or the sync warns of the skew.
    const now = Math.floor((Date.now() - 10_000) / 300_000) * 300_000;
    const dataStart = now - DAY;
    sandbox = await startSandbox({ apiVariant: 'per-space', clock: new FakeClock(now), seed: 11, customers: 1, dataStart, lateArrivalMaxMs: 0 });
    db = await freshDatabase(dialect, 'example-per-space');
    cpSync(join(ROOT, 'docs/examples/api-per-space'), dir.dir, { recursive: true });
    const env = childEnv(sandbox, db.url, { LOG_LEVEL: 'silent', SYNC_INITIAL_HISTORY: '2d', SYNC_SETTLE_DELAY: '1s', SYNC_MAX_CLOCK_SKEW: '15m', SYNC_PAGE_SIZE: '37', DEFINITIONS_FILE: dir.dir });
    const customer = sandbox.customers[0]!.id;
    const [later, removed] = sandbox.truth.buildings(customer);
    const spacesOf = (buildingId: string) => new Set(sandbox.truth.floorSpaces(customer).filter((f) => f.buildingId === buildingId).map((f) => f.id));
    sandbox.removeBuilding(customer, later!.id);

    const range = { from: dataStart + 3 * HOUR, to: dataStart + 7 * HOUR };
    const backfill = await runMain(['backfill', '--from', new Date(range.from).toISOString(), '--to', new Date(range.to).toISOString()], env);
    expect(backfill.stderr).toBe('');
    expect(backfill.code).toBe(ExitCode.OK);
    const listed = new Set(sandbox.truth.floorSpaces(customer).map((f) => f.id));
    let store = await openTestStore(db);
    try {
      expect(await dbRows(store, customer)).toEqual(truthRows(sandbox, customer, range).filter((r) => listed.has(r.floorSpaceId)));
    } finally {
      await store.close();
    }

    const sync = await runMain(['sync'], env);
    expect(sync.stderr).toBe('');
    expect(sync.code).toBe(ExitCode.OK);
    expect(sync.stdout).toMatch(/^sync: 1 customer, 4 streams, /);
    let before: Map<string, SyncState>;
    store = await openTestStore(db);
    try {
      before = await partitions(store, customer);
      expect(new Set(before.keys())).toEqual(listed);
      expect(new Set((await dbRows(store, customer)).map((r) => r.floorSpaceId))).toEqual(listed);
      // The parents: the floor space listing, stored as the dimension it is (docs/reporting.md), equal to the truth.
      const dimension = await store.query<Record<string, unknown>>(
        'SELECT floor_space_id, building_id, floor_id, name, capacity, space_type FROM floor_spaces WHERE customer_id = $1 AND deleted_at IS NULL',
        [customer],
      );
      const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
      expect(dimension.map((r) => ({ id: String(r.floor_space_id), buildingId: r.building_id, floorId: r.floor_id, name: r.name, capacity: r.capacity === null ? null : Number(r.capacity), spaceType: r.space_type })).sort(byId))
        .toEqual(sandbox.truth.floorSpaces(customer).sort(byId));
      await expectEachSpaceTruth(store, sandbox, customer, before);
    } finally {
      await store.close();
    }

    // The building comes back (its spaces are new parents), another goes (its spaces leave the listing).
    const gone = spacesOf(removed!.id);
    expect(gone.size).toBe(4);
    sandbox.restoreBuilding(customer, later!.id);
    sandbox.removeBuilding(customer, removed!.id);
    const again = await runMain(['sync'], env);
    expect(again.stderr).toBe('');
    expect(again.code).toBe(ExitCode.OK);
    store = await openTestStore(db);
    try {
      const after = await partitions(store, customer);
      for (const id of gone) expect(after.get(id), `the state of removed space ${id} stays, untouched`).toEqual(before.get(id));
      const deleted = await store.query<{ floor_space_id: string }>('SELECT floor_space_id FROM floor_spaces WHERE customer_id = $1 AND deleted_at IS NOT NULL', [customer]);
      expect(new Set(deleted.map((r) => r.floor_space_id))).toEqual(gone);
      // Every space but the removed ones read up to its watermark, the returned building's from its first reading on.
      await expectEachSpaceTruth(store, sandbox, customer, after, gone);
      const returned = spacesOf(later!.id);
      expect([...returned].every((id) => after.has(id))).toBe(true);
      const rows = await dbRows(store, customer);
      expect(rows.filter((r) => returned.has(r.floorSpaceId))[0]!.observedAt).toBe(new Date(dataStart).toISOString());
    } finally {
      await store.close();
    }

    // By hand: the stream's name rewinds each of its partitions; a partition's key resets that one alone.
    const to = new Date(now - 6 * HOUR).toISOString();
    const rewind = await runMain(['state', 'rewind', '--stream', 'occupancy', '--to', to, '--yes'], env);
    expect(rewind.code).toBe(ExitCode.OK);
    expect(rewind.stdout.trim().split('\n')).toHaveLength(12);
    expect(rewind.stdout).toMatch(new RegExp(`^${customer} occupancy/[0-9a-f-]{36}: watermark \\S+ -> ${to.replace(/[.]/g, '\\.')} \\(change \\d+\\)`, 'm'));
    const one = [...spacesOf(later!.id)][0]!;
    const reset = await runMain(['state', 'reset', '--stream', `occupancy/${one}`, '--yes'], env);
    expect(reset.code).toBe(ExitCode.OK);
    expect(reset.stdout).toBe(`${customer} occupancy/${one}: state removed (change 13); the next run starts from SYNC_INITIAL_HISTORY\n`);
    store = await openTestStore(db);
    try {
      const states = await partitions(store, customer);
      expect(states.has(one)).toBe(false);
      expect([...states.values()].every((s) => s.watermark === to)).toBe(true);
    } finally {
      await store.close();
    }
  });
});
