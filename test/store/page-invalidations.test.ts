import { afterEach, describe, expect, it } from 'vitest';
import { aggregateSettings } from '../../src/app/aggregates.ts';
import { DEFAULT_WORKING_TIME } from '../../src/config-working-time.ts';
import { streams as allStreams } from '../../jobs/index.ts';
import { pageSpans } from '../../src/store/aggregate-page-invalidations.ts';
import { KEY_CHUNK } from '../../src/store/aggregate-plan.ts';
import { sinkDef, upserted } from '../../src/store/sinks.ts';
import type { SinkDef } from '../../src/store/sink-def.ts';
import type { OccupancyRecord, Store } from '../../src/store/types.ts';
import { DIALECTS, freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { execRaw, migrateAsReleased } from '../support/legacy-database.ts';
import { dumpAggregates } from '../sync/aggregate-dump.ts';
import { checkpoint } from './harness.ts';

/**
 * A poll page's invalidation row (aggregate_page_invalidations.spans) names its floor spaces by key, grouped by their
 * readings' first and last instant (migration 0020): a backfill page of a window's ticks is one group, a few bytes a
 * space. Rows an earlier version wrote (a triple per space, named by id) are rewritten by the migration, so what was
 * pending stays pending.
 */

const reading = (space: string, observedAt: string): OccupancyRecord => ({ floorSpaceId: space, observedAt, occupancyStatus: 'CurrentlyOccupied', headcount: 1, eventId: null });
const ms = (iso: string) => Date.parse(iso);

describe("a page's invalidation spans", () => {
  it('groups the floor spaces whose readings span alike, by key, each space once with its first and last instant', () => {
    const spans = new Map<number, [string, string]>([
      [11, ['2026-03-02T08:00:00.000Z', '2026-03-02T08:05:00.000Z']],
      [13, ['2026-03-02T08:10:00.000Z', '2026-03-02T08:10:00.000Z']],
      [12, ['2026-03-02T08:00:00.000Z', '2026-03-02T08:05:00.000Z']],
    ]);
    expect(pageSpans(spans)).toEqual([
      [ms('2026-03-02T08:00:00.000Z'), ms('2026-03-02T08:05:00.000Z'), 11, 12],
      [ms('2026-03-02T08:10:00.000Z'), ms('2026-03-02T08:10:00.000Z'), 13],
    ]);
  });

  it('a window of 1,000 floor spaces ticking together is one group of a few bytes a space', () => {
    const spans = new Map<number, [string, string]>();
    for (let s = 0; s < 1000; s++) spans.set(100_000 + s, ['2026-03-02T08:00:00.000Z', '2026-03-02T08:10:00.000Z']);
    const groups = pageSpans(spans);
    expect(groups).toHaveLength(1);
    expect(groups[0]!.length).toBe(1002);
    expect(JSON.stringify(groups).length / 1000).toBeLessThan(8);
  });

  it("the sink finds each floor space's first and last instant as it writes the page's rows, whatever their order and however the time is given", () => {
    const sink = sinkDef('occupancy', 'postgres');
    const prepared = { spaces: new Map([['a', 11], ['b', 12]]), statuses: new Map([['CurrentlyOccupied', 1]]), arrival: 1, spans: new Map() };
    const records = [
      reading('a', '2026-03-02T08:05:00.000Z'),
      reading('b', '2026-03-02T09:00:00+01:00'),
      reading('a', '2026-03-02T08:00:00.000Z'),
      reading('a', '2026-03-02T08:10:00.000Z'),
      reading('b', '2026-03-02T08:05:00.000Z'),
      reading('a', '2026-03-02T08:05:00.000Z'),
    ];
    const row: unknown[] = [];
    records.forEach((r, i) => sink.fill(r, row, 0, i, prepared));
    expect(upserted(sink as SinkDef<unknown>, prepared).readingSpans).toEqual(
      new Map([
        [11, ['2026-03-02T08:00:00.000Z', '2026-03-02T08:10:00.000Z']],
        [12, ['2026-03-02T08:00:00.000Z', '2026-03-02T08:05:00.000Z']],
      ]),
    );
  });
});

const SETTINGS = aggregateSettings({ workingTime: DEFAULT_WORKING_TIME }, allStreams);
const AT = '2026-03-02T09:00:00.000Z';

describe.each(DIALECTS)('page invalidation rows, migrated, committed and refreshed (%s)', (dialect) => {
  let db: TestDatabase | undefined;
  let store: Store | undefined;
  afterEach(async () => {
    await store?.close();
    await db?.drop();
    store = undefined;
    db = undefined;
  });

  it("a page row of an earlier version (a triple per floor space id) becomes groups by key: the same spaces pending, over the same range", async () => {
    db = await freshDatabase(dialect, 'page-invalidation-keys');
    await migrateAsReleased(db, '0019_floor_hours_building_date_idx');
    const a = ms('2026-03-02T08:00:00.000Z');
    const b = ms('2026-03-02T08:55:00.000Z');
    await execRaw(db, [
      "INSERT INTO floor_spaces (customer_id, floor_space_id) VALUES ('c1', 'fs-1'), ('c1', 'fs-2'), ('c2', 'fs-1')",
      `INSERT INTO aggregate_page_invalidations (customer_id, spans, invalidated_at) VALUES ('c1', '${JSON.stringify([['fs-1', a, b], ['fs-2', a + 1, b - 1]])}', '${AT}')`,
      `INSERT INTO aggregate_page_invalidations (customer_id, spans, invalidated_at) VALUES ('c2', '${JSON.stringify([['fs-1', a - 5, b + 5]])}', '${AT}')`,
    ]);
    store = await openTestStore(db);
    const keys = Object.fromEntries(
      (await store.query<{ c: string; id: string; k: number | string }>('SELECT customer_id AS c, floor_space_id AS id, floor_space_key AS k FROM floor_spaces')).map((r) => [`${r.c}/${r.id}`, Number(r.k)]),
    );
    const rows = await store.query<{ c: string; s: string }>('SELECT customer_id AS c, spans AS s FROM aggregate_page_invalidations ORDER BY id');
    expect(rows.map((r) => [r.c, JSON.parse(r.s)])).toEqual([
      ['c1', [[a, b, keys['c1/fs-1']], [a + 1, b - 1, keys['c1/fs-2']]].sort((x, y) => x[2]! - y[2]!)],
      ['c2', [[a - 5, b + 5, keys['c2/fs-1']]]],
    ]);
    expect(await store.pendingAggregates()).toEqual([
      { customerId: 'c1', floorSpaces: 2, from: new Date(a).toISOString(), through: new Date(b).toISOString(), since: AT },
      { customerId: 'c2', floorSpaces: 1, from: new Date(a - 5).toISOString(), through: new Date(b + 5).toISOString(), since: AT },
    ]);
    // A refresh folds c1's rewritten row (nothing to compute: no readings) and leaves c2's.
    await store.refreshAggregates('c1', SETTINGS);
    expect((await store.pendingAggregates()).map((p) => p.customerId)).toEqual(['c2']);
  });

  it('a page commits one group row for its floor spaces, which status counts and a refresh folds', async () => {
    db = await freshDatabase(dialect, 'page-invalidation-commit');
    store = await openTestStore(db);
    await store.reconcileAggregates('c1', SETTINGS);
    const records = ['fs-1', 'fs-2', 'fs-3'].flatMap((s) => [reading(s, '2026-03-02T08:00:00.000Z'), reading(s, '2026-03-02T08:05:00.000Z')]);
    await store.commitPage({ customerId: 'c1', sink: 'occupancy', at: AT, checkpoint: checkpoint('c1', null), records });
    const rows = await store.query<{ s: string }>('SELECT spans AS s FROM aggregate_page_invalidations');
    expect(rows.map((r) => JSON.parse(r.s))).toEqual([[[ms('2026-03-02T08:00:00.000Z'), ms('2026-03-02T08:05:00.000Z'), expect.any(Number), expect.any(Number), expect.any(Number)]]]);
    expect((await store.pendingAggregates()).map((p) => p.floorSpaces)).toEqual([3]);
    const refreshed = await store.refreshAggregates('c1', SETTINGS);
    expect(refreshed.spaces).toBe(3);
    expect(await store.pendingAggregates()).toEqual([]);
  });

  it('a page whose times come with an offset, as a Date or as epoch ms (the public store takes them) invalidates the instants it stored', async () => {
    db = await freshDatabase(dialect, 'page-invalidation-offsets');
    store = await openTestStore(db);
    await store.reconcileAggregates('c1', SETTINGS);
    // 12:00+05:00 is 07:00Z, before 08:00Z: as text it sorts after it, and the span was [08:00, 07:00], no hour at all.
    const records = [
      reading('fs-1', '2026-03-02T12:00:00+05:00'),
      reading('fs-1', '2026-03-02T08:00:00.000Z'),
      { ...reading('fs-2', ''), observedAt: new Date('2026-03-02T07:30:00.000Z') as never },
      { ...reading('fs-2', ''), observedAt: ms('2026-03-02T06:45:00.000Z') as never },
    ];
    await store.commitPage({ customerId: 'c1', sink: 'occupancy', at: AT, checkpoint: checkpoint('c1', null), records });
    const pending = await store.pendingAggregates();
    expect(pending.map((p) => [p.floorSpaces, p.from, p.through])).toEqual([[2, '2026-03-02T06:45:00.000Z', '2026-03-02T08:00:00.000Z']]);
    const refreshed = await store.refreshAggregates('c1', SETTINGS);
    expect(refreshed.buckets).toBeGreaterThan(0);
    const kept = await dumpAggregates(store);
    await store.rebuildAggregates({ customerId: 'c1' }, SETTINGS);
    expect(await dumpAggregates(store)).toEqual(kept);
  });

  it('a reading of a clock gone wrong (year 9999, year 1, 1969, 2200) is refused with its record named, and the customer\'s aggregates go on', async () => {
    db = await freshDatabase(dialect, 'page-invalidation-far');
    store = await openTestStore(db);
    await store.reconcileAggregates('c1', SETTINGS);
    for (const far of ['9999-12-31T23:50:00.000Z', '0001-01-01T00:10:00.000Z', '1969-12-31T23:59:59.999Z', '2200-01-01T00:00:00.000Z']) {
      const page = { customerId: 'c1', sink: 'occupancy' as const, at: AT, checkpoint: checkpoint('c1', null), records: [reading('good', '2026-03-02T08:00:00.000Z'), reading('bad', far)] };
      await expect(store.commitPage(page)).rejects.toThrow(`occupancy record 1: observedAt must be in the years 1970 to 2199 (no sensor measured before or will after), got "${far}". Fix: check the source's clock, or the field mapped to observedAt`);
    }
    expect(Number((await store.query<{ n: unknown }>('SELECT count(*) AS n FROM occupancy_readings'))[0]!.n)).toBe(0);
    await store.commitPage({ customerId: 'c1', sink: 'occupancy', at: AT, checkpoint: checkpoint('c1', null), records: [reading('good', '2026-03-02T08:00:00.000Z'), reading('edge', '1970-01-01T00:00:00.000Z')] });
    const refreshed = await store.refreshAggregates('c1', SETTINGS);
    expect([refreshed.left, refreshed.buckets > 0]).toEqual([0, true]);
  });

  it('a refresh claims the pages and recomputes their spaces in one transaction; one that fails leaves every page pending', async () => {
    db = await freshDatabase(dialect, 'page-invalidation-direct');
    store = await openTestStore(db);
    await store.reconcileAggregates('c1', SETTINGS);
    for (const s of ['fs-1', 'fs-2']) {
      await store.commitPage({ customerId: 'c1', sink: 'occupancy', at: AT, checkpoint: checkpoint('c1', null), records: [reading(s, '2026-03-02T08:00:00.000Z'), reading(s, '2026-03-02T08:05:00.000Z')] });
    }
    await store.query('ALTER TABLE occupancy_buckets RENAME TO occupancy_buckets_away');
    await expect(store.refreshAggregates('c1', SETTINGS)).rejects.toThrow();
    await store.query('ALTER TABLE occupancy_buckets_away RENAME TO occupancy_buckets');
    // Nothing was claimed for good, nothing folded: both pages' rows are as they were.
    expect(Number((await store.query<{ n: unknown }>('SELECT count(*) AS n FROM aggregate_page_invalidations'))[0]!.n)).toBe(2);
    expect(Number((await store.query<{ n: unknown }>('SELECT count(*) AS n FROM aggregate_invalidations'))[0]!.n)).toBe(0);
    expect((await store.pendingAggregates()).map((p) => p.floorSpaces)).toEqual([2]);
    expect(await store.refreshAggregates('c1', SETTINGS)).toEqual({ customerId: 'c1', spaces: 2, buckets: 2, left: 0 });
    expect(await store.pendingAggregates()).toEqual([]);
    expect(Number((await store.query<{ n: unknown }>('SELECT count(*) AS n FROM aggregate_invalidations'))[0]!.n)).toBe(0);
    const kept = await dumpAggregates(store);
    await store.rebuildAggregates({ customerId: 'c1' }, SETTINGS);
    expect(await dumpAggregates(store)).toEqual(kept);
  });

  it('a refresh of several batches whose bucket write fails reports that write, not the statements sent after it, and leaves every page pending', async () => {
    db = await freshDatabase(dialect, 'page-invalidation-fails');
    store = await openTestStore(db);
    await store.reconcileAggregates('c1', SETTINGS);
    // Three batches of floor spaces (KEY_CHUNK a batch): the third's readings are sent after the first's write failed.
    const spaces = Array.from({ length: 2 * KEY_CHUNK + 100 }, (_, i) => `fs-${i}`);
    await store.commitPage({ customerId: 'c1', sink: 'occupancy', at: AT, checkpoint: checkpoint('c1', null), records: spaces.map((s) => reading(s, '2026-03-02T08:00:00.000Z')) });
    await execRaw(db, dialect === 'sqlite'
      ? ["CREATE TRIGGER refuse_buckets BEFORE INSERT ON occupancy_buckets BEGIN SELECT RAISE(ABORT, 'bucket write refused by the test'); END"]
      : [
          "CREATE FUNCTION refuse_buckets() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'bucket write refused by the test'; END $$",
          'CREATE TRIGGER refuse_buckets BEFORE INSERT ON occupancy_buckets FOR EACH STATEMENT EXECUTE FUNCTION refuse_buckets()',
        ]);
    const failed = await store.refreshAggregates('c1', SETTINGS).then(() => undefined, (error: unknown) => error as Error);
    expect(failed).toBeInstanceOf(Error);
    const said = `${failed!.message} ${String((failed!.cause as Error | undefined)?.message ?? '')}`;
    expect(said).toContain('bucket write refused by the test');
    expect(said).not.toMatch(/transaction is aborted/);
    await execRaw(db, dialect === 'sqlite' ? ['DROP TRIGGER refuse_buckets'] : ['DROP TRIGGER refuse_buckets ON occupancy_buckets', 'DROP FUNCTION refuse_buckets()']);
    expect((await store.pendingAggregates()).map((p) => p.floorSpaces)).toEqual([spaces.length]);
    expect(await store.refreshAggregates('c1', SETTINGS)).toEqual({ customerId: 'c1', spaces: spaces.length, buckets: spaces.length, left: 0 });
    const kept = await dumpAggregates(store);
    await store.rebuildAggregates({ customerId: 'c1' }, SETTINGS);
    expect(await dumpAggregates(store)).toEqual(kept);
  });

  it('a space left pending by an earlier refresh is done with the new pages in the same refresh', async () => {
    db = await freshDatabase(dialect, 'page-invalidation-left');
    store = await openTestStore(db);
    await store.reconcileAggregates('c1', SETTINGS);
    await store.commitPage({ customerId: 'c1', sink: 'occupancy', at: AT, checkpoint: checkpoint('c1', null), records: [reading('fs-1', '2026-03-02T08:00:00.000Z')] });
    // What a refresh that folded fs-1's page and then failed leaves: its row in aggregate_invalidations, no page row.
    await store.query('DELETE FROM aggregate_page_invalidations');
    await store.query(`INSERT INTO aggregate_invalidations (floor_space_key, customer_id, first_ms, last_ms, revision, invalidated_at)
      SELECT floor_space_key, customer_id, ${ms('2026-03-02T08:00:00.000Z')}, ${ms('2026-03-02T08:00:00.000Z')}, 1, '${AT}' FROM floor_spaces WHERE floor_space_id = 'fs-1'`);
    await store.commitPage({ customerId: 'c1', sink: 'occupancy', at: AT, checkpoint: checkpoint('c1', null), records: [reading('fs-2', '2026-03-02T09:00:00.000Z')] });
    expect((await store.pendingAggregates()).map((p) => p.floorSpaces)).toEqual([2]);
    const done = await store.refreshAggregates('c1', SETTINGS);
    expect([done.spaces, done.left]).toEqual([2, 0]);
    expect(await store.pendingAggregates()).toEqual([]);
    const kept = await dumpAggregates(store);
    expect(kept.length).toBeGreaterThan(0);
    await store.rebuildAggregates({ customerId: 'c1' }, SETTINGS);
    expect(await dumpAggregates(store)).toEqual(kept);
  });
});
