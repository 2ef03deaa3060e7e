import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import type { Store } from '../../src/store/types.ts';
import { DAY, HOUR, MIN, dbRows, syncOnce, syncSettings, truthRows } from './helpers.ts';
import { occupancy } from '../../jobs/index.ts';
import { MAX_PAGES_PER_COMMIT } from '../../src/sync/run/committer.ts';
import { openTestStore, freshDatabase, type Dialect, type TestDatabase } from '../support/databases.ts';

/**
 * Windows of one stream read at the same time (issue 25): whatever order they complete in, the watermark and a
 * backfill's progress move only over the completed windows from the first, and a run stopped at any page resumes to a
 * database equal to the truth.
 */

const START = Date.parse('2026-01-10T00:00:00.000Z');
/** Every answer 40 ms late: a few times what a test page of 37 records takes to commit. */
const NETWORK = { latencyMs: 40 };

/** The suite for one dialect: each dialect's file runs it, so the two run side by side. */
export function parallelWindowsSuite(dialect: Dialect): void {
  describe(`windows read in parallel (${dialect})`, () => {
    let clock: FakeClock;
    let sandbox: Sandbox;
    let db: TestDatabase;
    let store: Store;
    const settings = syncSettings({ stepMs: HOUR, pageSize: 37, initialHistoryMs: 2 * DAY, windowConcurrency: 4 });

    beforeEach(async () => {
      clock = new FakeClock(START);
      sandbox = await startSandbox({ clock, seed: 21, customers: 1, dataStart: START - 3 * DAY, intervalMs: 5 * MIN, lateArrivalMaxMs: 10 * MIN });
      // An API a network away: a run reads windows in parallel only once its store waits for the answers
      // (src/sync/run/window-demand.ts); a local sandbox can answer faster than the store commits.
      sandbox.setFaults(NETWORK);
      db = await freshDatabase(dialect, 'parallel');
      store = await openTestStore(db);
    });
    afterEach(async () => {
      await store.close();
      await sandbox.close();
      await db.drop();
    });

    it('an incremental run and a backfill land exactly the truth, the watermark at the last window', async () => {
      const customer = sandbox.customers[0]!.id;
      const report = await syncOnce({ store, sandbox, clock, settings });
      expect(report.outcomes.every((o) => o.status === 'succeeded')).toBe(true);
      const state = await store.getState(customer, 'occupancy');
      expect(state).toMatchObject({ windowStart: null, pageCursor: null });
      const to = Date.parse(state!.watermark!);
      expect(to).toBe(START - MIN);
      expect(await dbRows(store, customer)).toEqual(truthRows(sandbox, customer, { from: START - 2 * DAY, to }));

      const range = { from: START - 3 * DAY, to: START - 2 * DAY };
      const backfill = await syncOnce({ store, sandbox, clock, settings, request: { mode: 'backfill', ...range } });
      expect(backfill.outcomes.every((o) => o.status === 'succeeded')).toBe(true);
      expect(await dbRows(store, customer)).toEqual(truthRows(sandbox, customer, { from: range.from, to }));
      expect(await store.getState(customer, 'occupancy#backfill')).toMatchObject({ windowStart: null });
    });

    it('stopped after any number of pages, the state never claims a window that is not stored, and the rerun completes it', async () => {
      const customer = sandbox.customers[0]!.id;
      for (const stopAfter of [3, 17, 40]) {
        const controller = new AbortController();
        let pages = 0;
        const report = await syncOnce({
          store,
          sandbox,
          clock,
          settings,
          request: { mode: 'backfill', from: START - 3 * DAY, to: START - DAY },
          signal: controller.signal,
          onProgress: (e) => {
            if (e.stream.startsWith('occupancy') && ++pages === stopAfter) controller.abort(new Error('SIGTERM'));
          },
        });
        expect(report.outcomes.find((o) => o.stateKey === 'occupancy#backfill')?.status).toBe('interrupted');
        // Everything before the stored progress is stored: the frontier never passes a window still being read.
        const state = await store.getState(customer, 'occupancy#backfill');
        const progress = Date.parse(state!.windowStart!);
        expect(await dbRows(store, customer, { to: progress })).toEqual(truthRows(sandbox, customer, { from: START - 3 * DAY, to: progress }));
      }
      const rest = await syncOnce({ store, sandbox, clock, settings, request: { mode: 'backfill', from: START - 3 * DAY, to: START - DAY } });
      expect(rest.outcomes.every((o) => o.status === 'succeeded')).toBe(true);
      expect(await dbRows(store, customer)).toEqual(truthRows(sandbox, customer, { from: START - 3 * DAY, to: START - DAY }));
    });

    it('a rerun reads no page again: the windows read ahead of the first incomplete one resume where they stopped', async () => {
      const customer = sandbox.customers[0]!.id;
      const request = { mode: 'backfill' as const, from: START - 3 * DAY, to: START - DAY };
      const committed = async (target: Store, stopAfter?: number) => {
        const controller = new AbortController();
        let pages = 0;
        await syncOnce({
          store: target,
          sandbox,
          clock,
          settings,
          request,
          // The readings alone, so the answers the faults below name are theirs, not the listings'.
          streams: [occupancy],
          signal: controller.signal,
          onProgress: (e) => {
            if (!e.stream.startsWith('occupancy')) return;
            pages = e.pages;
            // A commit may take several pages (committer.ts): the run stops at the first that reaches stopAfter.
            if (stopAfter !== undefined && pages >= stopAfter) controller.abort(new Error('SIGTERM'));
          },
        });
        return pages;
      };
      const reference = await freshDatabase(dialect, 'parallel-reference');
      const referenceStore = await openTestStore(reference);
      let whole: number;
      try {
        whole = await committed(referenceStore);
      } finally {
        await referenceStore.close();
        await reference.drop();
      }

      // Each stopped run holds its first window back: the first answer is late (the store waits for it, which opens the
      // windows, busy machine or not) and the second (that window's next page, or the next window's first when it had
      // one page left: the frontier's head either way) is held past the run's end. The other three readers go on: a
      // window has at most four pages (144 readings, 37 a page), so once they committed ten pages, one of their windows
      // is complete beyond the head.
      let read = 0;
      for (const stopAfter of [11, 12, 13, 14, 15, 17]) {
        sandbox.setFaults({ ...NETWORK, slowRequests: { 0: 300, 1: 60_000 } });
        read += await committed(store, stopAfter);
        const state = await store.getState(customer, 'occupancy#backfill');
        for (const w of state!.windows ?? []) expect(Date.parse(w.from)).toBeGreaterThan(Date.parse(state!.windowStart!));
        // The run stopped with a window beyond its first incomplete one complete: the state kept it.
        expect(state!.windows?.some((w) => w.done)).toBe(true);
      }
      sandbox.setFaults(NETWORK);
      const rest = await committed(store);
      expect(read + rest).toBe(whole);
      expect(await dbRows(store, customer)).toEqual(truthRows(sandbox, customer, request));
      expect(await store.getState(customer, 'occupancy#backfill')).toMatchObject({ windowStart: null });
      expect((await store.getState(customer, 'occupancy#backfill'))!.windows).toBeUndefined();
    });

    it('holds at most SYNC_MAX_PENDING_RECORDS in pages requested and not yet committed, while commits are slow', async () => {
      const customer = sandbox.customers[0]!.id;
      const request = { mode: 'backfill' as const, from: START - 3 * DAY, to: START - 2 * DAY };
      // The most pages requested and not yet committed at any commit, with commits slower than the answers.
      const outstanding = async (maxPendingRecords: number) => {
        const database = await freshDatabase(dialect, 'parallel-pending');
        const target = await openTestStore(database);
        let committed = 0;
        let most = 0;
        const startQueries = sandbox.stats.queries;
        const slow = withCommit(target, async (pages, commit) => {
          most = Math.max(most, sandbox.stats.queries - startQueries - committed);
          await new Promise((resolve) => setTimeout(resolve, 5));
          const result = await commit(pages);
          committed += pages.length;
          return result;
        });
        try {
          const report = await syncOnce({ store: slow, sandbox, clock, settings: { ...settings, maxPendingRecords }, request, streams: [occupancy] });
          expect(report.outcomes.every((o) => o.status === 'succeeded')).toBe(true);
          expect(await dbRows(target, customer)).toEqual(truthRows(sandbox, customer, request));
        } finally {
          await target.close();
          await database.drop();
        }
        return most;
      };
      // One page's records (37): a request goes only when every earlier page is committed.
      expect(await outstanding(37)).toBe(1);
      // Unbounded, the 4 windows keep a request in flight each while pages wait for their commit: the bound above is
      // what held the pages back (and the answers' latency opened the windows: one window holds at most two pages).
      expect(await outstanding(1_000_000)).toBeGreaterThan(2);
    });

    it('pages that wait for their commit go together in the next one, in order, and land exactly the truth', async () => {
      const customer = sandbox.customers[0]!.id;
      const request = { mode: 'backfill' as const, from: START - 3 * DAY, to: START - 2 * DAY };
      sandbox.setFaults({});
      // A store much slower than the API: pages pile up behind each commit.
      const sizes: number[] = [];
      const cursors: Array<string | null> = [];
      const slow = withCommit(store, async (pages, commit) => {
        await new Promise((resolve) => setTimeout(resolve, 30));
        sizes.push(pages.length);
        cursors.push(...pages.map((p) => p.checkpoint.pageCursor ?? null));
        return commit(pages);
      });
      const report = await syncOnce({ store: slow, sandbox, clock, settings: { ...settings, maxPendingRecords: 1_000_000 }, request, streams: [occupancy] });
      expect(report.outcomes.map((o) => [o.status, o.pages])).toEqual([['succeeded', sizes.reduce((a, b) => a + b, 0)]]);
      expect(Math.max(...sizes)).toBeGreaterThan(1);
      expect(Math.max(...sizes)).toBeLessThanOrEqual(MAX_PAGES_PER_COMMIT);
      expect(sizes.length).toBeLessThan(report.outcomes[0]!.pages);
      // The run's last page completes the range: its checkpoint holds no cursor.
      expect(cursors.at(-1)).toBeNull();
      expect(await dbRows(store, customer)).toEqual(truthRows(sandbox, customer, request));
      expect(await store.getState(customer, 'occupancy#backfill')).toMatchObject({ windowStart: null });
    });

    it('a commit that fails ends the run, and no page committed after it claims the failed one', async () => {
      const customer = sandbox.customers[0]!.id;
      const request = { mode: 'backfill' as const, from: START - 3 * DAY, to: START - DAY };
      // The first three commits are the listings (buildings, floors, floor spaces): the readings' third, eighth and
      // fourteenth pages fail.
      for (const failAt of [6, 11, 17]) {
        let commits = 0;
        let failed: number | undefined;
        // The database refuses the commit of one page (with the pages that share it); those queued behind would succeed.
        const flaky = withCommit(store, async (pages, commit) => {
          const first = commits + 1;
          commits += pages.length;
          if (first <= failAt && failAt <= commits) {
            failed = commits;
            await new Promise((resolve) => setTimeout(resolve, 20));
            throw new Error('the database went away');
          }
          return commit(pages);
        });
        const report = await syncOnce({ store: flaky, sandbox, clock, settings, request });
        const outcome = report.outcomes.find((o) => o.stateKey === 'occupancy#backfill')!;
        expect(outcome.status).toBe('failed');
        // No commit was attempted after the one that failed.
        expect(commits).toBe(failed);
        const state = await store.getState(customer, 'occupancy#backfill');
        const progress = Date.parse(state!.windowStart!);
        expect(await dbRows(store, customer, { to: progress })).toEqual(truthRows(sandbox, customer, { from: request.from, to: progress }));
      }
      const rest = await syncOnce({ store, sandbox, clock, settings, request });
      expect(rest.outcomes.every((o) => o.status === 'succeeded')).toBe(true);
      expect(await dbRows(store, customer)).toEqual(truthRows(sandbox, customer, request));
    });
  });
}

type CommitPages = Store['commitPages'];

/**
 * `store` with its commits run through `around` (given the pages one commit takes, in order, and the real commit):
 * commitPage as a commit of one page; everything else as is.
 */
function withCommit(store: Store, around: (pages: Parameters<CommitPages>[0], commit: CommitPages) => ReturnType<CommitPages>): Store {
  return new Proxy(store, {
    get(target, name, receiver) {
      if (name === 'commitPages') return (pages: Parameters<CommitPages>[0]) => around(pages, (p) => target.commitPages(p));
      if (name === 'commitPage') return (page: Parameters<CommitPages>[0][number]) => around([page], (p) => target.commitPages(p));
      const value = Reflect.get(target, name, receiver) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
