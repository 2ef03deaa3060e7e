import { basename } from 'node:path';

/**
 * How to spell this program in a hint so that it works when pasted: `occupancy-sync` when it was started through its
 * installed command (global or a project's node_modules/.bin), `npx occupancy-sync` when it runs from a clone
 * (`npm run demo`), where the bare name is not on PATH.
 */
export function invocation(argv: readonly string[] = process.argv): string {
  const script = argv[1] ?? '';
  return basename(script) === 'occupancy-sync' ? 'occupancy-sync' : 'npx occupancy-sync';
}
