import { afterAll, expect, it } from 'vitest';
import { makeWorkerUtils } from 'graphile-worker';
import { openJobQueueSql } from '../../src/store/job-queue.ts';
import { workerUrl } from '../../src/store/postgres/job-queue.ts';
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

it('gives graphile-worker the URL that connects as its session did: sslmode=prefer on a server without TLS connects plain, not refused', async () => {
  const url = new URL(db.url);
  url.searchParams.set('sslmode', 'prefer');
  const locks = await (await openJobQueueSql(url.toString())).openJobLocks();
  try {
    // This machine's Postgres offers no TLS (the suite's server); the store's driver fell back to plain, and so must the queue's.
    expect(new URL(locks.workerUrl).searchParams.getAll('sslmode')).toEqual(['disable']);
    // The queue's schema beside the data's, which db.drop() drops with it.
    const utils = await makeWorkerUtils({ connectionString: locks.workerUrl, schema: `${db.schema}_queue` });
    try {
      await utils.migrate();
    } finally {
      await utils.release();
    }
  } finally {
    await locks.close();
  }
});

it('reads each sslmode as the store\'s driver does: libpq\'s require, verify-ca as verify-full, prefer and allow as the session went', () => {
  const base = 'postgres://u@db.example.com:5432/d';
  const modes = (url: string) => [...new URL(url).searchParams.entries()];
  expect(workerUrl(base, false)).toBe(base);
  expect(workerUrl(`${base}?sslmode=disable`, false)).toBe(`${base}?sslmode=disable`);
  expect(workerUrl(`${base}?sslmode=verify-full`, true)).toBe(`${base}?sslmode=verify-full`);
  expect(modes(workerUrl(`${base}?sslmode=verify-ca`, true))).toEqual([['sslmode', 'verify-full']]);
  expect(modes(workerUrl(`${base}?sslmode=require`, true))).toEqual([['uselibpqcompat', 'true'], ['sslmode', 'require']]);
  for (const mode of ['prefer', 'allow']) {
    expect(modes(workerUrl(`${base}?sslmode=${mode}`, true))).toEqual([['uselibpqcompat', 'true'], ['sslmode', 'require']]);
    expect(modes(workerUrl(`${base}?sslmode=${mode}&application_name=x`, false))).toEqual([['application_name', 'x'], ['sslmode', 'disable']]);
  }
});
