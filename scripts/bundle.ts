/**
 * The package's command as a bundle (part of `npm run build`, after the compiler): bin/occupancy-sync.ts and what it
 * imports, our code and the pure-JavaScript dependencies, bundled by esbuild into dist/bin/occupancy-sync.js with one
 * chunk per dynamic import beside it, so a command loads only what it uses.
 *
 * Why: a cron `sync` with little to do spends most of its CPU loading modules (resolving, reading and compiling some
 * 400 files), not syncing (issue 25, docs/performance.md "Steady state"). The library entries (`exports`) stay the
 * compiler's one-file-per-module output: importers bundle or load them as they like.
 *
 * Two rewrites keep the bundle equal to the compiled modules:
 * - `import.meta.url` in our modules becomes the URL of the module's compiled copy under dist/ (which the package
 *   still ships), so every `new URL('../x', import.meta.url)` finds the runtime files where it always did. All the
 *   chunks sit in dist/bin/, the entry's directory, so one relative path serves every chunk.
 * - db/schema/drizzle.ts loads drizzle through `createRequire` (drizzle's ESM build costs a package.json read per
 *   file); here its `require` becomes the bundler's, so drizzle is bundled and each dialect still loads lazily.
 */
import { readFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { build, type Plugin } from 'esbuild';

/**
 * Packages the bundle leaves to node_modules, each for a reason: better-sqlite3 is a native addon; pino starts its
 * transports (pino-pretty) as worker threads by file path; graphile-worker (`serve` only) reads its own migration
 * files; prom-client and OpenTelemetry load only when metrics or traces are asked for; yaml only for a definitions
 * file, through `createRequire`.
 */
export const EXTERNAL = [
  'better-sqlite3',
  'pino',
  'pino-pretty',
  'graphile-worker',
  'prom-client',
  '@opentelemetry/*',
  'yaml',
];

/** The line of db/schema/drizzle.ts the bundle replaces (see above); the build fails if it is not found. */
const DRIZZLE_REQUIRE = 'const require = createRequire(import.meta.url ?? `${process.cwd()}/`);';

function rewrites(root: string, outDir: string): Plugin {
  return {
    name: 'occupancy-sync-paths',
    setup(b) {
      b.onLoad({ filter: /\.(ts|cjs)$/ }, async (args) => {
        if (args.path.split(sep).includes('node_modules')) return undefined;
        let contents = await readFile(args.path, 'utf8');
        const source = relative(root, args.path);
        if (source === join('db', 'schema', 'drizzle.ts')) {
          if (!contents.includes(DRIZZLE_REQUIRE)) throw new Error(`scripts/bundle.ts: ${source} no longer holds \`${DRIZZLE_REQUIRE}\`: update DRIZZLE_REQUIRE`);
          contents = contents.replace(DRIZZLE_REQUIRE, '');
        }
        const compiled = relative(outDir, join(dirname(outDir), source.replace(/\.ts$/, '.js'))).split(sep).join('/');
        contents = contents.replaceAll('import.meta.url', `new URL(${JSON.stringify(compiled)}, import.meta.url).href`);
        return { contents, loader: args.path.endsWith('.ts') ? 'ts' : 'js' };
      });
    },
  };
}

/** Bundles the command into `<dist>/bin`; returns the number of files written. */
export async function bundleCli(root: string, dist: string): Promise<number> {
  const outDir = join(dist, 'bin');
  const result = await build({
    absWorkingDir: root,
    entryPoints: [join(root, 'bin/occupancy-sync.ts')],
    outdir: outDir,
    entryNames: '[name]',
    chunkNames: '[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    external: EXTERNAL,
    // CommonJS dependencies in an ES module bundle call `require` for Node's built-ins.
    banner: { js: "import { createRequire as __occupancySyncRequire } from 'node:module';\nconst require = __occupancySyncRequire(import.meta.url);" },
    plugins: [rewrites(root, outDir)],
    metafile: true,
    logLevel: 'warning',
  });
  return Object.keys(result.metafile.outputs).length;
}
