import { statSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { StoreError } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import { explainDatabaseError, isBusy, storeError } from '../errors.ts';

/**
 * Is the file whole, before anything writes to it? SQLite finds a damaged page only when it reads it, and a sync
 * reads few pages: with garbage in the middle of a file, `status` (which reads the data) said the file was damaged
 * while `sync` went on committing pages beside the broken ones. So opening for writing runs `PRAGMA quick_check` (every
 * b-tree page, each cell's bounds; about the cost of reading the file once, no index-to-table cross-check), which
 * costs what the file weighs (measured: 160 ms for 15 MiB, 330 ms for 75 MiB, about 4.5 ms a MiB beyond):
 * - a file of at most FULL_CHECK_BYTES is checked at every open, for at most about 160 ms;
 * - a larger one at the first open after CHECK_EVERY_MS since its last clean check, which is recorded in the file, so
 *   a damage there is found within a day, at the cost of one full read a day (a 1 GiB file: about 5 s).
 * A damaged file is refused, nothing written, with the same words `status` uses.
 */

export const FULL_CHECK_BYTES = 16 * 1024 * 1024;
export const CHECK_EVERY_MS = 24 * 3_600_000;
const RECORD =
  'CREATE TABLE IF NOT EXISTS "__integrity_checks" (id integer PRIMARY KEY CHECK (id = 1), checked_at text NOT NULL, bytes integer NOT NULL)';

export interface IntegrityOptions {
  path: string;
  logger: Logger;
  now: () => string;
  /** Files up to this size are checked at every open (tests lower it to exercise the large-file rule). */
  fullCheckBytes?: number;
}

/** Throws StoreError (the file is damaged) or returns; records a clean check of a large file. */
export function checkIntegrity(db: Database.Database, options: IntegrityOptions): void {
  const { path, logger, now } = options;
  if (path === ':memory:') return;
  const bytes = statSync(path).size + walBytes(path);
  const large = bytes > (options.fullCheckBytes ?? FULL_CHECK_BYTES);
  if (large && checkedRecently(db, now())) return;
  const started = performance.now();
  if (large) logger.info({ path, bytes }, 'checking the database file for damage (a large file: once a day)');
  let problems: string[];
  try {
    problems = (db.pragma('quick_check(20)') as Array<{ quick_check: string }>).map((r) => r.quick_check);
  } catch (error) {
    if (isBusy(error)) throw storeError(error, path, 'checking the file for damage');
    throw new StoreError(`${explainDatabaseError(error, path)}. Nothing was written`, { cause: error });
  }
  if (problems.length !== 1 || problems[0] !== 'ok') {
    const found = problems.join('; ').replace(/\s+/g, ' ').slice(0, 400);
    const damaged = Object.assign(new Error(`PRAGMA quick_check: ${found}`), { code: 'SQLITE_CORRUPT' });
    throw new StoreError(`${explainDatabaseError(damaged, path)}. Nothing was written`, { cause: damaged });
  }
  logger.debug({ path, bytes, ms: Math.round(performance.now() - started) }, 'the database file is whole (quick_check)');
  if (large) {
    db.exec(RECORD);
    db.prepare('INSERT INTO "__integrity_checks" (id, checked_at, bytes) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at, bytes = excluded.bytes').run(now(), bytes);
  }
}

function walBytes(path: string): number {
  try {
    return statSync(`${path}-wal`).size;
  } catch {
    return 0;
  }
}

function checkedRecently(db: Database.Database, now: string): boolean {
  const exists = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '__integrity_checks'`).get();
  if (!exists) return false;
  const row = db.prepare('SELECT checked_at FROM "__integrity_checks" WHERE id = 1').get() as { checked_at: string } | undefined;
  return row !== undefined && Date.parse(now) - Date.parse(row.checked_at) < CHECK_EVERY_MS;
}
