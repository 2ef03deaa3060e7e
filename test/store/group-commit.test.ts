import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { StoreError } from '../../src/errors.ts';
import { GroupCommit } from '../../src/store/sqlite/group-commit.ts';
import type { DeliveryRecord } from '../../src/store/types.ts';
import { DIALECTS, fresh, readings } from './harness.ts';

/**
 * Webhook deliveries stored concurrently (SQLite: group commit, one transaction per event-loop turn, replayed one
 * delivery at a time when it fails; Postgres: one transaction each). Either way: the right answer per delivery, a
 * failing delivery rolls back alone, and no caller is answered before its delivery is committed.
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

  // A real COMMIT failure: a deferred foreign key is checked only at COMMIT. The trigger makes the deliveries it
  // matches insert a row referencing nothing, so the COMMIT of any transaction holding one of them fails.
  const poisonWhen = (database: { sqlitePath?: string }, condition: string) => {
    const admin = new Database(database.sqlitePath!);
    admin.exec(`
      CREATE TABLE test_parent (id TEXT PRIMARY KEY);
      CREATE TABLE test_child (parent TEXT REFERENCES test_parent (id) DEFERRABLE INITIALLY DEFERRED);
      CREATE TRIGGER test_poison AFTER INSERT ON webhook_deliveries WHEN ${condition}
      BEGIN INSERT INTO test_child VALUES ('missing'); END;`);
    return () => {
      admin.exec('DROP TRIGGER test_poison');
      admin.close();
    };
  };

  it('a group whose COMMIT fails is replayed one delivery at a time: only the delivery at fault is rejected', async () => {
    const { store, database } = await fresh('sqlite', 'groupcommitfail');
    const cure = poisonWhen(database, "NEW.id = 'poison'");
    const results = await Promise.allSettled([
      store.storeDelivery(delivery('x1'), readings(1)),
      store.storeDelivery(delivery('poison'), readings(1, '2026-03-01T11:00:00.000Z')),
      store.storeDelivery(delivery('x2'), readings(1, '2026-03-01T12:00:00.000Z')),
      store.storeDelivery(delivery('x1'), readings(1)),
    ]);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : 'rejected'))).toEqual(['stored', 'rejected', 'stored', 'duplicate']);
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/storing webhook delivery poison failed: .*FOREIGN KEY constraint failed/);
    // Replayed from a rolled-back group: each row once, x1's retry counted once, nothing of the poison kept.
    const stored = await store.query<{ id: string; attempts: number }>('SELECT id, attempts FROM webhook_deliveries ORDER BY id');
    expect(stored.map((d) => [d.id, Number(d.attempts)])).toEqual([['x1', 2], ['x2', 1]]);
    expect(await store.query('SELECT observed_at FROM occupancy ORDER BY observed_at')).toEqual([
      { observed_at: '2026-03-01T10:00:00.000Z' }, { observed_at: '2026-03-01T12:00:00.000Z' },
    ]);
    cure();
    expect(await store.storeDelivery(delivery('poison'), readings(1, '2026-03-01T11:00:00.000Z'))).toBe('stored');
  });

  it('when every delivery fails even alone, every caller is rejected and none is stored', async () => {
    const { store, database } = await fresh('sqlite', 'groupallfail');
    const cure = poisonWhen(database, '1');
    const results = await Promise.allSettled(['y1', 'y2', 'y3'].map((id, i) => store.storeDelivery(delivery(id), readings(1, `2026-03-01T1${i}:00:00.000Z`))));
    for (const result of results) {
      expect(result.status).toBe('rejected');
      expect(String((result as PromiseRejectedResult).reason)).toMatch(/FOREIGN KEY constraint failed/);
    }
    expect(await store.query('SELECT id FROM webhook_deliveries')).toEqual([]);
    expect(await store.query('SELECT * FROM occupancy')).toEqual([]);
    // The store is usable afterwards and the platform's retries are stored.
    cure();
    expect(await store.storeDelivery(delivery('y1'), readings(1))).toBe('stored');
  });

  it('a group whose transaction cannot begin rejects every unit at once, without replaying them one by one', async () => {
    // Replaying would wait out SQLite's busy timeout once per delivery while another process holds the write lock.
    let attempts = 0;
    const busy = new Error('SQLITE_BUSY: database is locked');
    const group = new GroupCommit({
      transaction: async () => {
        attempts += 1;
        throw busy;
      },
    });
    const results = await Promise.allSettled([1, 2, 3].map((n) => group.submit(async () => n)));
    expect(results).toEqual([1, 2, 3].map(() => ({ status: 'rejected', reason: busy })));
    expect(attempts).toBe(1);
  });
});
