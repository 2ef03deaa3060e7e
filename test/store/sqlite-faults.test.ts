import { createHash, randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { DatabaseBusyError, ExitCode, exitCodeFor, StoreError } from '../../src/errors.ts';
import { silentLogger } from '../../src/logger.ts';
import { openStore } from '../../src/store/index.ts';
import { openSqlite } from '../../src/store/sqlite/adapter.ts';
import { SqlStore } from '../../src/store/store.ts';
import type { Store } from '../../src/store/types.ts';
import { runMain } from '../support/cli.ts';
import { freshDatabase, type TestDatabase } from '../support/databases.ts';
import { spawnTs, type Child } from '../support/process.ts';
import { Figures } from '../reliability/figures.ts';
import { checkpoint, readings } from './harness.ts';

/**
 * Faults of a SQLite file (issue 24): a damaged file is refused by every command that writes, as clearly as `status`
 * reports it, before anything is written; a file another process holds locked is waited for (the busy timeout applies
 * from the first statement), and past the wait a command that has done nothing yet exits 75, as a held run lock does.
 */

const C = 'cust-f';
const DAMAGED = /the SQLite database .* is damaged \(.*\)\. Fix: restore it from a backup; a new file re-syncs from SYNC_INITIAL_HISTORY/;
const figures = new Figures(
  { section: 'sqlite-faults', title: 'Faults of a SQLite file: damage, another process holding it (test/store/sqlite-faults.test.ts)' },
  ['damaged', 'damaged-large', 'locked-briefly', 'locked-too-long'].map((c) => `sqlite-faults/${c}`),
);
afterAll(() => void figures.publish());
const record = (key: string, tried: string, held: string) => figures.record({ key: `sqlite-faults/${key}`, tried, count: 1, held });
const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function database(label: string): Promise<TestDatabase> {
  const db = await freshDatabase('sqlite', label);
  cleanups.push(() => db.drop());
  return db;
}

/** A database with some megabytes of readings, closed (no WAL left). */
async function filled(db: TestDatabase): Promise<void> {
  const store = await openStore(db.database);
  await store.migrate();
  for (let page = 0; page < 12; page++) {
    const records = Array.from({ length: 20 }, (_, s) => readings(250, new Date(Date.parse('2026-01-01T00:00:00.000Z') + page * 250 * 60_000).toISOString(), `fs-${s}`)).flat();
    await store.commitPage({ customerId: C, sink: 'occupancy', records, at: '2026-03-01T00:00:00.000Z', checkpoint: checkpoint(C, null, `p${page}`) });
  }
  await store.close();
}

/** 64 KiB of garbage in the middle of the file, on page boundaries. */
function damage(path: string): void {
  const middle = Math.floor(statSync(path).size / 2 / 4096) * 4096;
  const fd = openSync(path, 'r+');
  writeSync(fd, randomBytes(65_536), 0, 65_536, middle);
  closeSync(fd);
}

const digest = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

/** A store on the SQLite room with options the public openStore does not take. */
function sqliteStore(path: string, clock: FakeClock, options: { busyTimeoutMs?: number; fullCheckBytes?: number } = {}): Store {
  const adapter = openSqlite({ path, logger: silentLogger, now: () => new Date(clock.now()).toISOString(), ...options });
  const store = new SqlStore(adapter, clock, silentLogger, { lockWaitMs: 1_000 });
  cleanups.push(() => store.close());
  return store;
}

function holder(path: string, mode: 'exclusive' | 'write', releaseAfterGoMs = 0): Child {
  const child = spawnTs('test/store/fixtures/sqlite-holder.ts', [path, mode, String(releaseAfterGoMs)], { stdin: 'pipe', stderr: 'inherit' });
  cleanups.push(() => child.kill('SIGKILL'));
  return child;
}

describe('a damaged SQLite file', () => {
  it('with 64 KiB of garbage in the middle is refused by commands that write, nothing written, in the words status uses', async () => {
    const db = await database('damaged');
    await filled(db);
    damage(db.path!);
    const before = digest(db.path!);

    const error = (await openStore(db.database).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(StoreError);
    expect(error.message).toMatch(DAMAGED);
    expect(error.message).toMatch(/Nothing was written/);

    const env = { DATABASE_URL: db.url, LOG_LEVEL: 'silent' };
    const migrate = await runMain(['migrate'], env);
    expect(migrate.code).toBe(ExitCode.FAILURE);
    expect(migrate.stderr).toMatch(DAMAGED);
    // The words status prints when a read meets a damaged page (src/store/errors.ts, SQLITE_CORRUPT).
    const reader = await openStore(db.database, { readonly: true });
    await expect(reader.query('SELECT count(*) FROM occupancy')).rejects.toThrow(DAMAGED);
    await reader.close();
    expect(digest(db.path!)).toBe(before);
    record('damaged', '64 KiB of garbage written over the middle of a file of 60,000 readings; then `migrate` and opening the store for writing', 'refused before anything is written, in the words `status` uses (the file is damaged; restore it from a backup), exit code 1; the file unchanged (formerly `sync` committed pages beside the broken ones and exited 0)');
  });

  it('over the size checked at every open, is checked at the first open and again a day after its last clean check', async () => {
    const db = await database('damaged_large');
    await filled(db);
    const clock = new FakeClock('2026-03-01T00:00:00.000Z');
    // Every file counts as large here: the first open checks it in full and records the clean check in the file.
    await sqliteStore(db.path!, clock, { fullCheckBytes: 0 }).close();
    cleanups.pop();
    damage(db.path!);
    // Within the day the check is not repeated (the bound on its cost, and on how long a damage can go unseen).
    clock.set(Date.parse('2026-03-01T23:00:00.000Z'));
    await sqliteStore(db.path!, clock, { fullCheckBytes: 0 }).close();
    cleanups.pop();
    clock.set(Date.parse('2026-03-02T00:00:01.000Z'));
    expect(() => sqliteStore(db.path!, clock, { fullCheckBytes: 0 })).toThrow(DAMAGED);
    record('damaged-large', 'the same on a file over the size checked at every open (16 MiB)', 'checked in full at its first open and again at the first open a day after its last clean check (the bound on its cost), then refused');
  });
});

describe('a SQLite file another process holds locked', () => {
  it('is waited for: opening beside a process that holds it briefly succeeds', async () => {
    const db = await database('busy_open');
    const lock = holder(db.path!, 'exclusive', 1_000);
    expect(await lock.nextLine('the holder to lock the file')).toBe('locked');
    // Loaded first, so opening is only the statements that meet the lock.
    await import('../../src/store/sqlite/adapter.ts');
    lock.write('go\n');
    const store = await openStore(db.database);
    cleanups.push(() => store.close());
    expect(await lock.nextLine('the holder to let go')).toBe('released');
    await store.migrate();
    await store.requireCurrentSchema();
    record('locked-briefly', 'opening while another process holds the file exclusively for a moment', 'the open waits within the busy timeout and succeeds');
  });

  it('past the busy timeout, opening, migrating and locking fail with DatabaseBusyError (exit 75), having done nothing', async () => {
    const db = await database('busy_long');
    const clock = new FakeClock('2026-03-01T00:00:00.000Z');
    const migrated = await openStore(db.database);
    await migrated.migrate();
    await migrated.close();

    const exclusive = holder(db.path!, 'exclusive');
    expect(await exclusive.nextLine('the holder to lock the file')).toBe('locked');
    const opening = (() => {
      try {
        sqliteStore(db.path!, clock, { busyTimeoutMs: 200 });
        return undefined;
      } catch (error) {
        return error as Error;
      }
    })();
    expect(opening).toBeInstanceOf(DatabaseBusyError);
    expect(opening!.message).toMatch(/stayed locked by another process past the busy timeout .*Nothing was done/);
    expect(exitCodeFor(opening)).toBe(ExitCode.LOCKED);
    exclusive.write('release\n');
    expect(await exclusive.nextLine('the holder to let go')).toBe('released');

    const store = sqliteStore(db.path!, clock, { busyTimeoutMs: 200 });
    const writer = holder(db.path!, 'write');
    expect(await writer.nextLine('the writer to hold its transaction')).toBe('locked');
    const locking = await store.tryLock(C, 'occupancy').catch((e: unknown) => e as Error);
    expect(locking).toBeInstanceOf(DatabaseBusyError);
    expect((locking as Error).message).toMatch(/^locking cust-f\/occupancy failed: .*Nothing was done/);
    // Migrating a database already at this version reads only, so the writer does not stop it.
    expect(await store.migrate()).toEqual([]);
    writer.write('release\n');
    expect(await writer.nextLine('the writer to let go')).toBe('released');

    // With something to apply (the views' script changed since it was applied), migrating waits for the migration
    // lock, saying for whom (a process writing), then gives up having done nothing.
    await store.query(`UPDATE "__repeatable_migrations" SET checksum = 'changed'`);
    const second = holder(db.path!, 'write');
    expect(await second.nextLine('the writer to hold its transaction')).toBe('locked');
    const migrating = await store.migrate().catch((e: unknown) => e as Error);
    expect(migrating).toBeInstanceOf(DatabaseBusyError);
    expect((migrating as Error).message).toMatch(/while another process held it \(a process writing to .*\); nothing was done/);
    expect(await store.query(`SELECT count(*) AS n FROM "__repeatable_migrations" WHERE checksum = 'changed'`)).toEqual([{ n: 1 }]);
    second.write('release\n');
    expect(await second.nextLine('the writer to let go')).toBe('released');
    await store.migrate();
    expect(await store.query(`SELECT count(*) AS n FROM "__repeatable_migrations" WHERE checksum = 'changed'`)).toEqual([{ n: 0 }]);
    expect(await store.query('SELECT count(*) AS n FROM sync_locks')).toEqual([{ n: 0 }]);
    record('locked-too-long', 'opening, migrating and taking a run lock while another process holds the file past the busy timeout', 'DatabaseBusyError naming the wait and the fix, exit code 75 (as a held run lock), nothing done (formerly a StoreError: `database is locked`, exit 1); a migration of a database already at this version reads only and goes on; one with something to apply waits for the migration lock meanwhile, saying for whom');
  });
});
