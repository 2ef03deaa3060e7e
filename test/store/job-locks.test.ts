import { afterAll, expect, it } from 'vitest';
import { openJobQueueSql } from '../../src/store/job-queue.ts';
import { freshDatabase } from '../support/databases.ts';
import { tcpProxy } from './tcp-proxy.ts';

/**
 * The queue's job locks (src/app/queue.ts): graphile-worker locks a job, then the job takes its job lock, and a
 * reaper that finds a job locked past its threshold with no job lock held takes it for a dead worker's. The session
 * of the job locks is therefore connected before the queue starts: a job's lock is one statement, not a connection
 * (a loaded machine's first connection took longer than a second, and a job was released and ran twice).
 */
const db = await freshDatabase('postgres', 'job_locks');
afterAll(() => db.drop());

it('opens its session before it resolves, and a job lock is one statement on it', async () => {
  const target = new URL(db.url);
  const proxy = await tcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  try {
    target.port = String(proxy.port);
    const queueSql = await openJobQueueSql(target.toString());
    const locks = await queueSql.openJobLocks();
    try {
      expect(proxy.connections()).toBe(1);
      const release = await locks.hold('cust-a', 'occupancy');
      await release();
      expect(proxy.connections()).toBe(1);
    } finally {
      await locks.close();
    }
  } finally {
    await proxy.close();
  }
});
