import { afterEach, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { resolveConfig } from '../../src/config.ts';
import { silentLogger } from '../../src/logger.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import type { Store } from '../../src/store/types.ts';
import { runOnce } from '../../src/app/run-once.ts';
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
