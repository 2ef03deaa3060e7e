import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { DatabaseLocationError } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import { isBusy } from '../errors.ts';
import { WalCheckpointer } from './checkpointer.ts';
import { makeDirectory } from '../../directory.ts';
import { directoryFailure, openFailure } from './open-failure.ts';
import { SqliteWriter } from './writer.ts';

/**
 * Opening a SQLite file: for writing (WAL, the pragmas, the background checkpointer and the writer thread) or for
 * reading only.
 */
export interface ConnectionOptions {
  path: string;
  logger: Logger;
  /** How long a writer waits for another process's write transaction before failing (ms). */
  busyTimeoutMs?: number;
  /** WAL checkpoints on a worker thread instead of inside commits (default true for files; see checkpointer.ts). */
  backgroundCheckpoints?: boolean;
  /** Write transactions on a worker thread (writer.ts); default true for files. */
  writerThread?: boolean;
}

export interface Connection {
  db: Database.Database;
  checkpointer?: WalCheckpointer;
  writer?: SqliteWriter;
  /** Removes what opening made besides the connection (a private copy of a read-only file). */
  cleanup?(): void;
}

/**
 * With background checkpoints the writer checkpoints only when the WAL reaches this many pages (~40 MiB): under
 * back-to-back commits (the worker's checkpoint rarely finishes between two, so the WAL cannot restart after it) or
 * if the worker falls behind. It then copies only what the worker has not. The file is truncated back to
 * JOURNAL_SIZE_LIMIT after such a checkpoint.
 */
const FALLBACK_AUTOCHECKPOINT_PAGES = 10_000;
const JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024;
export const BUSY_TIMEOUT_MS = 5000;
/**
 * Commits a process makes before its background checkpoints start (checkpointer.ts): a cron sync's few commits never
 * pay for the worker thread; a daemon or a backfill reaches it within seconds.
 */
export const CHECKPOINTS_AFTER_COMMITS = 32;

export function openForWrites(options: ConnectionOptions): Connection {
  const { path, logger } = options;
  try {
    if (path !== ':memory:' && !path.startsWith('file:')) makeDirectory(dirname(path));
  } catch (error) {
    throw directoryFailure(error, path);
  }
  const checkpointer = path !== ':memory:' && (options.backgroundCheckpoints ?? true) ? new WalCheckpointer({ path, logger, firstAfterCommits: CHECKPOINTS_AFTER_COMMITS }) : undefined;
  // Applied to the main connection and to the writer thread's (writer.ts), so both behave alike.
  const pragmas = [
    `busy_timeout = ${options.busyTimeoutMs ?? BUSY_TIMEOUT_MS}`,
    // NORMAL in WAL mode is durable against process crashes (what kill -9 tests); only an OS crash may lose the
    // last commits, never corrupt the file.
    'synchronous = NORMAL',
    'foreign_keys = ON',
    // 32 MiB page cache (default 2 MiB): every commit touches index pages scattered over the file (one insertion
    // point per floor space), which the default cache would write back and read again (docs/performance.md).
    'cache_size = -32768',
    ...(checkpointer ? [`wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`, `journal_size_limit = ${JOURNAL_SIZE_LIMIT}`] : []),
  ];
  let db: Database.Database;
  try {
    db = new Database(path);
    // The busy timeout first, so that every statement, switching to WAL included, waits for another process's lock
    // as long as the configured timeout (not better-sqlite3's default).
    db.pragma(pragmas[0]!);
    switchToWal(db, options.busyTimeoutMs ?? BUSY_TIMEOUT_MS);
    for (const pragma of pragmas.slice(1)) db.pragma(pragma);
  } catch (error) {
    throw openFailure(error, path, 'write');
  }
  const writer = path !== ':memory:' && (options.writerThread ?? true) ? new SqliteWriter({ path, pragmas }) : undefined;
  return { db, ...(checkpointer && { checkpointer }), ...(writer && { writer }) };
}

/** For a synchronous pause: nobody ever notifies it. */
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

/**
 * Switches the file to WAL. A file nobody has switched yet (a new database) must be had alone for a moment, and when
 * other processes open it at the same time SQLite answers SQLITE_BUSY at once instead of waiting through the busy
 * handler (processes starting together on a new file met it: `test/store/sqlite-open-race.test.ts`). So a busy
 * answer is tried again, with short pauses, for as long as the busy timeout; past it, the error stands.
 */
function switchToWal(db: Database.Database, timeoutMs: number): void {
  const deadline = performance.now() + timeoutMs;
  for (let pause = 1; ; pause = Math.min(pause * 2, 50)) {
    try {
      db.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if (!isBusy(error) || performance.now() >= deadline) throw error;
    }
    Atomics.wait(PAUSE, 0, 0, pause);
  }
}

/**
 * A read-only connection. A WAL database at rest (its writer closed it cleanly, so no -wal file) in a directory this
 * user may not write cannot be opened read-only: SQLite needs to create its -shm file first. With no -wal file every
 * committed page is in the main file, so a private copy in a temporary directory reads exactly the same data.
 */
export function openForReads(options: ConnectionOptions): Connection {
  const { path, logger } = options;
  const open = (file: string) => {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? BUSY_TIMEOUT_MS}`);
    // Opening is lazy: the first read is what fails when the -shm file cannot be made.
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    return db;
  };
  try {
    return { db: open(path) };
  } catch (error) {
    const code = (error as { code?: string }).code;
    // A missing file or directory, a directory, a file this user may not read, a file that is not a database.
    const failure = openFailure(error, path, 'read');
    if (failure instanceof DatabaseLocationError) throw failure;
    if ((code !== 'SQLITE_READONLY_DIRECTORY' && code !== 'SQLITE_CANTOPEN') || existsSync(`${path}-wal`)) throw failure;
    const dir = mkdtempSync(join(tmpdir(), 'occupancy-sync-ro-'));
    const copy = join(dir, basename(path));
    copyFileSync(path, copy);
    logger.info({ path, copy }, 'the database directory is read-only: reading a private copy of the file (it has no uncommitted WAL)');
    return { db: open(copy), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
  }
}
