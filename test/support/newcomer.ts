import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, lstatSync, mkdirSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import nodeVersion from '../../src/cli/node-version.cjs';
import { ROOT } from './process.ts';

/**
 * A newcomer's view: a fresh clone, and the machine as a user has it, outside npm. Tests run under `npm test` / `npx vitest`, which put node_modules/.bin
 * directories (with the project's own Node) first on PATH; a newcomer's shell has none of them.
 */

/** This process's PATH without the node_modules/.bin directories and npm's node-gyp shim that npm puts first. */
export function systemPath(path = process.env.PATH ?? ''): string {
  return path
    .split(delimiter)
    .filter((dir) => dir && !/[\\/]node_modules[\\/]\.bin$/.test(dir) && !/[\\/]node-gyp-bin$/.test(dir))
    .join(delimiter);
}

export interface SystemNode {
  path: string;
  version: string;
  /** Older than every Node line occupancy-sync supports (src/cli/node-version.cjs). */
  tooOld: boolean;
}

/** The `node` the system PATH finds first, or undefined when it finds none. */
export function systemNode(): SystemNode | undefined {
  const path = systemPath()
    .split(delimiter)
    .map((dir) => join(dir, 'node'))
    .find((file) => existsSync(file));
  if (!path) return undefined;
  const version = execFileSync(path, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim();
  return { path, version, tooOld: nodeVersion.tooOld(version) };
}

/** Variables a login shell has; everything npm, vitest and the suite set for themselves is left out. */
const USER_VARIABLES = ['HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LC_ALL', 'TERM', 'TMPDIR', 'TZ'];

/** A user's environment: their variables, the system PATH, and `extra`. */
export function userEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = { PATH: systemPath() };
  for (const name of USER_VARIABLES) if (process.env[name] !== undefined) env[name] = process.env[name]!;
  return { ...env, ...extra };
}

/**
 * The directories where npx keeps its install of the local package at `dir` (libnpmexec: the first 16 hex digits
 * of the SHA-512 of the directory's absolute path, under the npm cache's _npx), for the path and its real path.
 */
export function npxInstalls(dir: string, cache = join(homedir(), '.npm')): string[] {
  const paths = [...new Set([dir, realpathSync(dir)])];
  return paths.map((path) => join(cache, '_npx', createHash('sha512').update(path).digest('hex').slice(0, 16)));
}

/**
 * Copies the working tree as a clone of it would be, with the uncommitted changes: tracked and untracked files,
 * without what .gitignore leaves out (node_modules, dist, data).
 */
export function copyWorkingTree(to: string): void {
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20 })
    .split('\0')
    .filter(Boolean);
  for (const file of files) {
    const from = join(ROOT, file);
    if (!existsSync(from) || !lstatSync(from).isFile()) continue; // deleted in the working tree, or a submodule
    mkdirSync(dirname(join(to, file)), { recursive: true });
    cpSync(from, join(to, file));
  }
}
