import { accessSync, constants, statSync, type Stats } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { DatabaseLocationError, type StoreError } from '../../errors.ts';
import { isBusy, storeError } from '../errors.ts';
import { DirectoryFailure } from '../../directory.ts';

/**
 * Why a SQLite file could not be opened, in words a newcomer can act on. better-sqlite3's own answers do not say it:
 * a directory read is "disk I/O error", a missing directory a TypeError without a code, and "unable to open database
 * file" stands for a missing file, a directory, a file this user may not read and a directory it may not write alike.
 * So once the driver has failed, the file system is asked what is there, and the message names DATABASE_URL, the
 * resolved path, what is wrong and the fix (exit code 78: the configuration points at the wrong place).
 */

export type OpenMode = 'read' | 'write';

const READ_ONLY_COMMANDS = 'status, report, state show';

function stat(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

function may(path: string, mode: number): boolean {
  try {
    accessSync(path, mode);
    return true;
  } catch {
    return false;
  }
}

/** The nearest ancestor of `path` (or `path` itself) that exists. */
function nearestExisting(path: string): { path: string; stats: Stats } | undefined {
  for (let at = path; ; at = dirname(at)) {
    const stats = stat(at);
    if (stats) return { path: at, stats };
    if (dirname(at) === at) return undefined;
  }
}

const user = (): string => (process.getuid ? `this user (uid ${process.getuid()})` : 'this user');

/**
 * What is wrong at `path` for opening it to read or to write, or undefined when the file system shows nothing wrong
 * (the driver's own words are then the best there is).
 */
export function locationProblem(path: string, mode: OpenMode, error?: unknown): string | undefined {
  const file = resolve(path);
  const dir = dirname(file);
  const stats = stat(file);
  const create = 'run `occupancy-sync sync` (or `migrate`), which creates it, or point DATABASE_URL at the file it writes to';
  if (!stats) {
    const existing = nearestExisting(dir);
    if (existing && !existing.stats.isDirectory()) {
      return `${existing.path} is a file, not a directory, so the database cannot be there. Fix: correct the path in DATABASE_URL`;
    }
    if (existing && !may(existing.path, constants.X_OK)) {
      return `${user()} may not enter the directory ${existing.path}. Fix: make it searchable (chmod o+x, or a group this user is in), or point DATABASE_URL elsewhere`;
    }
    if (mode === 'read') {
      return existing?.path === dir
        ? `there is no SQLite database there yet. Fix: ${create}`
        : `there is no SQLite database there: the directory ${dir} does not exist. Fix: ${create}`;
    }
    if (existing && !may(existing.path, constants.W_OK | constants.X_OK)) {
      return `${user()} may not create ${existing.path === dir ? 'a file' : 'a directory'} in ${existing.path}. Fix: make that directory writable by this user, or point DATABASE_URL elsewhere`;
    }
    return undefined;
  }
  if (stats.isDirectory()) {
    return `this is a directory, not a SQLite database file. Fix: name a file in it, e.g. DATABASE_URL=file:${path.replace(/\/+$/, '')}/occupancy.db`;
  }
  if (!stats.isFile()) return `this is not a regular file. Fix: point DATABASE_URL at a SQLite database file`;
  if (!may(file, constants.R_OK)) {
    return `${user()} may not read the file. Fix: make the file (and, for commands that write, its directory) readable and writable by this user, or run as its owner`;
  }
  if (mode === 'write' && (!may(file, constants.W_OK) || !may(dir, constants.W_OK | constants.X_OK))) {
    const what = !may(file, constants.W_OK) ? (!may(dir, constants.W_OK) ? 'the file and its directory are' : 'the file is') : 'its directory is';
    return (
      `the database is read-only for this user: ${what} not writable by ${user()} (a command that writes needs both: SQLite keeps its -wal and -shm files beside the database). ` +
      `Fix: make the file and its directory writable by this user, or use a read-only command (${READ_ONLY_COMMANDS})`
    );
  }
  if ((error as { code?: string } | undefined)?.code === 'SQLITE_NOTADB') {
    return 'this file is not a SQLite database. Fix: point DATABASE_URL at the file occupancy-sync created, or at a new path (it is created on the first sync)';
  }
  return undefined;
}

/** How DATABASE_URL is shown: as typed, and the absolute path it resolves to when that differs. */
export function shownLocation(path: string): string {
  const file = resolve(path);
  return `DATABASE_URL=${JSON.stringify(`file:${path}`)}${file === path ? '' : ` (${file})`}`;
}

/**
 * The error for a failure to open `path`: a DatabaseLocationError when the file system explains it, otherwise the
 * store's usual error (a busy file stays a DatabaseBusyError).
 */
export function openFailure(error: unknown, path: string, mode: OpenMode): StoreError {
  if (isBusy(error)) return storeError(error, path);
  const problem = locationProblem(path, mode, error);
  return problem ? new DatabaseLocationError(`${shownLocation(path)}: ${problem}`, { cause: error }) : storeError(error, path);
}

/** Failures of the disk, not of the place: freeing space or a repair lets the next run through. */
const DISK_CODES = new Set(['ENOSPC', 'EDQUOT', 'EIO']);

/**
 * The error for a directory of the database that could not be made (makeDirectory): DATABASE_URL names a place where
 * the database cannot be, so a DatabaseLocationError (exit 78) naming the variable, the path, the directory that
 * failed and the fix; a full or failing disk stays the store's usual error.
 */
export function directoryFailure(error: unknown, path: string): StoreError {
  const failure = error instanceof DirectoryFailure ? error : undefined;
  if (failure?.code && DISK_CODES.has(failure.code)) return storeError(failure.cause ?? error, path);
  const problem =
    locationProblem(path, 'write', error) ??
    `cannot create the directory ${failure?.path ?? dirname(resolve(path))} (${failure?.message ?? String(error)}). ` +
      `Fix: ${failure?.fix ? `${failure.fix} in DATABASE_URL` : 'create that directory (writable by this user), or correct the path in DATABASE_URL'}`;
  return new DatabaseLocationError(`${shownLocation(path)}: ${problem}`, { cause: error });
}
