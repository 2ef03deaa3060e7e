import { mkdirSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DatabaseBusyError, exitCodeFor, ExitCode } from '../../src/errors.ts';
import { memoryLogger } from '../../src/logger.ts';
import { openStore } from '../../src/store/index.ts';
import { advisoryKey } from '../../src/store/postgres/locks.ts';
import { freshDatabase, DIALECTS, PG_BASE_URL, type TestDatabase } from '../support/databases.ts';
import { convertedRows, legacyRows, makeLegacyDatabase, migrateAsReleased, readRows, type LegacyRow } from '../support/legacy-database.ts';
import { spawnProcess, spawnTs, type Child } from '../support/process.ts';
import { waitFor } from '../support/wait.ts';
import { Figures } from '../reliability/figures.ts';
import { migrationNames, trackedDatabase } from './harness.ts';

/**
 * Concurrent first starts (issue 24), rows of docs/reliability.md: processes that migrate one database at the same moment, as a cron `sync` and
 * `serve` do after an upgrade. Each migration step must be applied exactly once and no process may fail, whether the
 * database is empty or at 0008 with rows the occupancy conversion still has to move (where a process used to read
 * occupancy_legacy after another's 0009 had dropped it). The processes are started once and each round is one line
 * written to all of them at once, so they start migrating together; rounds repeat the race.
 */

const PROCESSES = 4;
const ROUNDS = 4;
const ROWS = 1_500;
const BATCH = 150;

type Answer = { applied: string[] } | { error: string };

const figures = new Figures(
  { section: 'concurrent-starts', title: 'Concurrent first starts: processes migrating one database at once (test/store/concurrent-starts.test.ts)' },
  DIALECTS.flatMap((d) => [`concurrent-starts/${d}/empty`, `concurrent-starts/${d}/at-0008`, `concurrent-starts/${d}/lock-held`, `concurrent-starts/${d}/lock-held-too-long`]),
);
afterAll(() => void figures.publish());

describe.each(DIALECTS)('processes migrating one database at the same moment on %s', (dialect) => {
  let children: Child[] = [];
  beforeAll(async () => {
    children = Array.from({ length: PROCESSES }, () => spawnTs('test/store/fixtures/migrate-child.ts', [], { stdin: 'pipe', stderr: 'inherit' }));
    for (const child of children) expect(await child.nextLine('the migrating process to start')).toBe('ready');
  });
  afterAll(async () => {
    await Promise.all(children.map((child) => child.kill('SIGKILL')));
  });

  /** Sends the request to every process at once; resolves to their answers. */
  async function race(db: TestDatabase, batch?: number): Promise<Answer[]> {
    const line = `migrate ${db.url}${batch ? ` ${batch}` : ''}\n`;
    for (const child of children) child.write(line);
    return Promise.all(children.map(async (child) => JSON.parse(await child.nextLine('the migration to end', 120_000)) as Answer));
  }

  it(`${PROCESSES} processes on an empty database, ${ROUNDS} times: every migration applied once, by one process, none fails`, async () => {
    const all = migrationNames(dialect);
    for (let round = 0; round < ROUNDS; round++) {
      const db = await freshDatabase(dialect, `race_empty_${round}`);
      try {
        const answers = await race(db);
        expect(answers.filter((a) => 'error' in a), `round ${round}`).toEqual([]);
        const applied = answers.map((a) => (a as { applied: string[] }).applied);
        expect(applied.flat(), `round ${round}`).toEqual(all);
        expect(applied.filter((names) => names.length > 0), `round ${round}`).toHaveLength(1);
        const store = await openStore(db.database, { readonly: true });
        try {
          expect(await store.query('SELECT count(*) AS n FROM __drizzle_migrations')).toEqual([{ n: all.length }]);
          await store.requireCurrentSchema();
        } finally {
          await store.close();
        }
      } finally {
        await db.drop();
      }
    }
    figures.record({
      key: `concurrent-starts/${dialect}/empty`,
      tried: `${PROCESSES} processes migrate one empty database at the same moment (${dialect}), per round`,
      count: ROUNDS,
      held: 'every migration applied exactly once, all by one process; none failed; the others waited and found nothing pending',
    });
  });

  it(`${PROCESSES} processes on a database at 0008 with ${ROWS} rows to convert, ${ROUNDS} times: converted once, exactly, none fails`, async () => {
    const rows = legacyRows(ROWS);
    for (let round = 0; round < ROUNDS; round++) {
      const db = await freshDatabase(dialect, `race_0008_${round}`);
      try {
        await makeLegacyDatabase(db, rows);
        await migrateAsReleased(db, '0008_compact_occupancy');
        const answers = await race(db, BATCH);
        expect(answers.filter((a) => 'error' in a), `round ${round}`).toEqual([]);
        expect(answers.flatMap((a) => (a as { applied: string[] }).applied), `round ${round}`).toEqual(migrationNames(dialect).filter((name) => name > '0008_compact_occupancy'));
        const store = await openStore(db.database, { readonly: true });
        try {
          expect(readRows(await store.query<LegacyRow>('SELECT * FROM occupancy')), `round ${round}`).toEqual(convertedRows(rows));
        } finally {
          await store.close();
        }
      } finally {
        await db.drop();
      }
    }
    figures.record({
      key: `concurrent-starts/${dialect}/at-0008`,
      tried: `${PROCESSES} processes migrate one database at 0008 with ${ROWS.toLocaleString('en-US')} readings to convert (batches of ${BATCH}) at the same moment (${dialect}), per round`,
      count: ROUNDS,
      held: '0009 applied once and every reading converted exactly once; none failed (formerly: no such table: occupancy_legacy)',
    });
  });
});


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
    figures.record({
      key: `concurrent-starts/${dialect}/lock-held`,
      tried: `migrate while another process holds the migration lock (${dialect})`,
      count: 1,
      held: 'it waits, logging whom for (process and host, or Postgres session), and applies the migrations once the holder is done',
    });
  });

  it('gives up after migrationWaitMs with DatabaseBusyError (exit 75) naming the holder, having done nothing', async () => {
    const db = await trackedDatabase(dialect, 'miglock_busy');
    const lock = await holdMigrationLock(db);
    const store = await openStore(db.database, { migrationWaitMs: 300 });
    cleanups.push(() => store.close());
    const error = (await store.migrate().catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(DatabaseBusyError);
    expect(error.message).toMatch(lock.holder);
    expect(error.message).toMatch(/while another process held it .*; nothing was done/);
    expect(exitCodeFor(error)).toBe(ExitCode.LOCKED);
    const empty = (await store.requireCurrentSchema().catch((e: unknown) => e)) as Error;
    expect(empty.message).toMatch(/holds no occupancy-sync tables yet/);
    // Nothing of ours in the database DATABASE_URL names, for a reading command: configuration, as a missing SQLite file.
    expect(exitCodeFor(empty)).toBe(ExitCode.CONFIG);
    figures.record({
      key: `concurrent-starts/${dialect}/lock-held-too-long`,
      tried: `the same, past the wait (migrationWaitMs; 10 minutes by default) (${dialect})`,
      count: 1,
      held: 'DatabaseBusyError naming the holder, exit code 75, nothing done',
    });
  });
});
