/**
 * The package as a user gets it: `npm pack`, installed with `--omit=dev` into an empty directory, then used with no
 * tsx, no TypeScript loader and no build tools. Slow (a pack and two installs), so it is not in `npm test`:
 * `npm run test:package` runs it, and .ci/run does on a third Node line.
 *
 * The npm used: `npm` on PATH, and also the npm-cli.js named by OCCUPANCY_NPM_CLI (.ci/run installs the current
 * npm there), run with this Node.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ASSET_DIRS, BUILT_DEFINITIONS, assetFiles } from '../../scripts/build.ts';
import { ROOT } from '../support/process.ts';
import { DIALECTS, freshDatabase, openTestStore } from '../support/databases.ts';
import { startSandbox } from '../../src/sandbox/index.ts';
import { DAY, againstTruth, childEnv, dbRows } from '../sync/helpers.ts';
import { systemNode, systemPath } from '../support/newcomer.ts';
import { tempDir } from '../support/tmp.ts';

const run = promisify(execFile);
const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; exports: Record<string, unknown> };
/** Children run on this Node: the line under test comes first on PATH, for `#!/usr/bin/env node` too. */
const ENV = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`, NO_COLOR: '1' };
const SUBPATHS = Object.keys(PKG.exports).filter((key) => key !== './package.json').map((key) => `occupancy-sync${key.slice(1)}`);
/** Modules the signature verifier must not pull in: a receiver written by a user imports only the verifier. */
/** Dependencies the command's bundle holds (scripts/bundle.ts): an installed `sync` must not load them from node_modules. */
const BUNDLED = ['commander', 'zod', 'graphql', 'undici', 'drizzle-orm', 'postgres'];
const HEAVY = ['pino', 'pino-pretty', 'zod', 'better-sqlite3', 'postgres', 'drizzle-orm', 'undici', 'graphql', 'prom-client'];

interface Npm {
  name: string;
  command: string;
  args: string[];
}

const npms: Npm[] = [{ name: 'npm on PATH', command: 'npm', args: [] }];
if (process.env.OCCUPANCY_NPM_CLI) npms.push({ name: 'OCCUPANCY_NPM_CLI', command: process.execPath, args: [process.env.OCCUPANCY_NPM_CLI] });

const work = tempDir('package-');
let tarball = '';

let oldNodeInstall: Promise<string> | undefined;
/**
 * A Node older than every supported line: the system PATH's when it is one (Node 20 on the development machine),
 * otherwise node@20 from the npm registry.
 */
function oldNode(): Promise<string> {
  oldNodeInstall ??= (async () => {
    const system = systemNode();
    if (system?.tooOld) return system.path;
    const dir = join(work.dir, 'old-node');
    mkdirSync(dir);
    writeFileSync(join(dir, 'package.json'), '{ "name": "old-node", "private": true, "allowScripts": { "node": true } }\n');
    await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', 'node@20'], { cwd: dir, env: ENV, maxBuffer: 64 << 20 });
    return join(dir, 'node_modules/node/bin/node');
  })();
  return oldNodeInstall;
}

beforeAll(async () => {
  // prepack builds dist/ from the sources first.
  await run('npm', ['pack', '--pack-destination', work.dir], { cwd: ROOT, env: ENV, maxBuffer: 64 << 20 });
  tarball = join(work.dir, readdirSync(work.dir).find((name) => name.endsWith('.tgz'))!);
}, 300_000);

afterAll(() => work.remove());

describe('the packed tarball', () => {
  it('holds the compiled code, its runtime files, LICENSE and docs, and no sources, tests, bench or CI', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball], { maxBuffer: 64 << 20 });
    const files = stdout.split('\n').filter(Boolean).map((f) => f.replace(/^package\//, ''));
    expect(files).toContain('LICENSE');
    expect(files).toContain('README.md');
    expect(files).toContain('bin/occupancy-sync.cjs');
    expect(files).toContain('dist/bin/occupancy-sync.js');
    expect(files).toContain('dist/src/index.d.ts');
    for (const dir of ASSET_DIRS) for (const asset of assetFiles(dir)) expect(files).toContain(`dist/${asset}`);
    expect(files).toContain(`dist/${BUILT_DEFINITIONS}`);
    // The command (bin/occupancy-sync.cjs, plain JavaScript) is the one file outside dist/ that runs.
    const stray = files.filter(
      (f) => (/^(src|test|bench|scripts|\.ci|bin|jobs|db)\//.test(f) && f !== 'bin/occupancy-sync.cjs') || /\.test\.|tsconfig|vitest|drizzle\.config|\.npmrc/.test(f),
    );
    expect(stray).toEqual([]);
  });
});

describe("the README's install lines", () => {
  it('run as printed in a clone (npm pack, npm install -g of the tarball) give the occupancy-sync command', async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const fence = readme.indexOf('```sh\n', readme.indexOf('Against the real platform, install the package'));
    const block = readme.slice(fence + 6, readme.indexOf('```', fence + 6)).split('\n');
    // The lines before the configuration (`cp .env.example .env && $EDITOR .env`, then commands against the live API).
    const install = block.map((l) => l.replace(/\s+#\s.*$/, '').trim()).filter(Boolean);
    const lines = install.slice(0, install.findIndex((l) => l.startsWith('cp ')));
    expect(lines.length, 'the install lines of the README').toBeGreaterThan(0);
    const prefix = join(work.dir, 'global');
    const packed = () => readdirSync(ROOT).filter((name) => /^occupancy-sync-.*\.tgz$/.test(name));
    for (const name of packed()) rmSync(join(ROOT, name));
    try {
      // npm_config_prefix keeps the global install in a temporary directory, as a user's own prefix would.
      for (const line of lines) await run('sh', ['-c', line], { cwd: ROOT, env: { ...ENV, npm_config_prefix: prefix }, maxBuffer: 64 << 20 });
    } finally {
      for (const name of packed()) rmSync(join(ROOT, name));
    }
    const { stdout } = await run(join(prefix, 'bin/occupancy-sync'), ['--version'], { env: ENV });
    expect(stdout.trim()).toBe(PKG.version);
  }, 300_000);
});

describe.each(npms)('installed with --omit=dev by $name', (npm) => {
  let dir = '';
  let npmVersion = '';

  beforeAll(async () => {
    dir = join(work.dir, npm.name.replace(/\W+/g, '-'));
    mkdirSync(dir);
    npmVersion = (await run(npm.command, [...npm.args, '--version'], { env: ENV })).stdout.trim();
    writeFileSync(join(dir, 'package.json'), '{ "name": "consumer", "private": true, "type": "module" }\n');
    await run(npm.command, [...npm.args, 'install', '--omit=dev', '--no-audit', '--no-fund', tarball], { cwd: dir, env: ENV, maxBuffer: 64 << 20 });
  }, 300_000);

  it('installs no TypeScript tooling and runs `occupancy-sync --version`', async () => {
    const installed = readdirSync(join(dir, 'node_modules'));
    for (const tool of ['tsx', 'esbuild', 'typescript', 'vitest', 'node']) expect(installed, `${tool} (npm ${npmVersion})`).not.toContain(tool);
    const { stdout } = await run(join(dir, 'node_modules/.bin/occupancy-sync'), ['--version'], { cwd: dir, env: ENV });
    expect(stdout.trim()).toBe(PKG.version);
  });

  it('on a Node too old for it, the command and the compiled entry systemd units start say so in one line, exit 78', async () => {
    const node = await oldNode();
    const version = (await run(node, ['-p', 'process.versions.node'])).stdout.trim();
    const line =
      `occupancy-sync: Node.js v${version} is too old: occupancy-sync needs Node.js 22 (22.19 or later), 24 or 26. Fix: install one of ` +
      "them (nodejs.org, or your system's package manager) and start occupancy-sync with it (first on PATH, or the node named in a " +
      "systemd unit's ExecStart=)\n";
    // The command as a user starts it (`#!/usr/bin/env node` finds the old Node first on PATH), and the entry the
    // systemd units in deploy/ name, whose import of node:module once failed on Node 20 before any line ran.
    const env = { ...ENV, PATH: `${dirname(node)}${delimiter}${systemPath()}` };
    const starts: Array<[string, string[]]> = [
      [join(dir, 'node_modules/.bin/occupancy-sync'), ['--version']],
      [node, [join(dir, 'node_modules/occupancy-sync/dist/bin/occupancy-sync.js'), 'sync']],
    ];
    for (const [file, args] of starts) {
      const result = await run(file, args, { cwd: dir, env }).then(
        (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
        (e: { code: number; stdout: string; stderr: string }) => e,
      );
      expect(result, `${file} ${args.join(' ')} (Node ${version})`).toMatchObject({ code: 78, stdout: '', stderr: line });
    }
  }, 300_000);

  it('runs the demo on SQLite, the embedded default, with no install script having run', async () => {
    const { stdout } = await run(join(dir, 'node_modules/.bin/occupancy-sync'), ['demo', '--days', '1', '--database', `file:${join(dir, 'demo.db')}`], {
      cwd: dir,
      env: ENV,
    });
    expect(stdout).toMatch(/demo: .*0 failed/);
    expect(stdout).toMatch(/customer [0-9a-f-]{36}: \d+ buildings, \d+ floors, \d+ floor spaces, [\d,]+ observations/);
    expect(existsSync(join(dir, 'node_modules/better-sqlite3/build'))).toBe(false);
  }, 120_000);

  it.each(DIALECTS)(
    'adapts to the sandbox API variant v2 with the shipped example definitions beside the installed tool, no change to the package (%s)',
    async (dialect) => {
      // The oracle is the repository's sandbox; everything that syncs is the installed package's bin.
      const sandbox = await startSandbox({ apiVariant: 'v2', seed: 11, customers: 1, dataStart: Math.floor((Date.now() - DAY) / 300_000) * 300_000, lateArrivalMaxMs: 0 });
      const db = await freshDatabase(dialect, 'package-adapt');
      const bin = join(dir, 'node_modules/.bin/occupancy-sync');
      const plain = join(dir, `plain-${dialect}`);
      const adapted = join(dir, `adapted-${dialect}`);
      mkdirSync(plain);
      // The worked example as the package ships it (docs/examples/api-v2), copied into the working directory under
      // the default name: no setting needed.
      cpSync(join(dir, 'node_modules/occupancy-sync/docs/examples/api-v2'), adapted, { recursive: true });
      const env = { ...ENV, ...childEnv(sandbox, db.url, { LOG_LEVEL: 'warn', SYNC_INITIAL_HISTORY: '2d', SYNC_SETTLE_DELAY: '1s', SYNC_PAGE_SIZE: '250' }) };
      const cli = (args: string[], cwd: string) =>
        run(bin, args, { cwd, env }).then(
          (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
          (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
        );
      try {
        const before = await cli(['check'], plain);
        expect(before.code).toBe(1);
        expect(before.stdout).toContain('jobs/occupancy.graphql:3:3: Cannot query field "occupancy" on type "Query".');
        expect(before.stdout).toContain('src/webhooks/graphql/registerWebhook.graphql:3:3: Cannot query field "registerWebhook" on type "Mutation".');
        const check = await cli(['check'], adapted);
        expect(check.stdout).toContain(`definitions: ${join(adapted, 'occupancy-sync.streams.yaml')}`);
        expect(check.code).toBe(0);
        // The sync also says, through a module hook, every file it loads from node_modules: the command is bundled
        // (scripts/bundle.ts), so the dependencies it bundles must not be among them.
        const loadedFile = join(dir, `loaded-${dialect}.txt`);
        const hook = join(dir, 'loaded-hook.mjs');
        writeFileSync(
          hook,
          "import { registerHooks } from 'node:module';\nimport { appendFileSync } from 'node:fs';\n" +
            'registerHooks({ resolve(s, c, next) { const r = next(s, c); if (r.url.includes("/node_modules/")) appendFileSync(process.env.LOADED_FILE, r.url + "\\n"); return r; } });\n',
        );
        const sync = await run(bin, ['sync'], { cwd: adapted, env: { ...env, NODE_OPTIONS: `--import=${hook}`, LOADED_FILE: loadedFile } }).then(
          (r) => ({ code: 0, stderr: r.stderr }),
          (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
        );
        // v2 has no floors or floorSpaces query: the built-in streams declared ifOffered are skipped, one warning each.
        expect(sync.stderr.split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual([
          expect.stringMatching(/^stream floors skipped: the API offers no floors query/),
          expect.stringMatching(/^stream floor-spaces skipped: the API offers no floorSpaces query/),
        ]);
        expect(sync.code).toBe(0);
        const loaded = new Set(
          readFileSync(loadedFile, 'utf8')
            .split('\n')
            .filter((url) => url && !url.includes('/node_modules/occupancy-sync/'))
            .map((url) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)![1]!),
        );
        expect([...loaded].filter((name) => BUNDLED.includes(name))).toEqual([]);
        expect(loaded).toContain('pino');
        const store = await openTestStore(db);
        try {
          const customer = sandbox.customers[0]!.id;
          const held = againstTruth(await dbRows(store, customer), sandbox, customer, (await store.getState(customer, 'occupancy'))!.watermark!, 0);
          expect(held.truth.length).toBeGreaterThan(1000);
          expect(held.stored).toEqual(held.truth);
          expect(held.strays).toEqual([]);
        } finally {
          await store.close();
        }
      } finally {
        await sandbox.close();
        await db.drop();
      }
    },
    120_000,
  );

  it('imports every entry from plain Node, and the signature verifier loads none of the heavy modules', async () => {
    const probe = join(dir, 'probe.mjs');
    writeFileSync(
      probe,
      `import { registerHooks } from 'node:module';
const seen = new Set();
registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); seen.add(r.url); return r; } });
const entry = process.argv[2];
const m = await import(entry);
console.log(JSON.stringify({ exports: Object.keys(m).sort(), types: Object.fromEntries(Object.entries(m).map(([k, v]) => [k, typeof v])), loaded: [...seen] }));
`,
    );
    const load = async (entry: string) => JSON.parse((await run(process.execPath, [probe, entry], { cwd: dir, env: ENV })).stdout) as {
      exports: string[];
      types: Record<string, string>;
      loaded: string[];
    };
    const main = await load('occupancy-sync');
    for (const name of ['verifySignature', 'openStore', 'createApiClient', 'createWebhookHandler', 'runOnce', 'runSync', 'resolveConfig', 'createLogger']) {
      expect(main.types[name], name).toBe('function');
    }
    for (const name of ['FakeClock', 'startSandbox', 'memoryLogger']) expect(main.exports, `${name} is a test helper`).not.toContain(name);
    for (const subpath of SUBPATHS) expect((await load(subpath)).exports.length, subpath).toBeGreaterThan(0);

    const signature = await load('occupancy-sync/signature');
    expect(signature.types.verifySignature).toBe('function');
    const heavy = signature.loaded.filter((url) => HEAVY.some((name) => url.includes(`/node_modules/${name}/`)));
    expect(heavy).toEqual([]);
    expect(signature.loaded.some((url) => url.includes('tsx'))).toBe(false);
  }, 60_000);

  it('type-checks a TypeScript consumer under strict and exactOptionalPropertyTypes', async () => {
    const consumer = join(dir, 'consumer.ts');
    writeFileSync(
      consumer,
      `import { resolveConfig, createLogger, ConfigError, type Config } from 'occupancy-sync';
import { verifySignature, signatureHeader, SIGNATURE_HEADER, SignatureVerificationError } from 'occupancy-sync/signature';
import { openStore, type Store, type SyncState } from 'occupancy-sync/store';
import { createApiClient, loadDocument, type ApiClient } from 'occupancy-sync/client';
import { createWebhookHandler, type WebhookOutcome } from 'occupancy-sync/webhooks';
import { runOnce, streams, type SyncReport } from 'occupancy-sync/sync';
import { FakeClock, startSandbox } from 'occupancy-sync/testing';

const secret = 'x'.repeat(64);
const body = '{"Id":"1"}';
const header: string = signatureHeader(secret, body, 1_767_225_600);
const verified = verifySignature({ header, rawBody: body, secrets: [secret], now: new FakeClock(1_767_225_600_000) });
const index: number = verified.secretIndex;
const reason = (e: unknown) => (e instanceof SignatureVerificationError ? e.reason : undefined);

export async function embed(env: Record<string, string | undefined>): Promise<SyncReport> {
  let config: Config;
  try {
    config = resolveConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) throw new Error(error.message, { cause: error });
    throw error;
  }
  const store: Store = await openStore(config.database);
  await store.migrate();
  const states: SyncState[] = await store.listStates();
  const client: ApiClient = createApiClient({ baseUrl: 'https://api.example.com', apiKey: 'k', apiSecret: 's' });
  await client.close();
  const handler = createWebhookHandler({ store, customers: config.customers, onOutcome: (o: WebhookOutcome) => void o.reason });
  void handler.inFlight;
  void loadDocument;
  void startSandbox;
  void states;
  try {
    return await runOnce({ config, store, logger: createLogger({ level: 'warn' }), customers: config.customers, streams });
  } finally {
    await store.close();
  }
}
void [index, reason, SIGNATURE_HEADER];
`,
    );
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          exactOptionalPropertyTypes: true,
          noUncheckedIndexedAccess: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2023',
          lib: ['es2023'],
          noEmit: true,
          types: ['node'],
          typeRoots: [join(ROOT, 'node_modules/@types')],
        },
        files: ['consumer.ts'],
      }),
    );
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
    const result = await run(process.execPath, [tsc, '-p', dir], { cwd: dir, env: ENV }).catch((error: { stdout: string }) => error);
    expect(result.stdout).toBe('');
  }, 120_000);
});
