import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { AuthError, ExitCode, UsageError } from '../../src/errors.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import type { Store } from '../../src/store/types.ts';
import { summaryLine } from '../../src/app/summary.ts';
import { exitCodeOf } from '../../src/cli/exit-code.ts';
import { buildings, occupancy } from '../../jobs/index.ts';
import { DAY, HOUR, MIN, againstTruth, dbRows, syncOnce, syncSettings, truthRows } from './helpers.ts';
import { DIALECTS, openTestStore, freshDatabase, type TestDatabase } from '../support/databases.ts';

const START = Date.parse('2026-01-10T00:00:00.000Z');

describe.each(DIALECTS)('sync engine on %s', (dialect) => {
  let clock: FakeClock;
  let sandbox: Sandbox;
  let db: TestDatabase;
  let store: Store;

  beforeEach(async () => {
    clock = new FakeClock(START);
    sandbox = await startSandbox({ clock, seed: 11, customers: 2, dataStart: START - DAY, intervalMs: 5 * MIN, lateArrivalMaxMs: 10 * MIN });
    db = await freshDatabase(dialect, 'engine');
    store = await openTestStore(db);
  });
  afterEach(async () => {
    await store.close();
    await sandbox.close();
    await db.drop();
  });

  async function expectGroundTruth(): Promise<void> {
    for (const customer of sandbox.customers) {
      const state = await store.getState(customer.id, 'occupancy');
      expect(state?.watermark).toBeTruthy();
      const held = againstTruth(await dbRows(store, customer.id), sandbox, customer.id, state!.watermark!, 0);
      expect(held.stored).toEqual(held.truth);
      expect(held.strays).toEqual([]);
    }
  }

  it('matches the ground truth after incremental runs with late arrivals inside the lookback', async () => {
    const watermarks: number[] = [];
    for (const advance of [0, 7 * MIN, 37 * MIN, 3 * HOUR, 1 * MIN, 0, 13 * HOUR, 2 * MIN]) {
      clock.advance(advance);
      const report = await syncOnce({ store, sandbox, clock });
      expect(report.outcomes.every((o) => o.status === 'succeeded')).toBe(true);
      expect(exitCodeOf(report.outcomes)).toBe(ExitCode.OK);
      await expectGroundTruth();
      const state = await store.getState(sandbox.customers[0]!.id, 'occupancy');
      const w = Date.parse(state!.watermark!);
      expect(w).toBeLessThanOrEqual(clock.now() - MIN);
      if (watermarks.length) expect(w).toBeGreaterThanOrEqual(watermarks.at(-1)!);
      watermarks.push(w);
      expect(state!.windowStart).toBeNull();
    }
    const runs = await store.lastRuns();
    expect(runs.map((r) => r.status)).toEqual(runs.map(() => 'succeeded'));
    expect(summaryLine('sync', await syncOnce({ store, sandbox, clock }))).toMatch(/^sync: 2 customers, 4 streams, \d+ pages?, [\d,]+ records?, 0 failed in \d+\.\ds$/);
  });

  it('reads nothing while the clock is behind the watermark, then continues without a gap', async () => {
    await syncOnce({ store, sandbox, clock });
    const customer = sandbox.customers[0]!.id;
    const before = (await store.getState(customer, 'occupancy'))!;
    clock.advance(-2 * HOUR);
    const report = await syncOnce({ store, sandbox, clock, streams: [occupancy] });
    expect(report.outcomes.map((o) => [o.status, o.records, o.note])).toEqual([
      ['succeeded', 0, 'clock-behind'],
      ['succeeded', 0, 'clock-behind'],
    ]);
    expect((await store.getState(customer, 'occupancy'))!.watermark).toBe(before.watermark);
    clock.advance(5 * HOUR);
    await syncOnce({ store, sandbox, clock });
    await expectGroundTruth();
  });

  it('resumes after crashes mid-window (a commit that throws) without gaps or duplicates', async () => {
    const settings = syncSettings({ pageSize: 37, stepMs: 4 * HOUR });
    const first = sandbox.customers[0]!;
    const only = [{ id: first.id, key: first.readKey.key, secret: first.readKey.secret }];
    const cursors: string[] = [];
    // Several crashes in a row, each run resuming the previous one's checkpoint before crashing itself.
    for (const failAt of [4, 9, 1, 23, 2]) {
      // Pages handed to a commit, and those committed: a commit may take several (committer.ts), and the one that
      // holds page failAt fails whole.
      let handed = 0;
      let stored = 0;
      const failing = new Proxy(store, {
        get(target, prop, receiver) {
          if (prop === 'commitPages') {
            return async (pages: Parameters<Store['commitPages']>[0]) => {
              const first = handed + 1;
              handed += pages.length;
              if (first <= failAt && failAt <= handed) throw new Error(`simulated crash at the commit of page ${failAt}`);
              await target.commitPages(pages);
              stored += pages.length;
            };
          }
          const value = Reflect.get(target, prop, receiver);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      const crashed = await syncOnce({ store: failing, sandbox, clock, settings, streams: [occupancy], customers: only });
      expect(stored).toBeLessThan(failAt);
      expect({ ...crashed.outcomes[0], error: String(crashed.outcomes[0]!.error) }).toMatchObject({ status: 'failed', pages: stored, error: `Error: simulated crash at the commit of page ${failAt}` });
      const state = await store.getState(first.id, 'occupancy');
      if (state?.pageCursor) cursors.push(state.pageCursor);
    }
    expect(cursors.length).toBeGreaterThan(0);
    const resumed = await syncOnce({ store, sandbox, clock, settings, streams: [occupancy] });
    expect(resumed.outcomes.map((o) => o.error)).toEqual([undefined, undefined]);
    await expectGroundTruth();
    const rows = await dbRows(store, first.id);
    expect(new Set(rows.map((r) => `${r.floorSpaceId}|${r.observedAt}`)).size).toBe(rows.length);
    clock.advance(50 * MIN);
    await syncOnce({ store, sandbox, clock, settings });
    await expectGroundTruth();
  });

  it('stops after the current page when aborted, records the run as interrupted, and the rerun completes it', async () => {
    const settings = syncSettings({ pageSize: 25 });
    const controller = new AbortController();
    // A commit may take several pages (committer.ts): the run stops at the first commit that reaches 5.
    let stoppedAt: number | undefined;
    const report = await syncOnce({
      store,
      sandbox,
      clock,
      settings,
      signal: controller.signal,
      onProgress: (e) => {
        if (e.stream === 'occupancy' && e.pages >= 5 && stoppedAt === undefined) {
          stoppedAt = e.pages;
          controller.abort(new Error('SIGTERM'));
        }
      },
    });
    const interrupted = report.outcomes.filter((o) => o.status === 'interrupted');
    expect(interrupted.length).toBeGreaterThan(0);
    expect(exitCodeOf(report.outcomes)).toBe(ExitCode.OK);
    const runs = await store.lastRuns();
    expect(stoppedAt).toBeDefined();
    expect(runs.some((r) => r.status === 'interrupted' && r.pages === stoppedAt)).toBe(true);
    // Each interrupted occupancy run that committed pages kept a checkpoint: mid-window (a page cursor) or, when its
    // last page happened to complete a window, an advanced watermark. Customers run in parallel, so which one it is
    // varies, and one stopped before its first commit (or before it started) has nothing to keep.
    const committed = interrupted.filter((o) => o.stream === 'occupancy' && o.pages > 0);
    expect(committed.length).toBeGreaterThan(0);
    for (const outcome of committed) {
      const state = await store.getState(outcome.customerId, 'occupancy');
      expect(state?.pageCursor ?? state?.watermark).toBeTruthy();
    }
    await syncOnce({ store, sandbox, clock, settings });
    await expectGroundTruth();
  });

  it('backfill interrupted and resumed covers its range exactly once and leaves the incremental watermark alone', async () => {
    clock.advance(HOUR);
    await syncOnce({ store, sandbox, clock, streams: [occupancy] });
    const customer = sandbox.customers[0]!;
    const incremental = await store.getState(customer.id, 'occupancy');
    const range = { from: START - DAY + 7 * MIN, to: START - 6 * HOUR + 3 * MIN };
    const request = { mode: 'backfill' as const, ...range };
    const settings = syncSettings({ pageSize: 20, stepMs: 2 * HOUR });
    const controller = new AbortController();
    // A commit may take several pages (committer.ts): the run stops at the first commit that reaches 17.
    let stoppedAt: number | undefined;
    const first = await syncOnce({
      store, sandbox, clock, settings, request, signal: controller.signal, streams: [occupancy],
      onProgress: (e) => {
        if (e.customerId !== customer.id || e.pages < 17 || stoppedAt !== undefined) return;
        stoppedAt = e.pages;
        controller.abort();
      },
    });
    expect(stoppedAt).toBeDefined();
    expect(first.outcomes.find((o) => o.customerId === customer.id)).toMatchObject({ status: 'interrupted', stateKey: 'occupancy#backfill', pages: stoppedAt });
    const second = await syncOnce({ store, sandbox, clock, settings, request, streams: [occupancy] });
    expect(second.outcomes.every((o) => o.status === 'succeeded')).toBe(true);
    // It says that it resumed, and where.
    expect(second.outcomes.find((o) => o.customerId === customer.id)!.note).toMatch(/^resumed at \S+ \(mid-window, at its last committed page\): \d+ of 9 windows were done$/);

    const truth = truthRows(sandbox, customer.id, range);
    expect(await dbRows(store, customer.id, range)).toEqual(truth);
    const records = [...first.outcomes, ...second.outcomes].filter((o) => o.customerId === customer.id).reduce((n, o) => n + o.records, 0);
    expect(records).toBe(truth.length);
    const backfill = await store.getState(customer.id, 'occupancy#backfill');
    expect(backfill).toMatchObject({ watermark: null, rangeStart: new Date(range.from).toISOString(), rangeEnd: new Date(range.to).toISOString(), windowStart: null });
    expect(await store.getState(customer.id, 'occupancy')).toEqual(incremental);

    // A complete range asked again runs nothing and records no run: the run that loaded it stays the last one.
    const lastBefore = (await store.lastRuns(customer.id)).find((r) => r.stateKey === 'occupancy#backfill');
    const again = await syncOnce({ store, sandbox, clock, settings, request, streams: [occupancy] });
    expect(again.outcomes.map((o) => [o.records, o.note])).toEqual([[0, 'complete'], [0, 'complete']]);
    expect((await store.lastRuns(customer.id)).find((r) => r.stateKey === 'occupancy#backfill')).toEqual(lastBefore);
  });

  it('a backfill of another range is refused without restart, and with it starts over for that range, earlier or later', async () => {
    const settings = syncSettings({ stepMs: 3 * HOUR });
    const customer = sandbox.customers[0]!;
    const ranges = [
      { from: START - 12 * HOUR, to: START - 6 * HOUR },
      { from: START - DAY, to: START - 18 * HOUR },
      { from: START - 17 * HOUR, to: START - 13 * HOUR },
    ];
    for (const [i, range] of ranges.entries()) {
      if (i > 0) {
        const refused = await syncOnce({ store, sandbox, clock, settings, streams: [occupancy], request: { mode: 'backfill', ...range } });
        expect(refused.outcomes.map((o) => o.status)).toEqual(['failed', 'failed']);
        expect(refused.outcomes[0]!.error).toBeInstanceOf(UsageError);
        expect(String(refused.outcomes[0]!.error)).toMatch(/a backfill of \[.*\) is stored \(complete\); this one asks for \[.*\)\. Fix: add --restart/);
        // Refused before a run is recorded.
        const [runs] = await store.query<{ n: unknown }>(`SELECT count(*) AS n FROM sync_runs WHERE customer_id = $1 AND stream = 'occupancy#backfill'`, [customer.id]);
        expect(Number(runs!.n)).toBe(i);
      }
      const report = await syncOnce({ store, sandbox, clock, settings, streams: [occupancy], request: { mode: 'backfill', ...range, restart: true } });
      expect(report.outcomes.map((o) => o.error)).toEqual([undefined, undefined]);
      expect(report.outcomes[0]!.records).toBe(truthRows(sandbox, report.outcomes[0]!.customerId, range).length);
      expect((await store.getState(customer.id, 'occupancy#backfill'))!.rangeStart).toBe(new Date(range.from).toISOString());
    }
    for (const range of ranges) expect(await dbRows(store, customer.id, range)).toEqual(truthRows(sandbox, customer.id, range));
  });

  it('marks a building removed from a complete listing as deleted, and clears it when it returns', async () => {
    const customer = sandbox.customers[0]!;
    const deletedAt = async () =>
      Object.fromEntries(
        (await store.query<{ id: string; deleted_at: unknown }>('SELECT id, deleted_at FROM buildings WHERE customer_id = $1', [customer.id])).map((r) => [r.id, r.deleted_at]),
      );
    await syncOnce({ store, sandbox, clock, streams: [buildings] });
    const all = sandbox.truth.buildings(customer.id);
    expect(Object.keys(await deletedAt()).sort()).toEqual(all.map((b) => b.id).sort());
    const gone = all[1]!.id;
    sandbox.removeBuilding(customer.id, gone);

    clock.advance(MIN);
    // A filtered listing is not complete: nothing is marked deleted.
    await syncOnce({ store, sandbox, clock, streams: [buildings], settings: syncSettings({ buildingsNameLike: all[0]!.name }) });
    expect(Object.values(await deletedAt()).every((v) => v === null)).toBe(true);

    clock.advance(MIN);
    await syncOnce({ store, sandbox, clock, streams: [buildings] });
    const marked = await deletedAt();
    expect(marked[gone]).not.toBeNull();
    expect(Object.entries(marked).filter(([id, v]) => id !== gone && v !== null)).toEqual([]);

    sandbox.restoreBuilding(customer.id, gone);
    clock.advance(MIN);
    await syncOnce({ store, sandbox, clock, streams: [buildings] });
    expect(Object.values(await deletedAt()).every((v) => v === null)).toBe(true);
  });

  it('syncs customers independently: a wrong secret fails one, the other is synced, the exit code reports it', async () => {
    const [good, bad] = sandbox.customers;
    const report = await syncOnce({
      store, sandbox, clock,
      customers: [
        { id: good!.id, key: good!.readKey.key, secret: good!.readKey.secret },
        { id: bad!.id, key: bad!.readKey.key, secret: 'definitely-not-the-secret' },
      ],
    });
    const byCustomer = (id: string) => report.outcomes.filter((o) => o.customerId === id);
    expect(byCustomer(good!.id).map((o) => o.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
    expect(byCustomer(bad!.id).map((o) => o.status)).toEqual(['failed', 'failed', 'failed', 'failed']);
    expect(byCustomer(bad!.id)[0]!.error).toBeInstanceOf(AuthError);
    expect(exitCodeOf(report.outcomes)).toBe(ExitCode.AUTH);
    const held = againstTruth(await dbRows(store, good!.id), sandbox, good!.id, (await store.getState(good!.id, 'occupancy'))!.watermark!, 0);
    expect(held.stored).toEqual(held.truth);
    expect(held.strays).toEqual([]);
    expect(await dbRows(store, bad!.id)).toEqual([]);
  });

  it('skips a customer whose lock another run holds, syncs the others, and reports "locked"', async () => {
    const other = await openTestStore(db);
    const [held, free] = sandbox.customers;
    const lock = await other.tryLock(held!.id, 'occupancy');
    expect(lock).toBeDefined();
    try {
      const report = await syncOnce({ store, sandbox, clock });
      expect(report.outcomes.filter((o) => o.customerId === held!.id).map((o) => o.status)).toEqual(['locked', 'locked', 'locked', 'locked']);
      expect(report.outcomes.filter((o) => o.customerId === free!.id).map((o) => o.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
      expect(exitCodeOf(report.outcomes)).toBe(ExitCode.LOCKED);
      expect(await dbRows(store, held!.id)).toEqual([]);
      // Nothing half-done: the locked customer's buildings were not synced either.
      expect(await store.query('SELECT id FROM buildings WHERE customer_id = $1', [held!.id])).toEqual([]);
    } finally {
      await lock!.release();
      await other.close();
    }
    const report = await syncOnce({ store, sandbox, clock });
    expect(exitCodeOf(report.outcomes)).toBe(ExitCode.OK);
  });
});
