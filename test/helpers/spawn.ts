import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * The one way tests run TypeScript in a child process: this Node (`process.execPath`, the project's own line) with
 * tsx as the loader, so a child runs the current sources with no build step. The package's compiled CLI
 * (dist/bin/occupancy-sync.js) is exercised by the package test (test/package/), never here.
 */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The CLI's entry point in the sources. */
export const CLI_SOURCE = fileURLToPath(new URL('../../bin/occupancy-sync.ts', import.meta.url));

/** tsx's loader by absolute URL: a bare `tsx` would be resolved from the child's working directory. */
const TSX = pathToFileURL(fileURLToPath(new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url))).href;

/** Node arguments that run the TypeScript file `script` with `args`. */
export function tsNodeArgs(script: string, ...args: string[]): string[] {
  return ['--import', TSX, script, ...args];
}

/** Node arguments that run `occupancy-sync <args>` from the sources. */
export function cliArgs(...args: string[]): string[] {
  return tsNodeArgs(CLI_SOURCE, ...args);
}
