import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeSandbox } from '../../src/cli/commands/sandbox.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { runMain } from '../support/cli.ts';
import { ROOT, spawnProcess } from '../support/process.ts';
import { copyWorkingTree, npxInstalls, systemNode, userEnv } from '../support/newcomer.ts';
import { tempDir } from '../support/tmp.ts';
import { DAY } from '../sync/helpers.ts';

/**
 * The README is the user's manual: its command lines must work exactly as printed, for a newcomer. A fresh copy of
 * this working tree (what `git clone` gives, with the uncommitted changes) is installed once, and every line runs in
 * it through `sh -c`, as typed, with the user's environment: the system PATH (npm and node as the machine has them,
 * Node 20 on the development machine), none of the node_modules/.bin directories `npm test` puts first. The quick
 * start's `npm install && npm run demo`, the demo's "Next:" lines, and the "Try every command against the sandbox"
 * block in order, after the .env the sandbox prints. npm installs from its cache (npm_config_prefer_offline).
 */

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** The lines of the first ```sh block after `heading`. */
function block(heading: string): string[] {
  const start = README.indexOf(heading);
  expect(start, heading).toBeGreaterThan(0);
  const fence = README.indexOf('```sh\n', start);
  const end = README.indexOf('```', fence + 6);
  return README.slice(fence + 6, end).split('\n').map((l) => l.trim()).filter(Boolean);
}

/** A README line without its trailing `# comment`, which the shell would ignore too. */
const command = (line: string) => line.replace(/\s+#\s.*$/, '');

const clone = tempDir('readme-clone-');
const system = systemNode();
const env = userEnv({ npm_config_prefer_offline: 'true' });

interface Ran {
  line: string;
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `line` as a shell would, in the clone, with the user's environment. */
async function sh(line: string, timeoutMs = 120_000): Promise<Ran> {
  const child = spawnProcess('sh', ['-c', line], { cwd: clone.dir, env, name: line });
  const exit = await child.exit(timeoutMs);
  return { line, code: exit.code, stdout: child.stdout(), stderr: child.stderr() };
}

const show = (r: Ran) => `$ ${r.line}\n(exit ${r.code})\n${r.stdout}${r.stderr}`.slice(-4000);

const quickStart = block('## Quick start').map(command).find((line) => line.includes('npm run demo'))!;
let beforeInstall: Ran;
let legacyNpx: Ran;
let legacyInstallLeftNoLink = false;
let install: Ran;

beforeAll(async () => {
  copyWorkingTree(clone.dir);
  // Before `npm install`: the command itself says what to do, whichever Node the system has.
  beforeInstall = await sh('node bin/occupancy-sync.cjs --version');
  // What an earlier version left behind: its command pointed into an unbuilt dist/, so the first `npx
  // occupancy-sync` installed the clone in npx's cache with no link, and npx kept reusing that install.
  const manifest = join(clone.dir, 'package.json');
  const text = readFileSync(manifest, 'utf8');
  writeFileSync(manifest, text.replace('"occupancy-sync": "bin/occupancy-sync.cjs"', '"occupancy-sync": "dist/bin/occupancy-sync.js"'));
  legacyNpx = await sh('npx occupancy-sync --version');
  writeFileSync(manifest, text);
  legacyInstallLeftNoLink = npxInstalls(clone.dir).some(
    (dir) => existsSync(join(dir, 'node_modules/occupancy-sync')) && !existsSync(join(dir, 'node_modules/.bin/occupancy-sync')),
  );
  install = await sh(quickStart, 600_000);
}, 900_000);

afterAll(() => {
  // npx's install of the clone, as a user's npx cache would keep it: left here, it would point at nothing.
  for (const dir of npxInstalls(clone.dir)) rmSync(dir, { recursive: true, force: true });
  clone.remove();
});

describe('README, run as printed from a fresh clone with the system PATH', () => {
  it(`before npm install, the command says to run it (system Node v${system?.version ?? 'none'})`, () => {
    expect(beforeInstall.code, show(beforeInstall)).toBe(78);
    expect(beforeInstall.stdout).toBe('');
    expect(beforeInstall.stderr.trim().split('\n'), show(beforeInstall)).toHaveLength(1);
    expect(beforeInstall.stderr).toMatch(/^occupancy-sync: .*Fix: run `npm install`/);
  });

  it('`npm install && npm run demo` works, with no engine warnings; a system Node too old gets one line on which Node runs what', () => {
    expect(quickStart).toBe('npm install && npm run demo');
    expect(install.code, show(install)).toBe(0);
    const output = `${install.stdout}${install.stderr}`;
    expect(output).not.toMatch(/EBADENGINE|npm warn/i);
    expect(install.stdout).toMatch(/^demo: .*\b0 failed/m);
    const notices = output.split('\n').filter((line) => line.startsWith('occupancy-sync: npm runs on the system Node'));
    if (system?.tooOld) {
      expect(notices, show(install)).toEqual([expect.stringContaining(`Node.js v${system.version}, too old for occupancy-sync`)]);
      expect(notices[0]).toMatch(/npm scripts and `npx occupancy-sync` run on its own Node\.js v2[2-9]\.\d+\.\d+ \(node_modules\/node\)/);
    } else {
      expect(notices).toEqual([]);
    }
  });

  it('`npx occupancy-sync --version` works right after npm install, also where an earlier npx try left an install without the command', async () => {
    // The state npx was in: its install of the clone had no link, and "not found" would have been the answer forever.
    expect(legacyNpx.code, show(legacyNpx)).not.toBe(0);
    expect(legacyInstallLeftNoLink, show(legacyNpx)).toBe(true);
    expect(install.stdout).toMatch(/^occupancy-sync: removed .*_npx.*, an install of this clone an earlier `npx occupancy-sync` left without its command/m);
    const version = await sh('npx occupancy-sync --version');
    expect(version.code, show(version)).toBe(0);
    expect(version.stdout.trim()).toBe(VERSION);
  });

  it('the demo\'s "Next:" lines run as printed', async () => {
    const next = install.stdout.slice(install.stdout.indexOf('\nNext:\n') + 7).split('\n').map((l) => l.trim());
    const lines = next.slice(0, next.indexOf(''));
    expect(lines.length, install.stdout).toBeGreaterThanOrEqual(2);
    for (const line of lines) {
      expect(line).toMatch(/^DATABASE_URL=file:\.\/data\/demo\.db npx occupancy-sync /);
      const result = await sh(line);
      expect(result.code, show(result)).toBe(0);
      expect(result.stdout.length, show(result)).toBeGreaterThan(0);
    }
  }, 300_000);

  describe('"Try every command against the sandbox"', () => {
    let sandbox: Sandbox;
    beforeAll(async () => {
      sandbox = await startSandbox({ seed: 31, customers: 1, dataStart: Math.floor((Date.now() - 8 * DAY) / 300_000) * 300_000 });
      // "put the .env block it prints into .env first"
      const printed = describeSandbox(sandbox);
      const envBlock = printed.slice(printed.indexOf('Example .env')).split('\n\n')[0]!.split('\n').slice(1);
      expect(envBlock.map((l) => l.split('=')[0])).toEqual(['API_BASE_URL', 'API_KEY', 'API_SECRET', 'CUSTOMER_ID', 'CUSTOMER_NAME']);
      writeFileSync(join(clone.dir, '.env'), `${envBlock.join('\n')}\n`);
    });
    afterAll(async () => {
      await sandbox?.close();
    });

    it('every line runs as printed, in order, and exits 0', async () => {
      const lines = block('### Try every command against the sandbox');
      expect(lines.length).toBeGreaterThan(10);
      for (const line of lines) {
        expect(line.startsWith('npx occupancy-sync '), line).toBe(true);
        const result = await sh(line);
        expect(result.code, show(result)).toBe(0);
        // Every command says something; with --html alone the report's confirmation goes to stderr.
        expect(result.stdout.length + result.stderr.length, line).toBeGreaterThan(0);
        const html = /--html (\S+)/.exec(line);
        if (html) expect(readFileSync(join(clone.dir, html[1]!), 'utf8'), line).toMatch(/^<!doctype html>/i);
      }
    }, 600_000);
  });

  it.runIf(system?.tooOld)('on a system Node too old for the CLI, the command runs itself on the clone\'s Node, and a Ctrl-C reaches it once', async () => {
    const version = await sh('node bin/occupancy-sync.cjs --version');
    expect(version.code, show(version)).toBe(0);
    expect(version.stdout.trim()).toBe(VERSION);
    // A terminal's Ctrl-C goes to its foreground process group: `setsid` makes the command lead one, as a shell's job.
    // Had the relaunched CLI been in that group too, it would get the signal twice and stop at once ("now").
    const child = spawnProcess('setsid', [system!.path, 'bin/occupancy-sync.cjs', 'sandbox', '--port', '0'], { cwd: clone.dir, env, name: 'sandbox on the system Node' });
    const [, url] = await child.waitForLine(/listening on (http:\/\/\S+)/, 'the sandbox to listen', { timeoutMs: 60_000 });
    // Two signals that arrive together often merge into one, so the exit alone would not tell: the relaunched CLI
    // (the launcher's child) must be outside the launcher's process group.
    const launcher = child.process.pid!;
    const [relaunched] = readFileSync(`/proc/${launcher}/task/${launcher}/children`, 'utf8').trim().split(/\s+/).map(Number);
    const group = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[2]);
    expect(group(launcher)).toBe(launcher);
    expect(group(relaunched!)).not.toBe(launcher);
    process.kill(-launcher, 'SIGINT');
    const exit = await child.exit(30_000);
    expect(exit, child.stdout() + child.stderr()).toEqual({ code: 0, signal: null });
    expect(child.stdout()).toContain('sandbox stopped');
    await expect(fetch(`${url}/api/v1/auth`, { method: 'POST' })).rejects.toThrow();
  }, 120_000);
});

describe('README commands table', () => {
  it('every command in it answers --help with examples', async () => {
    const table = README.slice(README.indexOf('## Commands'), README.indexOf('### Exit codes'));
    const commands = [...table.matchAll(/^\| `occupancy-sync ([a-z]+)(?: ([a-z]+)(?:\\\|[a-z|\\]+)?)?/gm)].map((m) => [m[1]!, ...(m[2] ? [m[2]] : [])]);
    expect(commands.length).toBeGreaterThan(12);
    for (const command of commands) {
      const result = await runMain([...command, '--help'], {});
      expect(result.code, command.join(' ')).toBe(0);
      expect(result.stdout, command.join(' ')).toContain('Examples:');
    }
  });
});
