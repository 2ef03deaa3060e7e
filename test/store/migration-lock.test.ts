import { mkdirSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import { DatabaseBusyError, exitCodeFor, ExitCode } from '../../src/errors.ts';
import { memoryLogger } from '../../src/logger.ts';
import { openStore } from '../../src/store/index.ts';
import { advisoryKey } from '../../src/store/postgres/locks.ts';
import { DIALECTS, PG_BASE_URL, type TestDatabase } from '../support/databases.ts';
import { spawnProcess } from '../support/process.ts';
import { waitFor } from '../support/wait.ts';
import { migrationNames, trackedDatabase } from './harness.ts';

/**
 * One process migrates at a time, under a lock that dies with its holder; another that wants to migrate meanwhile
 * waits for a bounded time, saying for whom, and then finds nothing left to do, or gives up with exit code 75 having
 * done nothing. On Postgres the wait used to be a silent pg_advisory_lock with no end.
 */

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** Holds the migration lock as another process would; resolves to how to let it go and how its holder is named. */
async function holdMigrationLock(db: TestDatabase): Promise<{ release(): Promise<unknown>; holder: RegExp }> {
  if (db.dialect === 'postgres') {
    const session = postgres(PG_BASE_URL, { max: 1, onnotice: () => {} });
    const [{ pid }] = (await session.unsafe('SELECT pg_backend_pid() AS pid')) as unknown as [{ pid: number }];
    await session.unsafe('SELECT pg_advisory_lock($1::bigint)', [advisoryKey('occupancy-sync:migrate', db.schema!)]);
    const release = () => session.end({ timeout: 5 });
    cleanups.push(release);
    return { release, holder: new RegExp(`Postgres session ${pid}\\b`) };
  }
  // A live process on this host holds the row (the store checks its holder's liveness).
  const holder = spawnProcess('sleep', ['600'], { stdout: 'ignore' });
  const release = () => holder.kill('SIGKILL');
  cleanups.push(release);
  mkdirSync(dirname(db.path!), { recursive: true });
  const sqlite = new Database(db.path!);
  sqlite.exec('CREATE TABLE "__migration_lock" (name text PRIMARY KEY, holder_pid integer NOT NULL, holder_host text NOT NULL, holder_start text, token text NOT NULL, acquired_at text NOT NULL)');
  sqlite.prepare('INSERT INTO "__migration_lock" VALUES (?, ?, ?, NULL, ?, ?)').run('migrate', holder.process.pid, hostname(), 'other', '2026-03-01T00:00:00.000Z');
  sqlite.close();
  return { release, holder: new RegExp(`process ${holder.process.pid} on ${hostname()}`) };
}

describe.each(DIALECTS)('the migration lock on %s', (dialect) => {
  it('a migrate that finds another process migrating waits, says for whom, and goes on once it is done', async () => {
    const db = await trackedDatabase(dialect, 'miglock');
    const lock = await holdMigrationLock(db);
    const log = memoryLogger({ level: 'info' });
    const store = await openStore(db.database, { logger: log.logger });
    cleanups.push(() => store.close());
    const migrating = store.migrate();
    await waitFor(() => log.records().some((r) => r.msg === 'waiting for another process to finish migrating the database'), 'the line saying what it waits for');
    const line = log.records().find((r) => r.msg === 'waiting for another process to finish migrating the database')!;
    expect(String(line.holder)).toMatch(lock.holder);
    await lock.release();
    expect(await migrating).toEqual(migrationNames(dialect));
  });

  it('gives up after migrationWaitMs with DatabaseBusyError (exit 75) naming the holder, having done nothing', async () => {
    const db = await trackedDatabase(dialect, 'miglock_busy');
    const lock = await holdMigrationLock(db);
    const store = await openStore(db.database, { migrationWaitMs: 300 });
    cleanups.push(() => store.close());
    const error = (await store.migrate().catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(DatabaseBusyError);
    expect(error.message).toMatch(lock.holder);
    expect(error.message).toMatch(/nothing was done/);
    expect(exitCodeFor(error)).toBe(ExitCode.LOCKED);
    await expect(store.requireCurrentSchema()).rejects.toThrow(/holds no occupancy-sync tables yet/);
  });
});
