import { describe, expect, it } from 'vitest';
import { waitFor } from '../support/wait.ts';
import { DIALECTS, fresh, migrationNames, storeChild } from './harness.ts';

describe.each(DIALECTS)('migrations and locks across processes on %s', (dialect) => {
  it('three processes migrating one empty database at once apply each migration exactly once', async () => {
    const { database, store } = await fresh(dialect, 'conc', false);
    const children = [1, 2, 3].map(() => storeChild(database.url, 'migrate'));
    const outputs = await Promise.all(children.map((child) => child.nextLine('the migrations it applied')));
    const applied = outputs.map((line) => JSON.parse(line) as string[]);
    const all = migrationNames(dialect);
    // One process applied everything; the others found nothing left to do.
    expect(applied.flat()).toEqual(all);
    expect(applied.filter((names) => names.length === 0)).toHaveLength(2);
    expect(await store.query('SELECT count(*) AS n FROM __drizzle_migrations')).toEqual([{ n: all.length }]);
    // And in one process, two stores at once.
    const [a, b] = await Promise.all([store.migrate(), (await fresh(dialect, 'conc2', false)).store.migrate()]);
    expect([a, b]).toEqual([[], all]);
  });

  it('a second tryLock is refused while the lock is held and succeeds after release', async () => {
    const { store, another } = await fresh(dialect, 'lock');
    const other = await another();
    const lock = await store.tryLock('cust-a', 'occupancy');
    expect(lock).toBeDefined();
    expect(await store.tryLock('cust-a', 'occupancy')).toBeUndefined();
    expect(await other.tryLock('cust-a', 'occupancy')).toBeUndefined();
    const elsewhere = await other.tryLock('cust-a', 'buildings');
    expect(elsewhere).toBeDefined();
    await lock!.release();
    await lock!.release(); // releasing twice is harmless
    const again = await other.tryLock('cust-a', 'occupancy');
    expect(again).toBeDefined();
    await again!.release();
    await elsewhere!.release();
  });

  it('a lock held by another process is refused, and taken over once that process is killed with SIGKILL', async () => {
    const { database, store } = await fresh(dialect, 'kill');
    const holder = storeChild(database.url, 'hold-lock', 'cust-a', 'occupancy');
    expect(await holder.nextLine('the holder to take the lock')).toBe('locked');
    expect(await store.tryLock('cust-a', 'occupancy')).toBeUndefined();

    await holder.kill('SIGKILL');
    // Postgres ends the killed session as soon as it notices the closed socket: poll briefly for that. A SQLite lock
    // must be free at once.
    let lock = undefined as Awaited<ReturnType<typeof store.tryLock>>;
    await waitFor(async () => (lock = await store.tryLock('cust-a', 'occupancy')) !== undefined, "the killed holder's lock to be free", dialect === 'postgres' ? 5_000 : 0, { everyMs: 50 });
    expect(lock).toBeDefined();
    const contender = storeChild(database.url, 'hold-lock', 'cust-a', 'occupancy');
    expect(await contender.nextLine('the contender to try the lock')).toBe('busy');
    await lock!.release();
  });
});
