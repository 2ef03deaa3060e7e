import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import type { Store } from '../../src/store/types.ts';
import { ABANDONED_RUN_ERROR } from '../../src/store/types.ts';
import { DAY, syncOnce } from './helpers.ts';
import { DIALECTS, openTestStore, freshDatabase, type TestDatabase } from '../support/databases.ts';

const START = Date.parse('2026-01-10T00:00:00.000Z');

describe.each(DIALECTS)('runs left running by a killed process (%s)', (dialect) => {
  let clock: FakeClock;
  let sandbox: Sandbox;
  let db: TestDatabase;
  let store: Store;

  beforeEach(async () => {
    clock = new FakeClock(START);
    sandbox = await startSandbox({ clock, seed: 3, customers: 2, dataStart: START - DAY });
    db = await freshDatabase(dialect, 'abandoned');
    store = await openTestStore(db);
  });
  afterEach(async () => {
    await store.close();
    await sandbox.close();
    await db.drop();
  });

  it("are marked interrupted by the next run that takes their lock, and only those", async () => {
    const [a, b] = sandbox.customers.map((c) => c.id) as [string, string];
    const startedAt = new Date(START - DAY / 2).toISOString();
    // What a process killed mid-run leaves behind: rows that never got their outcome.
    const killed = await store.startRun({ customerId: a, stateKey: 'occupancy', mode: 'incremental', startedAt });
    const killedBackfill = await store.startRun({ customerId: a, stateKey: 'occupancy#backfill', mode: 'backfill', startedAt });
    const otherCustomer = await store.startRun({ customerId: b, stateKey: 'occupancy', mode: 'incremental', startedAt });

    const customerA = sandbox.customers[0]!;
    const report = await syncOnce({ store, sandbox, clock, customers: [{ id: a, key: customerA.readKey.key, secret: customerA.readKey.secret }] });
    expect(report.outcomes.map((o) => o.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);

    const rows = await store.query<{ id: number | string; status: string; error: string | null; finished_at: unknown }>(
      'SELECT id, status, error, finished_at FROM sync_runs ORDER BY id',
    );
    const byId = new Map(rows.map((r) => [Number(r.id), r]));
    expect(byId.get(killed)).toMatchObject({ status: 'interrupted', error: ABANDONED_RUN_ERROR });
    expect(new Date(byId.get(killed)!.finished_at as string).getTime()).toBe(START);
    // Another stream key (no lock taken for it) and another customer are left alone.
    expect(byId.get(killedBackfill)).toMatchObject({ status: 'running', error: null });
    expect(byId.get(otherCustomer)).toMatchObject({ status: 'running', error: null });
    // The run that closed them recorded its own outcome; one left running that no process holds the lock of is shown
    // as interrupted (the store's lastRuns), though its row is only closed by the next run of its own key.
    const latest = await store.lastRuns(a);
    expect(latest.map((r) => [r.stateKey, r.status])).toEqual([
      ['buildings', 'succeeded'],
      ['floor-spaces', 'succeeded'],
      ['floors', 'succeeded'],
      ['occupancy', 'succeeded'],
      ['occupancy#backfill', 'interrupted'],
    ]);
  });
});
