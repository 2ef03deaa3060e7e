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

/**
 * Text on its way out, with every hint spelled `spelling`. Messages from every layer write a command as
 * `` `occupancy-sync <command>` `` (backticks), and help examples put it at the start of a line (`$ occupancy-sync
 * sync`, `1. occupancy-sync webhook ...`, after `NAME=value` settings); only the CLI knows how it was started, so it
 * spells them here, where text leaves the program, instead of every layer asking. `commands` are the command names:
 * a line that starts with the bare word otherwise (prose) is left alone.
 */
export function spellHints(text: string, spelling: string, commands: readonly string[]): string {
  if (spelling === 'occupancy-sync' || !text.includes('occupancy-sync')) return text;
  const names = commands.map((c) => c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');
  const example = new RegExp(`^([ \\t]*(?:\\$ |\\d+\\. )?(?:[A-Za-z_][A-Za-z0-9_]*=\\S* )*)occupancy-sync(?= (?:${names})\\b| --?[a-zA-Z])`, 'gm');
  return text.replace(/`((?:[A-Za-z_][A-Za-z0-9_]*=\S* )*)occupancy-sync(?=[\s`])/g, `\`$1${spelling}`).replace(example, `$1${spelling}`);
}
