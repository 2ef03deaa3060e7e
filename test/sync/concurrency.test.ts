import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { DIALECTS, freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { spawnCli } from '../support/process.ts';
import { waitFor, within } from '../support/wait.ts';
import { DAY, childEnv, dbRows, truthRows } from './helpers.ts';

describe.each(DIALECTS)('two sync processes on one %s database', (dialect) => {
  let sandbox: Sandbox;
  let db: TestDatabase;

  beforeEach(async () => {
    sandbox = await startSandbox({ seed: 9, customers: 1, dataStart: Math.floor((Date.now() - DAY) / 300_000) * 300_000, lateArrivalMaxMs: 0 });
    db = await freshDatabase(dialect, 'concurrent');
    // Migrated up front so both children start from the same point and the test can watch sync_runs.
    await (await openTestStore(db)).close();
  });
  afterEach(async () => {
    await sandbox.close();
    await db.drop();
  });

  it('one runs, the other reports the lock and exits 75; SIGTERM then stops the first after a page with exit 0', async () => {
    // Slow answers keep the first run going long after the second one has started.
    sandbox.setFaults({ seed: 1, slow: 1, slowMs: 300 });
    const env = childEnv(sandbox, db.url, { SYNC_INITIAL_HISTORY: '2d', SYNC_SETTLE_DELAY: '1s', SYNC_PAGE_SIZE: '60', SYNC_STEP: '2h' });
    const a = spawnCli(['sync'], { env });
    const b = spawnCli(['sync'], { env });
    const first = await within(
      Promise.race([a.exited.then((e) => ({ who: a, other: b, ...e })), b.exited.then((e) => ({ who: b, other: a, ...e }))]),
      'one of the two syncs to exit',
    );
    expect(first.code, first.who.stderr()).toBe(ExitCode.LOCKED);
    expect(first.who.stderr()).toContain('locked by another run (nothing done)');
    expect(first.who.stdout()).toMatch(/0 failed, 1 locked in/);

    const store = await openTestStore(db);
    try {
      // Let the winner commit a few pages, then ask it to stop as systemd would.
      await waitFor(async () => {
        const [row] = await store.query<{ n: unknown }>("SELECT coalesce(sum(pages), 0) AS n FROM sync_runs WHERE stream = 'occupancy'");
        return Number(row?.n) >= 2;
      }, 'two committed occupancy pages', 30_000, { unless: first.other.exited });
      const second = await first.other.kill('SIGTERM');
      expect(second.code, first.other.stderr()).toBe(ExitCode.OK);
      expect(first.other.stdout()).toMatch(/interrupted: the next run resumes/);
      const runs = await store.query<{ stream: string; status: string; pages: unknown }>('SELECT stream, status, pages FROM sync_runs ORDER BY id');
      expect(runs.map((r) => [r.stream, r.status])).toEqual([['buildings', 'succeeded'], ['floors', 'succeeded'], ['floor-spaces', 'succeeded'], ['occupancy', 'interrupted']]);

      sandbox.setFaults(undefined);
      const rerun = spawnCli(['sync'], { env });
      expect((await rerun.exit(45_000, 'the rerun to complete')).code, rerun.stderr()).toBe(ExitCode.OK);
      const customer = sandbox.customers[0]!.id;
      const to = Date.parse((await store.getState(customer, 'occupancy'))!.watermark!);
      // Up to the watermark: a run may store rows past the watermark it records (the watermark is capped, by the
      // settle delay and the platform's clock; the next run reads them again), which CI met at a tick's boundary.
      expect(await dbRows(store, customer, { to })).toEqual(truthRows(sandbox, customer, { to }));
    } finally {
      await store.close();
    }
  }, 90_000);
});
