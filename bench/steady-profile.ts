import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../test/support/process.ts';
import type { Dialect } from '../test/support/databases.ts';
import { flags } from './child.ts';
import { ReplayBench } from './replay-bench.ts';
import { median } from './stats.ts';
import { prepareSteady, steadyRun, timed, type SteadySample, type SteadySetup } from './steady.ts';
import { formatCategories, profileStartup } from './startup-profile.ts';

/**
 * Where the steady state's extra time goes (issue 25: a cron `sync` within 1.5x of the minimal client):
 *
 *   node --import tsx bench/steady-profile.ts [--dialect sqlite,postgres] [--stored 200000] [--runs 9]
 *
 * Prepares the steady state as `npm run bench` does (bench/steady.ts), then, rotating the order every round, times
 * ours and the minimal client with probes that isolate one cost each, in separate processes:
 * - `node -e 0`; the same with the steady state's `.ts` preload (bench/frozen-clock.ts: Node's TypeScript stripper
 *   loads for it, as it does for the minimal client's `.ts`); a first `toLocaleString` (ICU's number formatting);
 * - `--help` of the CLI (its fixed start: commander, the configuration, pino);
 * - importing one module alone (our compiled modules and the heavy dependencies), each minus `node -e 0`;
 * then one run of ours under `--cpu-prof`, split by bench/startup-profile.ts. Prints Markdown on stdout. Not part of
 * `npm run bench`: a diagnosis to run when the steady-state ratio moves.
 */

const args = flags();
const dialects = (args.get('dialect') ?? 'sqlite,postgres').split(',') as Dialect[];
const stored = Number(args.get('stored') ?? 200_000);
const runs = Number(args.get('runs') ?? 9);
const log = (line: string) => process.stderr.write(`${line}\n`);

/** Modules imported alone: what each costs a process that loads it first. */
const IMPORTS: Array<[label: string, specifier: string]> = [
  ['dist/src/cli/main.js (the CLI shell: commander, configuration, pino)', 'dist/src/cli/main.js'],
  ['dist/src/cli/run-command.js (what `sync` imports up front)', 'dist/src/cli/run-command.js'],
  ['dist/src/store/sqlite/adapter.js (SQLite adapter: drizzle sqlite-core, better-sqlite3)', 'dist/src/store/sqlite/adapter.js'],
  ['dist/src/store/postgres/adapter.js (Postgres adapter: drizzle pg-core, postgres.js)', 'dist/src/store/postgres/adapter.js'],
  ['dist/db/schema/pg.js (the Postgres schema, drizzle pg-core)', 'dist/db/schema/pg.js'],
  ['dist/src/sync/engine.js (the engine)', 'dist/src/sync/engine.js'],
  ['dist/src/api/client.js (the API client: undici, graphql)', 'dist/src/api/client.js'],
  ['undici', 'undici'],
  ['graphql', 'graphql'],
  ['pino', 'pino'],
  ['zod', 'zod'],
  ['commander', 'commander'],
  ['better-sqlite3', 'better-sqlite3'],
  ['postgres', 'postgres'],
];

const importCode = (specifier: string) => `await import(${JSON.stringify(specifier.startsWith('dist/') ? pathToFileURL(join(ROOT, specifier)).href : specifier)})`;

function probes(setup: SteadySetup): Record<string, { argv: string[]; env: Record<string, string> }> {
  const env = setup.envs.node;
  // The CLI turns V8's compile cache on in its default directory; the import probes use the same one.
  const cached = { ...env, NODE_COMPILE_CACHE: join(tmpdir(), 'node-compile-cache') };
  const node = process.execPath;
  const out: Record<string, { argv: string[]; env: Record<string, string> }> = {
    'node -e 0': { argv: setup.commands.node, env },
    'node -e 0 with the .ts preload (TypeScript stripping)': { argv: [node, '--import', setup.commands.ours[2]!, '-e', '0'], env },
    'node -e 0 with a first toLocaleString (ICU)': { argv: [node, '-e', "(1234).toLocaleString('en-US')"], env },
    'ours --help (the CLI alone)': { argv: [node, 'dist/bin/occupancy-sync.js', '--help'], env: setup.envs.ours },
  };
  for (const [label, specifier] of IMPORTS) out[`import ${label}`] = { argv: [node, '--input-type=module', '-e', importCode(specifier)], env: cached };
  // drizzle as the store loads it (db/schema/drizzle.ts): its CommonJS build, the core and each part on demand.
  for (const part of ['drizzle-orm', 'drizzle-orm/sqlite-core', 'drizzle-orm/pg-core', 'drizzle-orm/migrator']) {
    out[`require ${part}`] = { argv: [node, '-e', `require(${JSON.stringify(part)})`], env: cached };
  }
  return out;
}

async function measure(setup: SteadySetup): Promise<Map<string, SteadySample[]>> {
  const extra = probes(setup);
  const names = ['ours', 'minimal', ...Object.keys(extra)];
  const samples = new Map<string, SteadySample[]>(names.map((n) => [n, []]));
  for (let i = 0; i < runs; i++) {
    for (const name of names.map((_, k) => names[(k + i) % names.length]!)) {
      if (name === 'ours' || name === 'minimal') {
        samples.get(name)!.push(await steadyRun(setup, name));
        continue;
      }
      const probe = extra[name]!;
      const result = await timed(probe.argv, probe.env);
      if (result.code !== 0) throw new Error(`${name}: exit code ${result.code}\n${result.stderr.slice(-2000)}`);
      samples.get(name)!.push({ wallMs: result.wallMs, cpuMs: result.cpuMs });
    }
    log(`  ${setup.dialect}: round ${i + 1} of ${runs}`);
  }
  return samples;
}

async function profileOurs(setup: SteadySetup): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'occupancy-steady-prof-'));
  try {
    const run = await steadyRun(setup, 'ours', ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-interval', '100']);
    // The main thread's profile is the largest; the SQLite checkpoint thread writes a small one.
    const file = readdirSync(dir).map((f) => join(dir, f)).sort((a, b) => statSync(b).size - statSync(a).size)[0]!;
    const p = profileStartup(file);
    return [
      `Profiled run: wall ${run.wallMs.toFixed(0)} ms, CPU ${run.cpuMs.toFixed(0)} ms; main thread profiled ${p.totalMs.toFixed(0)} ms (from after Node's own start).`,
      '',
      '```',
      ...formatCategories(p.categories, p.totalMs),
      '```',
      '',
      'Module loading by the innermost package or area on the stack (for ES modules: the importer):',
      '',
      '```',
      ...formatCategories(p.loading, p.totalMs, 12),
      '```',
      '',
      'Our functions, inclusive:',
      '',
      '```',
      ...formatCategories(p.own, p.totalMs, 20),
      '```',
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

log(`steady-profile: ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}, load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
const bench = await ReplayBench.start(log, stored, ['small']);
const out: string[] = [];
try {
  for (const dialect of dialects) {
    const setup = await prepareSteady(bench, dialect, log);
    try {
      const samples = await measure(setup);
      const m = (name: string) => ({ wall: median(samples.get(name)!.map((s) => s.wallMs)), cpu: median(samples.get(name)!.map((s) => s.cpuMs)) });
      const zero = m('node -e 0');
      const ours = m('ours');
      const minimal = m('minimal');
      out.push(`### ${dialect === 'sqlite' ? 'SQLite' : 'Postgres'}: ${setup.readings} readings with ${stored.toLocaleString('en-US')} stored, medians of ${runs}`, '');
      out.push(`ours / minimal: wall ${(ours.wall / minimal.wall).toFixed(2)}, CPU ${(ours.cpu / minimal.cpu).toFixed(2)}`, '');
      out.push('| Process | Wall ms | CPU ms | Wall - node -e 0 |', '|---|---:|---:|---:|');
      for (const name of samples.keys()) {
        const x = m(name);
        out.push(`| ${name} | ${x.wall.toFixed(0)} | ${x.cpu.toFixed(0)} | ${(x.wall - zero.wall).toFixed(0)} |`);
      }
      out.push('', ...(await profileOurs(setup)), '');
    } finally {
      await setup.drop();
    }
  }
} finally {
  await bench.close();
}
log(`load average at the end ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
process.stdout.write(`${out.join('\n')}\n`);
