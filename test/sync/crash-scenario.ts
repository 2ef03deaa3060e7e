import { expect } from 'vitest';
import { streams as allStreams } from '../../jobs/index.ts';
import { aggregateSettings } from '../../src/app/aggregates.ts';
import { DEFAULT_WORKING_TIME } from '../../src/config-working-time.ts';
import { startSandbox } from '../../src/sandbox/index.ts';
import type { Store } from '../../src/store/types.ts';
import { freshDatabase, openTestStore, type Dialect } from '../support/databases.ts';
import { spawnCli } from '../support/process.ts';
import { prng } from '../support/random.ts';
import { waitFor } from '../support/wait.ts';
import { dumpAggregates } from './aggregate-dump.ts';
import { DAY, againstTruth, childEnv, dbRows } from './helpers.ts';

async function totalPages(store: Store): Promise<number> {
  const [row] = await store.query<{ n: unknown }>('SELECT coalesce(sum(pages), 0) AS n FROM sync_runs');
  return Number(row?.n ?? 0);
}

/**
 * A large `sync` run as a child process, SIGKILLed at seeded points (after N committed pages, or after a random
 * delay that may fall in start-up or migration), then run to completion: the database must equal the ground truth,
 * with no duplicate and a watermark that never moved backwards, and the aggregates the killed runs left stale
 * (recorded, not yet refreshed) must be current after it: equal to a rebuild from the readings.
 */
export async function killAndResume(dialect: Dialect, seed: number, kills = 12): Promise<{ realKills: number; pagesAtKill: number[] }> {
  const now = Date.now();
  // Real time in the child, so the sandbox uses the system clock; no late arrivals, so "now" is the whole truth.
  const sandbox = await startSandbox({ seed, customers: 1, dataStart: Math.floor((now - 5 * DAY) / 300_000) * 300_000, lateArrivalMaxMs: 0 });
  const db = await freshDatabase(dialect, 'crash');
  const store = await openTestStore(db);
  const customer = sandbox.customers[0]!.id;
  const env = childEnv(sandbox, db.url, { SYNC_PAGE_SIZE: '40', SYNC_STEP: '3h', SYNC_SETTLE_DELAY: '1s', SYNC_INITIAL_HISTORY: '6d' });
  const random = prng(seed);
  const pagesAtKill: number[] = [];
  const pendingAtKill: number[] = [];
  let realKills = 0;
  let lastWatermark = '';
  try {
    for (let i = 0; i < kills; i++) {
      const before = await totalPages(store);
      const child = spawnCli(['sync'], { env });
      if (i % 4 === 3) {
        // A kill at a random moment, but never so late that one run would load everything and leave later kills
        // nothing to interrupt (on a fast, idle machine 1.8 s is most of the data).
        await Promise.race([
          new Promise((r) => setTimeout(r, 300 + random() * 1500)),
          waitFor(async () => (await totalPages(store)) - before >= 25, '25 more committed pages', 60_000, { unless: child.exited }),
        ]);
      } else {
        const target = 1 + Math.floor(random() * 12);
        await waitFor(async () => (await totalPages(store)) - before >= target, `${target} more committed pages`, 60_000, { unless: child.exited });
      }
      const exit = await child.kill('SIGKILL');
      if (exit.signal === 'SIGKILL') realKills++;
      else expect(exit.code, child.stderr()).toBe(0);
      pagesAtKill.push((await totalPages(store)) - before);
      // A run killed before its final refresh leaves what its pages made stale recorded (its pages and their
      // invalidations commit together); the next run refreshes it before its streams.
      if (exit.signal === 'SIGKILL') pendingAtKill.push((await store.pendingAggregates(customer))[0]?.floorSpaces ?? 0);
      const state = await store.getState(customer, 'occupancy');
      if (state?.watermark) {
        expect(state.watermark >= lastWatermark).toBe(true);
        lastWatermark = state.watermark;
      }
    }
    const final = spawnCli(['sync'], { env });
    const exit = await final.exit(90_000, 'the final sync to complete');
    expect(exit.code, final.stderr()).toBe(0);
    expect(final.stdout()).toMatch(/^sync: 1 customer, 4 streams, /m);

    const state = await store.getState(customer, 'occupancy');
    expect(state!.watermark! >= lastWatermark).toBe(true);
    expect(state!.windowStart).toBeNull();
    const held = againstTruth(await dbRows(store, customer), sandbox, customer, state!.watermark!, 0);
    expect(held.stored.length).toBe(held.truth.length);
    expect(held.stored).toEqual(held.truth);
    expect(held.strays).toEqual([]);
    const runs = await store.query<{ status: string }>('SELECT status FROM sync_runs');
    // Killed runs stay 'running' in the log (nothing could record their end); every page they committed is kept.
    expect(runs.filter((r) => r.status === 'failed')).toEqual([]);

    // The aggregates the killed runs left stale are current after the last run: equal to a rebuild, nothing pending.
    expect(pendingAtKill.some((n) => n > 0), `pending floor spaces at each kill: ${pendingAtKill.join(', ')}`).toBe(true);
    expect(await store.pendingAggregates(customer)).toEqual([]);
    const kept = await dumpAggregates(store);
    expect(kept.length).toBeGreaterThan(100);
    const rebuilt = await store.rebuildAggregates({ customerId: customer }, aggregateSettings({ workingTime: DEFAULT_WORKING_TIME }, allStreams));
    expect(rebuilt.every((b) => b.whole && b.change === '')).toBe(true);
    expect(await dumpAggregates(store)).toEqual(kept);
    return { realKills, pagesAtKill };
  } finally {
    await store.close();
    await sandbox.close();
    await db.drop();
  }
}
