import { freshDatabase, type Dialect } from '../test/support/databases.ts';
import { runBench, spawnBench, type BenchChild } from './child.ts';
import type { ReplayInfo } from './replay-process.ts';
import { fetchStats, type ReplayPlan, type ReplayStats } from './replay-server.ts';
import type { Impl, ReplayJob, ReplayResult } from './replay-worker.ts';
import type { PgStyle } from './raw-writers.ts';
import type { SandboxInfo } from './sandbox-process.ts';
import { postgresCpuSeconds } from './server-cpu.ts';
import { median } from './stats.ts';
import { perReading, storageSize, type BytesPerReading } from './storage-size.ts';
import { BENCH_PG_URL, dataStart, PAGE_SIZE, STEP_MS } from './sync-bench.ts';

/**
 * The replay benchmark (issue 18): our sync against the limit. Two sandboxes (one per page shape) are used only to
 * record; each shape's answers are then served from memory by its own replay server process
 * (bench/replay-server.ts). Every run is a fresh worker process (bench/replay-worker.ts) on a fresh migrated
 * database; the implementations alternate and their order rotates every repetition. After every run the replay
 * server's miss counter must not have moved.
 */

/**
 * One run's figures: the worker's own, and on Postgres the local server's CPU over the run (bench/server-cpu.ts),
 * which shares the machine's cores with the client: what a client makes the server do is part of its cost.
 */
export interface MeasuredRun extends ReplayResult {
  /** CPU seconds of every local postgres process per million rows over the run; undefined on SQLite. */
  serverCpuPerMillion?: number;
}

export const IMPLS = ['ours', 'minimal', 'overlap', 'ceiling'] as const satisfies readonly Impl[];
export type MeasuredImpl = (typeof IMPLS)[number];

export interface Shape {
  name: 'large' | 'small';
  label: string;
  buildings: number;
  spaces: number;
}

export const SHAPES: Shape[] = [
  { name: 'large', label: 'large pages (1,250 spaces, 3 x 5,000 per hour)', buildings: 25, spaces: 50 },
  { name: 'small', label: 'small pages (50 spaces, 1 x 600 per hour)', buildings: 1, spaces: 50 },
];

/** The token the replay serves must stay valid for the whole run. */
const TOKEN_SECONDS = 30 * 86_400;
const SETTLE_MS = 60_000;
const LOOKBACK_MS = 15 * 60_000;

export interface ShapeFigures {
  rows: number;
  samples: Record<MeasuredImpl, ReplayResult[]>;
  /** Medians. */
  rowsPerSecond: Record<MeasuredImpl, number>;
  cpuPerMillion: Record<MeasuredImpl, number>;
  maxRssBytes: Record<MeasuredImpl, number>;
  /** ours / the faster of minimal and minimal+overlap, ours / ceiling, ours' CPU per million / minimal's. */
  bestMinimal: 'minimal' | 'overlap';
  ratioToBestMinimal: number;
  ratioToCeiling: number;
  cpuRatio: number;
}

export interface SteadyWindow {
  /** ISO: the window [from, to) an incremental sync with watermark `to` and SYNC_LOOKBACK 15m reads. */
  from: string;
  to: string;
  /** The frozen clock of our CLI run: to + SYNC_SETTLE_DELAY. */
  nowMs: number;
  readings: number;
}

interface Replay {
  shape: Shape;
  sandbox: SandboxInfo;
  info: ReplayInfo;
  child: BenchChild<ReplayInfo>;
  plan: ReplayPlan;
}

export class ReplayBench {
  readonly #replays: Map<Shape['name'], Replay>;
  readonly #log: (line: string) => void;
  readonly rows: number;
  readonly steady: SteadyWindow;
  /** Replay servers' CPU and the rows they served, over every timed run. */
  #served = { cpuUs: 0, rows: 0 };

  private constructor(replays: Map<Shape['name'], Replay>, log: (line: string) => void, rows: number, steady: SteadyWindow) {
    this.#replays = replays;
    this.#log = log;
    this.rows = rows;
    this.steady = steady;
  }

  /**
   * Starts a sandbox per shape, records `rows` readings of each (and the steady-state window), stops the sandboxes.
   * `only` records fewer shapes (the steady state needs only the small one).
   */
  static async start(log: (line: string) => void, rows: number, only: ReadonlyArray<Shape['name']> = ['large', 'small']): Promise<ReplayBench> {
    const start = dataStart();
    // The steady-state window: the last three whole ticks before now - settle delay, read by the small shape.
    const to = Math.floor((Date.now() - SETTLE_MS) / 300_000) * 300_000;
    const steady: SteadyWindow = { from: new Date(to - LOOKBACK_MS).toISOString(), to: new Date(to).toISOString(), nowMs: to + SETTLE_MS, readings: 0 };
    const replays = new Map<Shape['name'], Replay>();
    const started = performance.now();
    try {
      await Promise.all(
        SHAPES.filter((shape) => only.includes(shape.name)).map(async (shape) => {
          const sandboxChild = spawnBench<SandboxInfo>('sandbox-process.ts', [
            '--data-start', start, '--buildings', String(shape.buildings), '--spaces', String(shape.spaces), '--expires-in', String(TOKEN_SECONDS),
          ]);
          try {
            const sandbox = await sandboxChild.message;
            const ticks = Math.max(1, Math.ceil(rows / sandbox.floorSpaces));
            const from = Date.parse(sandbox.dataStart);
            const plan: ReplayPlan = { from, to: from + ticks * sandbox.intervalMs, stepMs: STEP_MS, pageSize: PAGE_SIZE };
            const plans = [plan];
            if (shape.name === 'small') plans.push({ from: Date.parse(steady.from), to: Date.parse(steady.to), stepMs: STEP_MS, pageSize: PAGE_SIZE });
            const child = spawnBench<ReplayInfo>('replay-process.ts', ['--sandbox', JSON.stringify(sandbox), '--plans', JSON.stringify(plans)], { timeoutMs: 900_000 });
            const info = await child.message;
            if (shape.name === 'small') steady.readings = (LOOKBACK_MS / sandbox.intervalMs) * sandbox.floorSpaces;
            replays.set(shape.name, { shape, sandbox: { ...sandbox, url: info.url }, info, child, plan });
          } finally {
            await sandboxChild.stop();
          }
        }),
      );
    } catch (error) {
      await Promise.all([...replays.values()].map((r) => r.child.stop()));
      throw error;
    }
    for (const r of replays.values()) {
      log(`  replay ${r.shape.name}: ${r.info.answers} answers, ${r.info.rows} readings, ${(r.info.jsonBytes / 1048576).toFixed(0)} MiB JSON, ${(r.info.gzBytes / 1048576).toFixed(1)} MiB gzipped`);
    }
    log(`  recorded in ${((performance.now() - started) / 1000).toFixed(1)} s (sandboxes stopped; from here on only the replay servers answer)`);
    return new ReplayBench(replays, log, rows, steady);
  }

  replay(shape: Shape['name']): Replay {
    return this.#replays.get(shape)!;
  }

  /** The job for a worker: the shape's recorded range, against its replay server. */
  job(shape: Shape['name'], databaseUrl: string, pgStyle: PgStyle): ReplayJob {
    const r = this.replay(shape);
    const expectedRows = ((r.plan.to - r.plan.from) / r.sandbox.intervalMs) * r.sandbox.floorSpaces;
    return { sandbox: r.sandbox, from: r.plan.from, to: r.plan.to, stepMs: r.plan.stepMs, pageSize: r.plan.pageSize, databaseUrl, expectedRows, pgStyle };
  }

  /**
   * One run on a fresh database. The replay server's counters are read before and after: any miss fails the
   * benchmark. `inspect` sees the database before it is dropped.
   */
  async once(
    impl: Impl,
    dialect: Dialect,
    shape: Shape['name'],
    options: { pgStyle?: PgStyle; nodeFlags?: string[]; env?: Record<string, string>; inspect?: (url: string, result: ReplayResult) => Promise<void> } = {},
  ): Promise<MeasuredRun> {
    const db = await freshDatabase(dialect, `replay_${impl}_${dialect}`, { migrate: true, baseUrl: BENCH_PG_URL, schemaPrefix: 'osbench_' });
    try {
      const job = this.job(shape, db.url, options.pgStyle ?? 'unnest');
      const replay = this.replay(shape);
      const before = await fetchStats(replay.info.url);
      const serverBefore = dialect === 'postgres' ? postgresCpuSeconds() : undefined;
      const result: MeasuredRun = await runBench<ReplayResult>('replay-worker.ts', ['--impl', impl, '--job', JSON.stringify(job)], { nodeFlags: options.nodeFlags ?? [], ...(options.env && { env: options.env }) });
      const serverAfter = serverBefore === undefined ? undefined : postgresCpuSeconds();
      if (serverBefore !== undefined && serverAfter !== undefined) result.serverCpuPerMillion = (serverAfter - serverBefore) * (1e6 / result.rows);
      const after = await fetchStats(replay.info.url);
      this.#checkMisses(before, after, `${impl} on ${dialect}, ${shape} pages`);
      this.#served.cpuUs += after.cpuUs - before.cpuUs;
      this.#served.rows += after.rowsServed - before.rowsServed;
      this.#log(
        `  ${dialect} ${shape} ${impl.padEnd(7)} ${result.rows} rows in ${(result.ms / 1000).toFixed(2)} s = ${Math.round(result.rowsPerSecond)} rows/s, ` +
          `CPU ${result.cpuPerMillion.toFixed(2)} s/M rows, peak RSS ${Math.round(result.maxRssBytes / 1048576)} MiB` +
          (result.writtenBytes === undefined ? '' : `, written ${Math.round(result.writtenBytes / 1048576)} MiB`) +
          (result.serverCpuPerMillion === undefined ? '' : `, server CPU ${result.serverCpuPerMillion.toFixed(2)} s/M rows`),
      );
      await options.inspect?.(db.url, result);
      return result;
    } finally {
      await db.drop();
    }
  }

  #checkMisses(before: ReplayStats, after: ReplayStats, what: string): void {
    if (after.misses !== before.misses) {
      throw new Error(`replay server: ${after.misses - before.misses} request(s) of ${what} were not recorded (answered 500), e.g. ${after.missed.join(' | ')}`);
    }
  }

  /** Every implementation `runs` times on one dialect and shape, alternating, the order rotating each repetition. */
  async compare(
    dialect: Dialect,
    shape: Shape['name'],
    runs: number,
    pgStyle: PgStyle,
    onOurs?: (url: string, result: ReplayResult) => Promise<void>,
  ): Promise<ShapeFigures> {
    const samples = { ours: [], minimal: [], overlap: [], ceiling: [] } as Record<MeasuredImpl, ReplayResult[]>;
    for (let i = 0; i < runs; i++) {
      const order = IMPLS.map((_, k) => IMPLS[(k + i) % IMPLS.length]!);
      for (const impl of order) {
        const inspect = impl === 'ours' && i === 0 ? onOurs : undefined;
        samples[impl].push(await this.once(impl, dialect, shape, { pgStyle, ...(inspect && { inspect }) }));
      }
    }
    const pick = (f: (r: ReplayResult) => number) => Object.fromEntries(IMPLS.map((k) => [k, median(samples[k].map(f))])) as Record<MeasuredImpl, number>;
    const rowsPerSecond = pick((r) => r.rowsPerSecond);
    const bestMinimal = rowsPerSecond.overlap > rowsPerSecond.minimal ? 'overlap' : 'minimal';
    const cpuPerMillion = pick((r) => r.cpuPerMillion);
    return {
      rows: samples.ours[0]!.rows,
      samples,
      rowsPerSecond,
      cpuPerMillion,
      maxRssBytes: pick((r) => r.maxRssBytes),
      bestMinimal,
      ratioToBestMinimal: rowsPerSecond.ours / rowsPerSecond[bestMinimal],
      ratioToCeiling: rowsPerSecond.ours / rowsPerSecond.ceiling,
      cpuRatio: cpuPerMillion.ours / cpuPerMillion.minimal,
    };
  }

  /** Bytes per reading of a database `readings` strong, over a freshly migrated empty one of the same dialect. */
  async bytesPerReading(dialect: Dialect, url: string, readings: number): Promise<BytesPerReading> {
    const full = await storageSize(url);
    const empty = await freshDatabase(dialect, `replay_empty_${dialect}`, { migrate: true, baseUrl: BENCH_PG_URL, schemaPrefix: 'osbench_' });
    try {
      return perReading(full, await storageSize(empty.url), readings);
    } finally {
      await empty.drop();
    }
  }

  /** The replay servers' own CPU seconds per million rows served, over every run so far. */
  serverCpuPerMillion(): { cpuSeconds: number; rows: number; perMillion: number } {
    const cpuSeconds = this.#served.cpuUs / 1e6;
    return { cpuSeconds, rows: this.#served.rows, perMillion: this.#served.rows ? (cpuSeconds * 1e6) / this.#served.rows : 0 };
  }

  async close(): Promise<void> {
    await Promise.all([...this.#replays.values()].map((r) => r.child.stop()));
  }
}
