import { afterEach, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { resolveConfig } from '../../src/config.ts';
import { silentLogger } from '../../src/logger.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import type { Store } from '../../src/store/types.ts';
import { summaryLine } from '../../src/app/summary.ts';
import { createSyncPass } from '../../src/app/sync-pass.ts';
import { streams } from '../../jobs/index.ts';
import { MIN, childEnv } from './helpers.ts';
import { openTestStore, freshDatabase, type TestDatabase } from '../support/databases.ts';

let sandbox: Sandbox | undefined;
let db: TestDatabase | undefined;
let store: Store | undefined;
afterEach(async () => {
  await store?.close();
  await sandbox?.close();
  await db?.drop();
  sandbox = db = store = undefined;
});

it('schedule reuses its API clients across ticks: one auth call per token lifetime, ~6 an hour for 900 s tokens', async () => {
  const clock = new FakeClock('2026-01-08T00:00:00Z');
  sandbox = await startSandbox({ clock, seed: 11, customers: 1, expiresIn: 900 });
  db = await freshDatabase('sqlite', 'scheduled');
  store = await openTestStore(db);
  const config = resolveConfig(childEnv(sandbox, db.url, { SYNC_INITIAL_HISTORY: '6h', SYNC_SETTLE_DELAY: '1m' }));
  let stdout = '';
  // The pass `schedule` runs on each tick (without metrics: schedule exposes none), printing as the command does.
  const scheduled = createSyncPass({ config, store, logger: silentLogger, customers: config.customers, streams, clock, baseUrl: sandbox.url });
  const signal = new AbortController().signal;
  const authCalls: number[] = [];
  try {
    // A tick every 5 minutes for an hour, as the default SYNC_CRON does.
    for (let tick = 0; tick < 12; tick++) {
      const result = await scheduled.run(signal);
      stdout += `${summaryLine('sync', result)}\n`;
      expect(result.outcomes.every((o) => o.status === 'succeeded')).toBe(true);
      authCalls.push(sandbox.stats.authCalls);
      clock.advance(5 * MIN);
    }
  } finally {
    await scheduled.close();
  }
  // A 900 s token is used for 10 minutes (the 5-minute refresh margin): ticks at 0 and 5 min share the first token.
  expect(authCalls.slice(0, 2)).toEqual([1, 1]);
  expect(authCalls.at(-1)).toBeLessThanOrEqual(6);
  expect(stdout.match(/^sync: 1 customer, 4 streams, /gm)).toHaveLength(12);
}, 60_000);
