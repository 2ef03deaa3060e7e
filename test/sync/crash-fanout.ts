import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { startSandbox } from '../../src/sandbox/index.ts';
import type { Store } from '../../src/store/types.ts';
import { freshDatabase, openTestStore, type Dialect } from '../support/databases.ts';
import { ROOT, spawnCli } from '../support/process.ts';
import { prng } from '../support/random.ts';
import { tempDir } from '../support/tmp.ts';
import { waitFor } from '../support/wait.ts';
import { DAY, HOUR, childEnv, dbRows, truthRows } from './helpers.ts';

/**
 * A fan-out stream (docs/examples/api-per-space: each floor space's readings its own paged query, its own state key)
 * killed with SIGKILL at seeded points of `sync` and `backfill` child processes, with windows of several spaces in
 * flight, then run to completion: every space's readings equal the truth exactly (nothing lost, nothing doubled), no
 * space's watermark ever moved backwards, no run failed.
 */

async function totalPages(store: Store): Promise<number> {
  const [row] = await store.query<{ n: unknown }>('SELECT coalesce(sum(pages), 0) AS n FROM sync_runs');
  return Number(row?.n ?? 0);
}

/** The watermark of each floor space's partition of `occupancy` (state key occupancy/<space>). */
async function watermarks(store: Store, customer: string): Promise<Map<string, string | null>> {
  return new Map((await store.listStates(customer)).filter((s) => s.stateKey.startsWith('occupancy/')).map((s) => [s.stateKey, s.watermark]));
}

/** The scenario of test/sync/crash-fanout-{sqlite,postgres}.test.ts: returns the kills that landed and the pages per run. */
export async function killFanOut(dialect: Dialect, seed: number, kills: number): Promise<{ killed: number; pages: number[] }> {
  // The platform's clock stands still (the commands' runs on): its data is fixed, so the end state is exactly its truth.
  // The sandbox's clock at a 5-minute tick at least 10 s past: the sync's window (real now - SYNC_SETTLE_DELAY) then
  // always reaches the readings of that tick, however close to a tick the test starts. That clock (its Date header)
  // is then up to 5 min 10 s behind the real one: SYNC_MAX_CLOCK_SKEW above it, or the sync warns of the skew.
  const now = Math.floor((Date.now() - 10_000) / 300_000) * 300_000;
  const dataStart = now - 2 * DAY;
  const sandbox = await startSandbox({ apiVariant: 'per-space', clock: new FakeClock(now), seed, customers: 1, dataStart, lateArrivalMaxMs: 0 });
  // Answers a network away: the spaces' windows are read in parallel, so each kill lands with several in flight.
  sandbox.setFaults({ latencyMs: 10 });
  const db = await freshDatabase(dialect, 'crash_fanout');
  const store = await openTestStore(db);
  const dir = tempDir('crash-fanout-');
  cpSync(join(ROOT, 'docs/examples/api-per-space'), dir.dir, { recursive: true });
  const customer = sandbox.customers[0]!.id;
  const env = childEnv(sandbox, db.url, { SYNC_PAGE_SIZE: '40', SYNC_SETTLE_DELAY: '1s', SYNC_MAX_CLOCK_SKEW: '15m', SYNC_INITIAL_HISTORY: '1d', DEFINITIONS_FILE: dir.dir });
  // The backfill loads the day before the sync's first window, overlapping it, so the two together cover the data.
  const backfill = ['backfill', '--from', new Date(dataStart).toISOString(), '--to', new Date(now - DAY + 2 * HOUR).toISOString()];
  const random = prng(seed);
  const pages: number[] = [];
  let killed = 0;
  let seen = new Map<string, string | null>();
  try {
    for (let i = 0; i < kills; i++) {
      const before = await totalPages(store);
      const child = spawnCli(i % 2 === 0 ? ['sync'] : backfill, { env });
      const target = 1 + Math.floor(random() * 20);
      await waitFor(async () => (await totalPages(store)) - before >= target, `${target} more committed pages`, 30_000, { unless: child.exited });
      const exit = await child.kill('SIGKILL');
      if (exit.signal === 'SIGKILL') killed += 1;
      else expect(exit.code, child.stderr()).toBe(0);
      pages.push((await totalPages(store)) - before);
      const now = await watermarks(store, customer);
      for (const [key, watermark] of seen) {
        if (watermark !== null) expect(now.get(key)! >= watermark, `kill ${i}: the watermark of ${key} moved backwards`).toBe(true);
      }
      seen = now;
    }
    for (const args of [backfill, ['sync']]) {
      const final = spawnCli(args, { env });
      const exit = await final.exit(60_000, `the clean ${args[0]} to complete`);
      expect(exit.code, final.stderr()).toBe(0);
    }
    const states = await store.listStates(customer);
    const spaces = sandbox.truth.floorSpaces(customer).map((f) => f.id);
    expect(states.filter((s) => s.stateKey.startsWith('occupancy/')).map((s) => s.stateKey).sort()).toEqual(spaces.map((id) => `occupancy/${id}`).sort());
    expect(states.filter((s) => s.stateKey.startsWith('occupancy#backfill/') && s.windowStart !== null), 'every backfill partition finished').toEqual([]);
    // Every reading the platform holds, each once: the windows of the last sync reach past its frozen clock.
    const truth = truthRows(sandbox, customer, { to: Number.MAX_SAFE_INTEGER });
    const rows = await dbRows(store, customer);
    expect(rows.length).toBe(truth.length);
    expect(rows).toEqual(truth);
    const failed = await store.query<{ status: string; error: string }>("SELECT status, error FROM sync_runs WHERE status = 'failed'");
    expect(failed).toEqual([]);
    return { killed, pages };
  } finally {
    await store.close();
    await sandbox.close();
    await db.drop();
    dir.remove();
  }
}
