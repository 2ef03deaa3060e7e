import { afterEach, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { resolveConfig } from '../../src/config.ts';
import { silentLogger } from '../../src/logger.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import type { Store } from '../../src/store/types.ts';
import { runOnce } from '../../src/app/run-once.ts';
import { createSyncPass } from '../../src/app/sync-pass.ts';
import { streams } from '../../jobs/index.ts';
import { DAY, countRows, truthRows, childEnv } from './helpers.ts';
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

it("the sync's API clients retry transient GraphQL errors instead of failing the run", async () => {
  const clock = new FakeClock('2026-01-08T00:00:00Z');
  sandbox = await startSandbox({ clock, seed: 5, customers: 1, faults: { seed: 5, graphqlError: 0.3 } });
  db = await freshDatabase('sqlite', 'runner_graphql');
  store = await openTestStore(db);
  const config = resolveConfig(childEnv(sandbox, db.url, { SYNC_INITIAL_HISTORY: '1d', SYNC_SETTLE_DELAY: '1m', SYNC_PAGE_SIZE: '100' }));
  const report = await runOnce({ config, store, logger: silentLogger, customers: config.customers, streams, clock, baseUrl: sandbox.url });
  expect(report.outcomes.map((o) => o.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
  expect(sandbox.stats.faults.graphqlError).toBeGreaterThan(3);
  const customer = sandbox.customers[0]!.id;
  const watermark = Date.parse(report.outcomes[1]!.watermark!);
  expect(await countRows(store, customer)).toBe(truthRows(sandbox, customer, { from: clock.now() - DAY, to: watermark }).length);
}, 60_000);

/** The store, with the name of each method called on it noted in `calls`, in order. */
function spied(target: Store, calls: string[]): Store {
  return new Proxy(target, {
    get(object, key) {
      const value: unknown = Reflect.get(object, key, object);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.push(String(key));
        return (value as (...a: unknown[]) => unknown).apply(object, args);
      };
    },
  });
}

it("after a run, a one-shot's or the daemon's, the aggregates are refreshed, then the planner's statistics updated once", async () => {
  const clock = new FakeClock('2026-01-08T00:00:00Z');
  sandbox = await startSandbox({ clock, seed: 6, customers: 1 });
  db = await freshDatabase('sqlite', 'runner_statistics');
  store = await openTestStore(db);
  const config = resolveConfig(childEnv(sandbox, db.url, { SYNC_INITIAL_HISTORY: '6h', SYNC_SETTLE_DELAY: '1m' }));
  const once: string[] = [];
  const report = await runOnce({ config, store: spied(store, once), logger: silentLogger, customers: config.customers, streams, clock, baseUrl: sandbox.url });
  expect(report.outcomes.every((o) => o.status === 'succeeded')).toBe(true);
  expect(once.filter((c) => c === 'updatePlannerStatistics')).toHaveLength(1);
  expect(once.slice(-2)).toEqual(['refreshAggregates', 'updatePlannerStatistics']);

  const daemon: string[] = [];
  clock.advance(5 * 60_000);
  const pass = createSyncPass({ config, store: spied(store, daemon), logger: silentLogger, customers: config.customers, streams, clock, baseUrl: sandbox.url });
  try {
    expect((await pass.run(new AbortController().signal)).outcomes.every((o) => o.status === 'succeeded')).toBe(true);
  } finally {
    await pass.close();
  }
  expect(daemon.filter((c) => c === 'updatePlannerStatistics')).toHaveLength(1);
  expect(daemon.slice(-2)).toEqual(['refreshAggregates', 'updatePlannerStatistics']);
}, 60_000);
