import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { StoreError } from '../../src/errors.ts';
import type { DeliveryRecord } from '../../src/store/types.ts';
import { DIALECTS, fresh, readings } from './harness.ts';

/**
 * Webhook deliveries stored concurrently (SQLite: group commit, one transaction per event-loop turn with a SAVEPOINT
 * per delivery; Postgres: one transaction each). Either way: the right answer per delivery, a failing delivery
 * rolls back alone, and no caller is answered before its delivery is committed.
 */

const C = 'cust-a';
const delivery = (id: string): DeliveryRecord => ({
  id,
  customerId: C,
  type: 'Occupancy',
  createdAt: '2026-03-01T10:00:00.000Z',
  sentAt: '2026-03-01T10:00:01.000Z',
  receivedAt: '2026-03-01T10:00:02.000Z',
  body: `{"Id":"${id}"}`,
});

describe.each(DIALECTS)('concurrent webhook deliveries on %s', (dialect) => {
  it('each concurrent caller gets stored or duplicate, and an invalid delivery fails alone', async () => {
    const { store } = await fresh(dialect, 'group');
    const items = (id: string, n: number) => readings(n, '2026-03-01T10:00:00.000Z', `fs-${id}`);
    const bad = [{ ...items('bad', 1)[0]!, headcount: -1 }];
    const calls = [
      store.storeDelivery(delivery('d1'), items('d1', 3)),
      store.storeDelivery(delivery('d2'), items('d2', 2)),
      store.storeDelivery(delivery('d1'), items('d1', 3)),
      store.storeDelivery(delivery('bad'), bad),
      store.storeDelivery(delivery('d3'), items('d3', 1)),
      store.storeDelivery(delivery('d2'), items('d2', 2)),
    ];
    const results = await Promise.allSettled(calls);
    const outcome = results.map((r) => (r.status === 'fulfilled' ? r.value : 'rejected'));
    // Postgres commits concurrently, so which copy of d1 (or d2) comes first is not fixed: one of each pair is stored.
    expect([[outcome[0], outcome[2]].sort(), [outcome[1], outcome[5]].sort(), outcome[3], outcome[4]]).toEqual([
      ['duplicate', 'stored'], ['duplicate', 'stored'], 'rejected', 'stored',
    ]);
    if (dialect === 'sqlite') expect(outcome).toEqual(['stored', 'stored', 'duplicate', 'rejected', 'stored', 'duplicate']);
    const failure = (results[3] as PromiseRejectedResult).reason as Error;
    expect(failure).toBeInstanceOf(StoreError);
    expect(failure.message).toMatch(/storing webhook delivery bad failed: .*(CHECK|check)/);

    const deliveries = await store.query<{ id: string; attempts: number }>('SELECT id, attempts FROM webhook_deliveries ORDER BY id');
    expect(deliveries.map((d) => [d.id, Number(d.attempts)])).toEqual([['d1', 2], ['d2', 2], ['d3', 1]]);
    const rows = await store.query<{ f: string; n: number }>('SELECT floor_space_id AS f, count(*) AS n FROM occupancy GROUP BY floor_space_id ORDER BY 1');
    expect(rows.map((r) => [r.f, Number(r.n)])).toEqual([['fs-d1', 3], ['fs-d2', 2], ['fs-d3', 1]]);
    // The failed delivery can be retried once fixed: nothing of it was kept.
    expect(await store.storeDelivery(delivery('bad'), items('bad', 1))).toBe('stored');
  });
});

describe('group commit on SQLite', () => {
  it('answers each caller only once its delivery is committed (visible to another connection)', async () => {
    const { store, database } = await fresh('sqlite', 'groupdurable');
    const reader = new Database(database.sqlitePath!, { readonly: true });
    try {
      const seenOnResolve: boolean[] = [];
      const visible = (id: string) => reader.prepare('SELECT 1 FROM webhook_deliveries WHERE id = ?').get(id) !== undefined;
      await Promise.all(
        ['a', 'b', 'c', 'd'].map((id) => store.storeDelivery(delivery(id), readings(2)).then(() => seenOnResolve.push(visible(id)))),
      );
      expect(seenOnResolve).toEqual([true, true, true, true]);
    } finally {
      reader.close();
    }
  });

  it('a COMMIT that fails rejects every delivery of the group, and none of them is stored', async () => {
    const { store, database } = await fresh('sqlite', 'groupcommitfail');
    // A real COMMIT failure: a deferred foreign key is checked only at COMMIT. Delivery "poison" inserts a row
    // referencing nothing, so the shared COMMIT of its group fails.
    const admin = new Database(database.sqlitePath!);
    admin.exec(`
      CREATE TABLE test_parent (id TEXT PRIMARY KEY);
      CREATE TABLE test_child (parent TEXT REFERENCES test_parent (id) DEFERRABLE INITIALLY DEFERRED);
      CREATE TRIGGER test_poison AFTER INSERT ON webhook_deliveries WHEN NEW.id = 'poison'
      BEGIN INSERT INTO test_child VALUES ('missing'); END;`);
    admin.close();
    const results = await Promise.allSettled([
      store.storeDelivery(delivery('x1'), readings(1)),
      store.storeDelivery(delivery('poison'), readings(1, '2026-03-01T11:00:00.000Z')),
      store.storeDelivery(delivery('x2'), readings(1, '2026-03-01T12:00:00.000Z')),
    ]);
    for (const result of results) {
      expect(result.status).toBe('rejected');
      expect(String((result as PromiseRejectedResult).reason)).toMatch(/FOREIGN KEY constraint failed/);
    }
    expect(await store.query('SELECT id FROM webhook_deliveries')).toEqual([]);
    expect(await store.query('SELECT * FROM occupancy')).toEqual([]);
    // The store is usable afterwards and the platform's retries are stored.
    expect(await store.storeDelivery(delivery('x1'), readings(1))).toBe('stored');
  });
});
