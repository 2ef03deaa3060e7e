import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { ExitCode } from '../../src/errors.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import type { Store } from '../../src/store/types.ts';
import { runMain } from '../support/cli.ts';
import { DIALECTS, freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { ROOT } from '../support/process.ts';
import { childEnv, DAY, dbRows, truthRows } from './helpers.ts';

/**
 * The built-in streams keep the hierarchy the default sandbox offers (buildings with their time zone, floors, floor
 * spaces): after `sync` the dimension tables hold exactly the sandbox's truth, on SQLite and Postgres. Against an API
 * without the assumed queries (a schema lacking floors, floorSpaces and Building.timeZone), everything else syncs,
 * and `sync` and `check` each say what is skipped in one line per stream.
 */

const text = (v: unknown) => (v === null || v === undefined ? null : String(v));
const int = (v: unknown) => (v === null || v === undefined ? null : Number(v));

async function dimensions(store: Store, customer: string) {
  const buildings = await store.query<Record<string, unknown>>(`SELECT id, name, time_zone, deleted_at FROM buildings WHERE customer_id = '${customer}' ORDER BY id`);
  const floors = await store.query<Record<string, unknown>>(`SELECT id, building_id, name, level, deleted_at FROM floors WHERE customer_id = '${customer}' ORDER BY id`);
  const spaces = await store.query<Record<string, unknown>>(
    `SELECT floor_space_id, building_id, floor_id, name, capacity, space_type, deleted_at FROM floor_spaces WHERE customer_id = '${customer}' ORDER BY floor_space_id`,
  );
  return {
    buildings: buildings.map((r) => ({ id: text(r.id), name: text(r.name), timeZone: text(r.time_zone), deleted: r.deleted_at !== null })),
    floors: floors.map((r) => ({ id: text(r.id), buildingId: text(r.building_id), name: text(r.name), level: int(r.level), deleted: r.deleted_at !== null })),
    floorSpaces: spaces.map((r) => ({
      id: text(r.floor_space_id),
      buildingId: text(r.building_id),
      floorId: text(r.floor_id),
      name: text(r.name),
      capacity: int(r.capacity),
      spaceType: text(r.space_type),
      deleted: r.deleted_at !== null,
    })),
  };
}

const byId = <T extends { id: string }>(rows: T[]) => [...rows].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

/** The sandbox's hierarchy as the tables should hold it: every listed row alive, nothing else. */
function truth(sandbox: Sandbox, customer: string) {
  return {
    buildings: byId(sandbox.truth.buildings(customer).map((b) => ({ ...b, deleted: false }))),
    floors: byId(sandbox.truth.floors(customer).map((f) => ({ ...f, deleted: false }))),
    floorSpaces: byId(sandbox.truth.floorSpaces(customer).map((f) => ({ ...f, deleted: false }))),
  };
}

/** jobs/schema.graphql as an API offering only what the platform documents of the hierarchy: buildings { id name }. */
function schemaWithoutHierarchy(): string {
  const sdl = readFileSync(join(ROOT, 'jobs/schema.graphql'), 'utf8')
    .replace(/^ {2}"Assumed: every floor[^\n]*\n {2}floors: \[Floor!\]!\n/m, '')
    .replace(/^ {2}"Assumed: every floor space[^\n]*\n {2}floorSpaces: \[FloorSpace!\]!\n/m, '')
    .replace(/^ {2}"Assumed: the building's IANA[^\n]*\n {2}timeZone: String\n/m, '');
  expect(sdl).not.toMatch(/floors:|floorSpaces:|timeZone:/);
  return sdl;
}

describe.each(DIALECTS)('the hierarchy through the built-in streams (%s)', (dialect) => {
  let sandbox: Sandbox | undefined;
  let db: TestDatabase | undefined;
  afterEach(async () => {
    await sandbox?.close();
    await db?.drop();
    sandbox = undefined;
    db = undefined;
  });

  it('sync stores buildings with their time zone, floors and floor spaces exactly as the sandbox holds them, and soft-deletes a removed building\'s', async () => {
    // The sandbox's clock at a 5-minute tick at least 10 s past: the sync's window (real now - SYNC_SETTLE_DELAY) then
    // always reaches the readings of that tick, however close to a tick the test starts. That clock (its Date header)
    // is then up to 5 min 10 s behind the real one: SYNC_MAX_CLOCK_SKEW above it, or the sync warns of the skew.
    const now = Math.floor((Date.now() - 10_000) / 300_000) * 300_000;
    sandbox = await startSandbox({ clock: new FakeClock(now), seed: 5, customers: 1, dataStart: now - DAY / 4, lateArrivalMaxMs: 0 });
    db = await freshDatabase(dialect, 'hierarchy');
    const env = childEnv(sandbox, db.url, { SYNC_INITIAL_HISTORY: '1d', SYNC_SETTLE_DELAY: '1s', SYNC_MAX_CLOCK_SKEW: '15m' });
    const customer = sandbox.customers[0]!.id;

    const first = await runMain(['sync'], env);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(ExitCode.OK);
    let store = await openTestStore(db);
    try {
      expect(await dimensions(store, customer)).toEqual(truth(sandbox, customer));
      // The readings are untouched by the hierarchy: exactly the truth.
      expect(await dbRows(store, customer)).toEqual(truthRows(sandbox, customer, { to: Number.MAX_SAFE_INTEGER }));
    } finally {
      await store.close();
    }

    // A building leaves the platform: its floors and spaces leave the listings and are soft-deleted with it.
    const [gone] = sandbox.truth.buildings(customer);
    const before = truth(sandbox, customer);
    sandbox.removeBuilding(customer, gone!.id);
    const second = await runMain(['sync'], env);
    expect(second.code).toBe(ExitCode.OK);
    store = await openTestStore(db);
    try {
      const stored = await dimensions(store, customer);
      expect(stored.buildings).toEqual(before.buildings.map((b) => ({ ...b, deleted: b.id === gone!.id })));
      expect(stored.floors).toEqual(before.floors.map((f) => ({ ...f, deleted: f.buildingId === gone!.id })));
      expect(stored.floorSpaces).toEqual(before.floorSpaces.map((f) => ({ ...f, deleted: f.buildingId === gone!.id })));
      expect(stored.floorSpaces.filter((f) => f.deleted)).toHaveLength(4);
    } finally {
      await store.close();
    }
  });

  it('an API without floors, floorSpaces and Building.timeZone: everything else syncs; sync and check say what is skipped, one line each', async () => {
    // The sandbox's clock at a 5-minute tick at least 10 s past: the sync's window (real now - SYNC_SETTLE_DELAY) then
    // always reaches the readings of that tick, however close to a tick the test starts. That clock (its Date header)
    // is then up to 5 min 10 s behind the real one: SYNC_MAX_CLOCK_SKEW above it, or the sync warns of the skew.
    const now = Math.floor((Date.now() - 10_000) / 300_000) * 300_000;
    sandbox = await startSandbox({ clock: new FakeClock(now), seed: 6, customers: 1, dataStart: now - DAY / 4, lateArrivalMaxMs: 0, schemaSdl: schemaWithoutHierarchy() });
    db = await freshDatabase(dialect, 'hierarchy-absent');
    const env = childEnv(sandbox, db.url, { SYNC_INITIAL_HISTORY: '1d', SYNC_SETTLE_DELAY: '1s', SYNC_MAX_CLOCK_SKEW: '15m' });
    const customer = sandbox.customers[0]!.id;

    const sync = await runMain(['sync'], env);
    expect(sync.code).toBe(ExitCode.OK);
    // One warning line per skipped stream; the field left out is said at info (LOG_LEVEL=warn here).
    const lines = sync.stderr.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines.find((l) => l.includes('stream floors skipped'))).toMatch(/stream floors skipped: the API offers no floors query \(Query\.floors\), which jobs\/floors\.graphql asks for; the floors table is not filled/);
    expect(lines.find((l) => l.includes('stream floor-spaces skipped'))).toMatch(/the API offers no floorSpaces query \(Query\.floorSpaces\).*reports will name floor spaces by id/);
    const info = await runMain(['sync'], { ...env, LOG_LEVEL: 'info' });
    expect(info.stderr).toMatch(/"level":30,[^\n]*"msg":"stream buildings: the API offers no Building\.timeZone, which jobs\/buildings\.graphql asks for: buildings\.time_zone is stored NULL"/);
    let store = await openTestStore(db);
    try {
      const stored = await dimensions(store, customer);
      expect(stored.buildings).toEqual(byId(sandbox.truth.buildings(customer).map((b) => ({ id: b.id, name: b.name, timeZone: null, deleted: false }))));
      expect(stored.floors).toEqual([]);
      // Only the readings name the floor spaces: ids, no names (the dictionary rows the readings made).
      expect(stored.floorSpaces.every((f) => f.name === null && f.capacity === null)).toBe(true);
      expect(await dbRows(store, customer)).toEqual(truthRows(sandbox, customer, { to: Number.MAX_SAFE_INTEGER }));
    } finally {
      await store.close();
    }

    const check = await runMain(['check'], env);
    expect(check.code).toBe(ExitCode.OK);
    expect(check.stdout).toMatch(/\n {2}skip {2}stream floors: the API offers no floors query \(Query\.floors\)[^\n]*\n/);
    expect(check.stdout).toMatch(/\n {2}skip {2}stream floor-spaces: the API offers no floorSpaces query \(Query\.floorSpaces\)[^\n]*reports will name floor spaces by id[^\n]*\n/);
    expect(check.stdout).toContain('\n  skip  stream buildings: the API offers no Building.timeZone, which jobs/buildings.graphql asks for: buildings.time_zone is stored NULL\n');
    expect(check.stdout).toContain('  => all good\n');
  });
});
