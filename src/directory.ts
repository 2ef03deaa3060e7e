import { lstatSync, mkdirSync, readlinkSync, statSync, type Stats } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * Makes a directory the program writes in (a SQLite database's, the token cache's, a recording's), and its missing
 * parents, one at a time from the nearest one that exists. Not `mkdirSync(dir, { recursive: true })`: on a file system
 * that answers mkdir with ENOENT where its parent exists (procfs, sysfs), Node's recursive mkdir climbs back up and
 * down forever, at full CPU and deaf to SIGTERM. Here each missing directory is tried once, so the work is bounded by
 * the depth of the path.
 */

/**
 * A directory that could not be made: `path` is the one that failed (a parent of the one asked for, possibly), the
 * message what is wrong there, `fix` what to do when it is not to create `path` or correct the setting that named it.
 */
export class DirectoryFailure extends Error {
  readonly path: string;
  readonly code: string | undefined;
  readonly fix: string | undefined;
  constructor(path: string, problem: string, options: { cause?: unknown; code?: string; fix?: string } = {}) {
    super(problem, { cause: options.cause });
    this.path = path;
    this.code = options.code;
    this.fix = options.fix;
  }
}

function lstat(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Makes `dir` and its missing parents (with `mode`, as mkdir(2) takes it); throws a DirectoryFailure naming the one that failed and why. */
export function makeDirectory(dir: string, mode?: number): void {
  const missing: string[] = [];
  let at = resolve(dir);
  // lstat, not stat: a symbolic link to nowhere exists as a link; following it would take it for a missing directory,
  // which mkdir then refuses (EEXIST) without saying why.
  for (; !lstat(at); at = dirname(at)) {
    if (dirname(at) === at) break;
    missing.unshift(at);
  }
  const entry = lstat(at);
  if (entry?.isSymbolicLink() && !isDirectory(at)) {
    const target = resolve(dirname(at), readlinkSync(at));
    throw new DirectoryFailure(at, `it is a symbolic link to ${target}, which is not a directory that exists`, {
      code: 'ENOENT',
      fix: `create ${target} (writable by this user), or correct the path`,
    });
  }
  if (entry && !isDirectory(at)) throw new DirectoryFailure(at, 'it is a file, not a directory', { code: 'ENOTDIR' });
  for (const path of missing) {
    try {
      mkdirSync(path, mode);
    } catch (error) {
      const code = (error as { code?: string }).code;
      // Another process starting on the same new database made it meanwhile: what was wanted is there.
      if (code === 'EEXIST' && isDirectory(path)) continue;
      // Node's message ends with the call and the path (", mkdir '/proc/x'"), which the caller's message names already.
      const problem = (error as Error).message.replace(/, mkdir '.*'$/s, '');
      throw new DirectoryFailure(path, problem, { cause: error, ...(code && { code }) });
    }
  }
}
