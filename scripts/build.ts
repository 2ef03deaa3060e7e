/**
 * `npm run build` (and `prepack`): compiles src/, jobs/ and bin/ to dist/ with declarations, then copies the files
 * the code reads at run time next to the compiled modules, at the same relative paths (every module finds them with
 * `new URL('../x', import.meta.url)`, so the layout under dist/ must mirror the sources).
 *
 * Runtime assets: every file that is not TypeScript under src/ and jobs/ (GraphQL documents, the schema and the
 * built-in stream definitions), and db/migrations/ (drizzle's SQL and journal) and db/views/ (the readable copy of
 * the reporting views); and the built-in definitions as JSON (BUILT_DEFINITIONS).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { bundleCli } from './bundle.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist');
export const ASSET_DIRS = ['src', 'jobs', 'db/migrations', 'db/views'];
/** Written by the build from jobs/streams.yaml (see jobs/index.ts), relative to dist/. */
export const BUILT_DEFINITIONS = 'jobs/streams.json';

/** Files under `dir` (relative to the root) that the compiler does not emit. */
export function assetFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (abs: string) => {
    for (const name of readdirSync(abs)) {
      const path = join(abs, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (!name.endsWith('.ts')) out.push(relative(ROOT, path));
    }
  };
  walk(join(ROOT, dir));
  return out.sort();
}

async function build(): Promise<void> {
  rmSync(DIST, { recursive: true, force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json')], { stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
  let copied = 0;
  for (const dir of ASSET_DIRS) {
    for (const file of assetFiles(dir)) {
      cpSync(join(ROOT, file), join(DIST, file), { force: true });
      copied++;
    }
  }
  // The built-in definitions also as JSON (which is YAML): the CLI reads them without loading the YAML parser.
  const definitions = parse(readFileSync(join(ROOT, 'jobs/streams.yaml'), 'utf8')) as unknown;
  writeFileSync(join(DIST, BUILT_DEFINITIONS), `${JSON.stringify(definitions, null, 2)}\n`);
  copied++;
  const bundled = await bundleCli(ROOT, DIST);
  chmodSync(join(DIST, 'bin/occupancy-sync.js'), 0o755);
  console.log(`build: dist/ compiled, ${copied} runtime files copied from ${ASSET_DIRS.join(', ')}, the command bundled into dist/bin/ (${bundled} files)`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await build();
