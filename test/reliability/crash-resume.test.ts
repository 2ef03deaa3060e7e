import { afterAll, expect, it } from 'vitest';
import { startSandbox } from '../../src/sandbox/index.ts';
import type { Store } from '../../src/store/types.ts';
import { freshDatabase, openTestStore, type Dialect } from '../support/databases.ts';
import { spawnCli } from '../support/process.ts';
import { prng } from '../support/random.ts';
import { waitFor } from '../support/wait.ts';
import { childEnv } from '../sync/helpers.ts';
import { Figures, scaled } from './figures.ts';
import { DAY, againstTruth, dbRows } from './sync-harness.ts';

/**
 * Crash and resume across `backfill` and `sync` mixed, 20 SIGKILLs in all (test/sync covers `sync` alone): child
 * processes of the real binary, SIGKILLed at seeded points (after N committed pages, or after a random delay that may
 * fall in start-up, migration or locking), the command for each round drawn from the seed too. After every kill the incremental
 * watermark is read: it never moves backwards. At the end one clean backfill and one clean sync, and the database
 * equals the ground truth over the whole range, each observation once.
 */

async function pagesSoFar(store: Store): Promise<number> {
  const [row] = await store.query<{ n: unknown }>('SELECT coalesce(sum(pages), 0) AS n FROM sync_runs');
  return Number(row?.n ?? 0);
}

const figures = new Figures({ section: 'crash-resume', title: 'Crash and resume: SIGKILL at seeded points, then restart' }, ['crash-resume/postgres', 'crash-resume/sqlite']);
afterAll(() => void figures.publish());

/**
 * No round commits more than about this many pages before its kill, so the data (~86 pages of `sync`, ~266 of
 * `backfill`) outlasts every seeded round and each kill lands on work in progress.
 */
const MAX_PAGES_PER_ROUND = 15;

async function mixedKills(backend: Dialect, seed: number, kills: number) {
  const now = Date.now();
  const hour = 3_600_000;
  const dataStart = Math.floor((now - 4 * DAY) / hour) * hour;
  // lateArrivalMaxMs 0: what is visible now is the whole truth, so a run in real time can be compared exactly.
  const sandbox = await startSandbox({ seed, customers: 1, dataStart, lateArrivalMaxMs: 0 });
  // Answers a network away, so the runs read their windows in parallel (src/sync/window-demand.ts) and the kills land
  // with several windows' pages in flight.
  sandbox.setFaults({ latencyMs: 15 });
  const db = await freshDatabase(backend, 'crash_mixed');
  const store = await openTestStore(db);
  const customer = sandbox.customers[0]!.id;
  const env = childEnv(sandbox, db.url, { SYNC_PAGE_SIZE: '40', SYNC_STEP: '3h', SYNC_SETTLE_DELAY: '1s', SYNC_INITIAL_HISTORY: '1d' });
  // The backfill covers the history before the incremental sync's first window (which starts at the first sync's
  // now - 1 day), overlapping it by an hour or two so that no start-up delay can open a gap between them.
  const backfill = ['backfill', '--from', new Date(dataStart).toISOString(), '--to', new Date(Math.ceil((now - DAY) / hour) * hour + hour).toISOString()];
  const random = prng(seed);
  const tally = { sync: 0, backfill: 0, killed: 0, finishedFirst: 0 };
  let watermark = '';
  try {
    for (let i = 0; i < kills; i++) {
      const command = random() < 0.5 ? 'sync' : 'backfill';
      tally[command] += 1;
      const before = await pagesSoFar(store);
      const child = spawnCli(command === 'sync' ? ['sync'] : backfill, { env });
      if (random() < 0.25) {
        // A moment that may fall in start-up, migration or locking, but never more than MAX_PAGES_PER_ROUND pages in:
        // on a fast machine an unbounded delay let one round finish the sync's whole range, and every later sync
        // round then had nothing left to interrupt.
        const delay = new Promise((r) => setTimeout(r, 200 + random() * 1500));
        const bounded = waitFor(async () => (await pagesSoFar(store)) - before >= MAX_PAGES_PER_ROUND, `${MAX_PAGES_PER_ROUND} more committed pages`, 60_000, { unless: child.exited });
        await Promise.race([delay, bounded, child.exited]);
      } else {
        const target = 1 + Math.floor(random() * MAX_PAGES_PER_ROUND);
        await waitFor(async () => (await pagesSoFar(store)) - before >= target, `${target} more committed pages`, 60_000, { unless: child.exited });
      }
      const exit = await child.kill('SIGKILL');
      if (exit.signal === 'SIGKILL') tally.killed += 1;
      else {
        // It finished before the kill point (a nearly complete backfill): that must be a clean success.
        expect(exit.code, child.stderr()).toBe(0);
        tally.finishedFirst += 1;
      }
      const state = await store.getState(customer, 'occupancy');
      if (state?.watermark) {
        expect(state.watermark >= watermark, `kill ${i}: the watermark moved backwards`).toBe(true);
        watermark = state.watermark;
      }
    }
    for (const args of [backfill, ['sync']]) {
      const final = spawnCli(args, { env });
      const exit = await final.exit(120_000, `the clean ${args[0]} to complete`);
      expect(exit.code, final.stderr()).toBe(0);
    }
    const state = await store.getState(customer, 'occupancy');
    expect(state!.watermark! >= watermark).toBe(true);
    const done = await store.getState(customer, 'occupancy#backfill');
    expect(done?.windowStart ?? null, 'the backfill finished').toBeNull();

    const held = againstTruth(await dbRows(store, customer), sandbox, customer, state!.watermark!, dataStart);
    expect(held.stored.length).toBe(held.truth.length);
    expect(held.stored).toEqual(held.truth);
    expect(held.strays).toEqual([]);
    const failed = await store.query<{ status: string; error: string }>("SELECT status, error FROM sync_runs WHERE status = 'failed'");
    expect(failed).toEqual([]);
    expect(tally.killed, `kills that landed: ${JSON.stringify(tally)}`).toBeGreaterThanOrEqual(Math.floor(kills * 0.8));
    figures.record({
      key: `crash-resume/${backend}`,
      tried: `SIGKILL at seeded points of \`sync\` and \`backfill\` child processes, mixed (seed ${seed}: ${tally.sync} sync, ${tally.backfill} backfill rounds), ${backend}`,
      count: kills,
      held: 'after a clean backfill and sync: DB = ground truth over 4 days, no duplicate, watermark never moved backwards, no failed run',
    });
    return tally;
  } finally {
    await store.close();
    await sandbox.close();
    await db.drop();
  }
}

it(`backfill and sync killed at ${scaled(14)} seeded points on Postgres resume to the ground truth`, async () => {
  await mixedKills('postgres', 4242, scaled(14));
}, 300_000);

it(`backfill and sync killed at ${scaled(6)} seeded points on SQLite resume to the ground truth`, async () => {
  await mixedKills('sqlite', 2424, scaled(6));
}, 300_000);
