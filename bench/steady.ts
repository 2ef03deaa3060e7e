import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { openStore } from '../src/store/index.ts';
import { freshDatabase, type Dialect } from '../test/support/databases.ts';
import { ROOT } from '../test/support/process.ts';
import { runBench } from './child.ts';
import { countReadings, deleteReadingsFrom } from './raw-writers.ts';
import type { ReplayBench } from './replay-bench.ts';
import { fetchStats, type ReplayStats } from './replay-server.ts';
import type { ReplayResult } from './replay-worker.ts';
import { BENCH_PG_URL, PAGE_SIZE, STEP_MS } from './sync-bench.ts';
import type { SteadyMinimalJob } from './steady-minimal.ts';
import { median } from './stats.ts';

/**
 * Steady state: with N readings already stored (loaded untimed with the baselines' writer), one incremental run of
 * a 15-minute window (SYNC_LOOKBACK's default; the watermark set so exactly that window is read: 3 ticks x 50
 * spaces = 150 readings) as a real process, start-up included, against the replay server:
 *
 * - ours: `node dist/bin/occupancy-sync.js sync --stream occupancy`, what an installed package runs (the compiled
 *   dist/, built first by the harness), with bench/frozen-clock.ts so the planned window is the recorded one;
 * - minimal: `node bench/steady-minimal.ts` (plain node, type stripping): authenticate, read, write;
 * - node: `node -e 0`.
 *
 * Wall time from spawn to exit; CPU is the child's user + system (getrusage of the children, read with bash's
 * `times`). Between repetitions the window's readings are deleted (untimed), so every run inserts them again.
 */

export interface SteadySample {
  wallMs: number;
  cpuMs: number;
}

export type SteadyKind = 'ours' | 'minimal' | 'node';

export interface SteadyFigures {
  storedBefore: number;
  readings: number;
  samples: Record<SteadyKind, SteadySample[]>;
  wallMs: Record<SteadyKind, number>;
  cpuMs: Record<SteadyKind, number>;
  /** ours / minimal. */
  wallRatio: number;
  cpuRatio: number;
}

const KINDS: SteadyKind[] = ['ours', 'minimal', 'node'];
const FROZEN_CLOCK = fileURLToPath(new URL('./frozen-clock.ts', import.meta.url));

/** Runs `argv` under bash and reads the children's CPU from `times` (second line: user and system of children). */
export function timed(argv: string[], env: Record<string, string>): Promise<SteadySample & { code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn('bash', ['-c', '"$@" 1>&2; s=$?; times; exit $s', 'bash', ...argv], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const wallMs = performance.now() - started;
      const line = out.trim().split('\n')[1] ?? '';
      const seconds = [...line.matchAll(/(\d+)m([\d.]+)s/g)].map((m) => Number(m[1]) * 60 + Number(m[2]));
      if (seconds.length !== 2) return reject(new Error(`steady state: cannot read the CPU times from bash's \`times\`: ${JSON.stringify(out)}`));
      resolve({ wallMs, cpuMs: (seconds[0]! + seconds[1]!) * 1000, code, stderr: err });
    });
  });
}

let built: Promise<unknown> | undefined;
/** dist/ from the current sources, once per bench run: the steady state times what an installed package runs. */
export function buildDist(log: (line: string) => void): Promise<unknown> {
  built ??= (log('  building dist/ (npm run build) for the steady state'), promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/build.ts'], { cwd: ROOT }));
  return built;
}

/** The steady state ready to run: the database loaded and the watermark set; `reset` deletes the window's readings. */
export interface SteadySetup {
  dialect: Dialect;
  storedBefore: number;
  readings: number;
  commands: Record<SteadyKind, string[]>;
  envs: Record<SteadyKind, Record<string, string>>;
  /** Untimed: deletes the window's readings, so the next run inserts them again. */
  reset(): Promise<void>;
  /** Checks after a run that wrote: no replay miss, and exactly the window's readings added. */
  check(kind: SteadyKind, stderr: string, before: ReplayStats): Promise<void>;
  stats(): Promise<ReplayStats>;
  drop(): Promise<void>;
}

export async function prepareSteady(bench: ReplayBench, dialect: Dialect, log: (line: string) => void): Promise<SteadySetup> {
  await buildDist(log);
  const replay = bench.replay('small');
  const { steady } = bench;
  const db = await freshDatabase(dialect, `steady_${dialect}`, { migrate: true, baseUrl: BENCH_PG_URL, schemaPrefix: 'osbench_' });
  try {
    const load = await runBench<ReplayResult>('replay-worker.ts', ['--impl', 'load', '--job', JSON.stringify(bench.job('small', db.url, 'unnest'))]);
    const storedBefore = load.rows;
    const customerId = replay.sandbox.customerId;
    const store = await openStore(db.database);
    try {
      await store.saveState({ customerId, stateKey: 'occupancy', watermark: steady.to, windowStart: null, windowEnd: null, pageCursor: null, rangeStart: null, rangeEnd: null });
    } finally {
      await store.close();
    }
    log(`  ${dialect}: ${storedBefore} readings stored (untimed), watermark ${steady.to}, window [${steady.from}, ${steady.to}) = ${steady.readings} readings`);

    const base = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...(process.env.TMPDIR && { TMPDIR: process.env.TMPDIR }) };
    const oursEnv = {
      ...base,
      API_BASE_URL: replay.sandbox.url,
      API_KEY: replay.sandbox.apiKey,
      API_SECRET: replay.sandbox.apiSecret,
      CUSTOMER_ID: customerId,
      DATABASE_URL: db.url,
      SYNC_PAGE_SIZE: String(PAGE_SIZE),
      BENCH_FROZEN_NOW: String(steady.nowMs),
      LOG_LEVEL: 'warn',
    };
    const minimalJob: SteadyMinimalJob = {
      url: replay.sandbox.url,
      apiKey: replay.sandbox.apiKey,
      apiSecret: replay.sandbox.apiSecret,
      customerId,
      from: Date.parse(steady.from),
      to: Date.parse(steady.to),
      stepMs: STEP_MS,
      pageSize: PAGE_SIZE,
      databaseUrl: db.url,
    };
    return {
      dialect,
      storedBefore,
      readings: steady.readings,
      commands: {
        ours: [process.execPath, '--import', FROZEN_CLOCK, 'dist/bin/occupancy-sync.js', 'sync', '--stream', 'occupancy'],
        minimal: [process.execPath, 'bench/steady-minimal.ts', JSON.stringify(minimalJob)],
        node: [process.execPath, '-e', '0'],
      },
      envs: { ours: oursEnv, minimal: base, node: base },
      reset: async () => void (await deleteReadingsFrom(db.url, customerId, steady.from)),
      stats: () => fetchStats(replay.info.url),
      async check(kind, stderr, before) {
        const after = await fetchStats(replay.info.url);
        if (after.misses !== before.misses) throw new Error(`steady state, ${kind} on ${dialect}: ${after.misses - before.misses} replay miss(es), e.g. ${after.missed.join(' | ')}`);
        const stored = await countReadings(db.url);
        if (stored !== storedBefore + steady.readings) {
          throw new Error(`steady state, ${kind} on ${dialect}: ${stored} readings stored, expected ${storedBefore} + ${steady.readings}\n${stderr.slice(-2000)}`);
        }
      },
      drop: () => db.drop(),
    };
  } catch (error) {
    await db.drop();
    throw error;
  }
}

/** One process of `kind`, timed; a run that writes is checked (see SteadySetup.check). `nodeFlags` go before its script. */
export async function steadyRun(setup: SteadySetup, kind: SteadyKind, nodeFlags: string[] = []): Promise<SteadySample> {
  const writes = kind !== 'node';
  if (writes) await setup.reset();
  const before = writes ? await setup.stats() : undefined;
  const [node, ...rest] = setup.commands[kind];
  const result = await timed([node!, ...nodeFlags, ...rest], setup.envs[kind]);
  if (result.code !== 0) throw new Error(`steady state, ${kind} on ${setup.dialect}: exit code ${result.code}\n${result.stderr.slice(-3000)}`);
  if (before) await setup.check(kind, result.stderr, before);
  return { wallMs: result.wallMs, cpuMs: result.cpuMs };
}

export async function measureSteady(bench: ReplayBench, dialect: Dialect, runs: number, log: (line: string) => void): Promise<SteadyFigures> {
  const setup = await prepareSteady(bench, dialect, log);
  try {
    const samples: Record<SteadyKind, SteadySample[]> = { ours: [], minimal: [], node: [] };
    for (let i = 0; i < runs; i++) {
      for (const kind of KINDS.map((_, k) => KINDS[(k + i) % KINDS.length]!)) {
        const result = await steadyRun(setup, kind);
        samples[kind].push(result);
        log(`  ${dialect} steady ${kind.padEnd(7)} wall ${result.wallMs.toFixed(0)} ms, CPU ${result.cpuMs.toFixed(0)} ms`);
      }
    }
    const pick = (f: (s: SteadySample) => number) => Object.fromEntries(KINDS.map((k) => [k, median(samples[k].map(f))])) as Record<SteadyKind, number>;
    const wallMs = pick((s) => s.wallMs);
    const cpuMs = pick((s) => s.cpuMs);
    return { storedBefore: setup.storedBefore, readings: setup.readings, samples, wallMs, cpuMs, wallRatio: wallMs.ours / wallMs.minimal, cpuRatio: cpuMs.ours / cpuMs.minimal };
  } finally {
    await setup.drop();
  }
}
