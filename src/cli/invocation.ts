import { basename } from 'node:path';

/** True when this module runs from the TypeScript sources (a clone), not from the package's compiled dist/. */
const FROM_SOURCES = import.meta.url.endsWith('.ts');

/**
 * How to spell this program in a hint so that it works when pasted: `npx occupancy-sync` in a clone (the sources
 * run: `npm run demo`, `npx occupancy-sync`), where the bare name is not on PATH, and whenever npx started it;
 * `occupancy-sync` when it was started through its installed command (global or a project's node_modules/.bin).
 */
export function invocation(
  argv: readonly string[] = process.argv,
  env: Readonly<Record<string, string | undefined>> = process.env,
  fromSources = FROM_SOURCES,
): string {
  if (fromSources || env.npm_lifecycle_event === 'npx') return 'npx occupancy-sync';
  return basename(argv[1] ?? '') === 'occupancy-sync' ? 'occupancy-sync' : 'npx occupancy-sync';
}
