import postgres from 'postgres';
import { afterAll, expect, it } from 'vitest';
import { StoreError } from '../../src/errors.ts';
import { advisoryKey } from '../../src/store/postgres/locks.ts';
import type { Store } from '../../src/store/types.ts';
import { PG_BASE_URL } from '../support/databases.ts';
import { waitFor } from '../support/wait.ts';
import { checkpoint, fresh, readings } from './harness.ts';

/**
 * Postgres advisory locks live as long as their session. When an administrator, a failover or the network ends that
 * session, the lock is gone: the store must notice, stop committing for that customer, and let go of it quietly.
 */

const admin = postgres(PG_BASE_URL, { max: 1, onnotice: () => {} });
afterAll(() => admin.end());

/** Terminates the backend holding the advisory lock of (customer, stream) in `schema`; resolves to how many. */
async function terminateLockHolder(schema: string, customerId: string, stream: string): Promise<number> {
  const key = BigInt.asUintN(64, BigInt(advisoryKey('occupancy-sync', schema, customerId, stream)));
  const rows = await admin<{ ok: boolean }[]>`
    SELECT pg_terminate_backend(pid) AS ok FROM pg_locks
    WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND classid = ${Number(key >> 32n)}::oid AND objid = ${Number(key & 0xffffffffn)}::oid AND objsubid = 1`;
  return rows.filter((r) => r.ok).length;
}

const page = (customerId: string, start: string) => ({
  customerId,
  sink: 'occupancy' as const,
  records: readings(2, start),
  at: '2026-03-01T12:00:00.000Z',
  checkpoint: checkpoint(customerId, null),
});

/** Waits (briefly polling) until the store has seen its lock session close: a commit for the customer is refused. */
async function commitRefused(store: Store, customerId: string): Promise<unknown> {
  let error: unknown;
  let i = 0;
  await waitFor(
    async () => (error = await store.commitPage(page(customerId, `2026-03-01T0${i++ % 10}:00:00.000Z`)).then(() => undefined, (e: unknown) => e)) !== undefined,
    'the store to notice that its lock session was terminated (a commit refused)',
    5_000,
  );
  return error;
}

it('a lock whose session is terminated is lost: commits for its customer fail with StoreError, other customers go on, release is a no-op', async () => {
  const { store, another, database } = await fresh('postgres', 'lockloss');
  const schema = new URL(database.url).searchParams.get('schema')!;
  const lockA = await store.tryLock('cust-a', 'occupancy');
  expect(lockA).toBeDefined();

  expect(await terminateLockHolder(schema, 'cust-a', 'occupancy')).toBe(1);
  const error = await commitRefused(store, 'cust-a');
  expect(error).toBeInstanceOf(StoreError);
  expect((error as Error).message).toMatch(/run lock of cust-a\/occupancy was lost: its database session ended/);

  // The server dropped the lock: another process's store takes it; ours refuses it until its holder let go.
  const other = await another();
  const taken = await other.tryLock('cust-a', 'occupancy');
  expect(taken).toBeDefined();
  expect(await store.tryLock('cust-a', 'occupancy')).toBeUndefined();
  // Customers whose locks are intact (or never locked) still commit; the pool was not affected.
  await store.commitPage(page('cust-b', '2026-03-01T10:00:00.000Z'));

  // Releasing the lost lock neither throws nor touches the new holder's lock.
  await expect(lockA!.release()).resolves.toBeUndefined();
  await expect(lockA!.release()).resolves.toBeUndefined();
  expect(await store.tryLock('cust-a', 'occupancy')).toBeUndefined();
  await taken!.release();

  // Once released, the customer commits again, and the lock session reconnects for the next lock.
  await store.commitPage(page('cust-a', '2026-03-01T11:00:00.000Z'));
  const again = await store.tryLock('cust-a', 'occupancy');
  expect(again).toBeDefined();
  expect(await other.tryLock('cust-a', 'occupancy')).toBeUndefined();
  await again!.release();
  expect(await other.tryLock('cust-a', 'occupancy')).toBeDefined();
});

it('close() with a lock whose session was terminated resolves, and every other lock of the store is dropped', async () => {
  const { store, another, database } = await fresh('postgres', 'lockclose');
  const schema = new URL(database.url).searchParams.get('schema')!;
  const a = await store.tryLock('cust-a', 'occupancy');
  const b = await store.tryLock('cust-a', 'buildings');
  expect(a && b).toBeDefined();
  expect(await terminateLockHolder(schema, 'cust-a', 'occupancy')).toBe(1);
  // Both locks shared the terminated session: both are gone on the server.
  await commitRefused(store, 'cust-a');
  const other = await another();
  expect(await other.tryLock('cust-a', 'buildings')).toBeDefined();
  await expect(store.close()).resolves.toBeUndefined();
});
