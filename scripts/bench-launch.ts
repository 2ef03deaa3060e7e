/**
 * How `occupancy-sync` starts in a clone and in the installed package, as whole processes (issue 26: a clone works
 * right after `npm install`; the installed package's start stays as it was):
 *
 *   node --import tsx scripts/bench-launch.ts [--runs 15] [--builds 3] [--only TEXT]
 *
 * Sets up what it measures, from this working tree: a fresh clone (a copy, as test/cli/readme.test.ts makes)
 * installed with the system PATH, `npm run build` timed in it (what a `prepare` build would add to every install),
 * and the packed tarball installed with --omit=dev. Then, in rounds that rotate the order, each case as a child
 * process from spawn to exit: wall time and, from /usr/bin/time, the CPU time (user + system) of the process and
 * its children, which a machine busy with other work inflates far less. Medians.
 *
 * Cases, for `--help` and `status` (a migrated SQLite file):
 * - clone, sources through tsx (bin/occupancy-sync.cjs, the choice), with tsx's cache warm and empty (a fresh
 *   TMPDIR, as on the first run after a clone);
 * - clone, compiled dist/ (what the command would run had `prepare` built it);
 * - clone through `npx occupancy-sync` (npm on the system Node first), sources;
 * - installed package: the command (bin/occupancy-sync.cjs, loading dist/bin/occupancy-sync.js) against the
 *   package's command before it (that entry as it was, with its named import of enableCompileCache, written beside
 *   it), and that entry alone (which systemd units start), all on the project's Node;
 * - `node -e 0`, the floor, on that Node.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { copyWorkingTree, npxInstalls, userEnv } from '../test/support/newcomer.ts';
import { spawnProcess } from '../test/support/process.ts';
import { tempDir } from '../test/support/tmp.ts';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ''), process.argv[i + 1] ?? '');
const runs = Number(args.get('runs') ?? 15);
/** How many times `npm run build` is timed (0: not at all). */
const builds = Number(args.get('builds') ?? 3);
/** Only the cases whose label contains this text (and the floor): e.g. `package` for a closer look at those. */
const only = args.get('only');
const TIME = '/usr/bin/time';
if (!existsSync(TIME)) throw new Error(`${TIME} is needed for the CPU times (Debian: apt-get install time)`);

interface Sample {
  wall: number;
  cpu: number;
}

/** Runs `command args` in `cwd` to its end: wall ms from spawn to exit, and CPU ms as /usr/bin/time reports it. */
async function time(command: string, argv: string[], cwd: string, env: Record<string, string>): Promise<Sample> {
  const started = performance.now();
  const child = spawnProcess(TIME, ['-f', 'cpu %U %S', command, ...argv], { cwd, env, stdout: 'ignore', name: `${command} ${argv.join(' ')}` });
  const { code } = await child.exit(300_000);
  const wall = performance.now() - started;
  const match = /^cpu (\d+\.\d+) (\d+\.\d+)$/m.exec(child.stderr());
  if (code !== 0 || !match) throw new Error(`${command} ${argv.join(' ')} exited ${code}: ${child.stderr().slice(-1000)}`);
  return { wall, cpu: (Number(match[1]) + Number(match[2])) * 1000 };
}

async function step(what: string, command: string, argv: string[], cwd: string, env: Record<string, string>): Promise<number> {
  process.stderr.write(`${what} ...\n`);
  const started = performance.now();
  const child = spawnProcess(command, argv, { cwd, env, name: what });
  const { code } = await child.exit(900_000);
  if (code !== 0) throw new Error(`${what} exited ${code}: ${(child.stdout() + child.stderr()).slice(-2000)}`);
  return performance.now() - started;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

const clone = tempDir('launch-clone-');
const installed = tempDir('launch-package-');
const user = userEnv({ npm_config_prefer_offline: 'true', LOG_LEVEL: 'warn' });
try {
  copyWorkingTree(clone.dir);
  await step('npm install (fresh clone, system PATH)', 'npm', ['install', '--no-audit', '--no-fund'], clone.dir, user);
  const buildTimes: number[] = [];
  for (let i = 0; i < Math.max(builds, 1); i++) {
    const ms = await step(`npm run build (${i + 1} of ${Math.max(builds, 1)})`, 'npm', ['run', 'build'], clone.dir, user);
    if (builds > 0) buildTimes.push(ms);
  }
  await step('npm pack', 'npm', ['pack', '--pack-destination', installed.dir], clone.dir, user);
  const tarball = join(installed.dir, readdirSync(installed.dir).find((name) => name.endsWith('.tgz'))!);
  writeFileSync(join(installed.dir, 'package.json'), '{ "name": "consumer", "private": true }\n');
  await step('npm install --omit=dev <tarball>', 'npm', ['install', '--omit=dev', '--no-audit', '--no-fund', tarball], installed.dir, user);

  const node = join(clone.dir, 'node_modules/node/bin/node');
  const nodeVersion = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  const pkg = join(installed.dir, 'node_modules/occupancy-sync');
  // The package's command before bin/occupancy-sync.cjs: bin/occupancy-sync.ts of commit 571de44, compiled.
  const before = join(pkg, 'dist/bin/occupancy-sync-before.js');
  writeFileSync(
    before,
    "#!/usr/bin/env node\nimport { enableCompileCache } from 'node:module';\nenableCompileCache();\n" +
      "const { main } = await import('../src/cli/main.js');\nprocess.exitCode = await main(process.argv);\n",
  );
  // Both installs read one migrated SQLite file.
  const database = `file:${join(clone.dir, 'bench.db')}`;
  const env = { ...user, DATABASE_URL: database, PATH: `${join(clone.dir, 'node_modules/.bin')}:${user.PATH}` };
  await time(node, ['bin/occupancy-sync.cjs', 'migrate'], clone.dir, env);

  interface Case {
    label: string;
    command: string;
    argv: string[];
    cwd: string;
    env: Record<string, string>;
    /** A fresh TMPDIR for every run: tsx's transform cache and V8's compile cache start empty. */
    coldTmp?: boolean;
  }
  const commands = [
    { name: '--help', argv: ['--help'] },
    { name: 'status', argv: ['status'] },
  ];
  const cases: Case[] = [{ label: `\`node -e 0\` (${nodeVersion})`, command: node, argv: ['-e', '0'], cwd: clone.dir, env }];
  for (const c of commands) {
    cases.push(
      { label: `clone, sources (tsx), warm: \`node bin/occupancy-sync.cjs ${c.name}\``, command: node, argv: ['bin/occupancy-sync.cjs', ...c.argv], cwd: clone.dir, env },
      { label: `clone, sources (tsx), empty cache: ${c.name}`, command: node, argv: ['bin/occupancy-sync.cjs', ...c.argv], cwd: clone.dir, env, coldTmp: true },
      { label: `clone, dist/ (a prepare build): \`node dist/bin/occupancy-sync.js ${c.name}\``, command: node, argv: ['dist/bin/occupancy-sync.js', ...c.argv], cwd: clone.dir, env },
      // npx as a user types it: the system PATH, npm on the system Node.
      { label: `clone, \`npx occupancy-sync ${c.name}\` (sources)`, command: 'npx', argv: ['occupancy-sync', ...c.argv], cwd: clone.dir, env: { ...user, DATABASE_URL: database } },
      { label: `package, before (the previous command): ${c.name}`, command: node, argv: [before, ...c.argv], cwd: installed.dir, env },
      { label: `package, after: \`node bin/occupancy-sync.cjs ${c.name}\``, command: node, argv: [join(pkg, 'bin/occupancy-sync.cjs'), ...c.argv], cwd: installed.dir, env },
      { label: `package, the entry alone: \`node dist/bin/occupancy-sync.js ${c.name}\``, command: node, argv: [join(pkg, 'dist/bin/occupancy-sync.js'), ...c.argv], cwd: installed.dir, env },
    );
  }
  if (only) cases.splice(1, cases.length, ...cases.slice(1).filter((c) => c.label.includes(only)));
  const samples = new Map<Case, Sample[]>(cases.map((c) => [c, []]));
  const once = async (c: Case) => {
    const tmp = c.coldTmp ? tempDir('launch-tmp-') : undefined;
    try {
      return await time(c.command, c.argv, c.cwd, tmp ? { ...c.env, TMPDIR: tmp.dir } : c.env);
    } finally {
      tmp?.remove();
    }
  };
  // Warm-up round (file cache, npx's install of the clone, tsx's and V8's caches for the warm cases), not counted.
  for (const c of cases) await once(c);
  for (let round = 0; round < runs; round++) {
    process.stderr.write(`round ${round + 1} of ${runs}\n`);
    for (let i = 0; i < cases.length; i++) {
      const c = cases[(i + round) % cases.length]!;
      samples.get(c)!.push(await once(c));
    }
  }
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  console.log(`${runs} rounds, medians; load average at the end ${load}; npm run build in the clone: ${buildTimes.length ? `${buildTimes.map((b) => (b / 1000).toFixed(1)).join(', ')} s` : 'not timed'}\n`);
  console.log('| Case | Wall (ms) | CPU, user + system (ms) |');
  console.log('|---|---:|---:|');
  for (const c of cases) {
    const s = samples.get(c)!;
    console.log(`| ${c.label} | ${median(s.map((x) => x.wall)).toFixed(0)} | ${median(s.map((x) => x.cpu)).toFixed(0)} |`);
  }
} finally {
  // npx's install of the clone would point at nothing once the clone is gone.
  for (const dir of npxInstalls(clone.dir)) rmSync(dir, { recursive: true, force: true });
  clone.remove();
  installed.remove();
}
