import { resolveConfig } from '../src/config.ts';
import { freshDatabase, type Dialect } from '../test/support/databases.ts';
import { runBench, spawnBench, type BenchChild } from './child.ts';
import type { ReplayInfo } from './replay-process.ts';
import { NO_LIMITS, type ReplayLimits } from './replay-limits.ts';
import { fetchStats, setLimits, type ReplayPlan } from './replay-server.ts';
import type { ReplayJob, ReplayResult } from './replay-worker.ts';
import type { SandboxInfo } from './sandbox-process.ts';
import { median } from './stats.ts';
import { BENCH_PG_URL, dataStart } from './sync-bench.ts';

/**
 * The backfill against a platform far away (issue 25): the replay server (bench/replay-server.ts) answers every
 * request `latencyMs` later and refuses queries beyond an in-flight allowance (and optionally a per-second one) with
 * 429 and `Retry-After: 1` (bench/replay-limits.ts). Ours runs a backfill with the default settings (SYNC_STEP,
 * SYNC_PAGE_SIZE and everything else unset) of a 50-floor-space site, and is compared with the floor: the time the
 * pages need at best under the limits, or the storage ceiling's time when that is longer.
 *
 * - network floor: pages x latency / allowed in flight (every slot busy all the time, no request wasted);
 * - rate floor, with a per-second limit: pages / per second;
 * - storage ceiling: the same pages written by the minimal writers with the rows already in memory (the replay
 *   benchmark's `ceiling`, measured here in the same rotation at zero latency).
 *
 * The ratio is floor / ours (= our rate / the floor's rate): 1.00 is the floor, higher is better.
 *
 * So that the floor is known to be reachable here, the minimal client (bench/minimal-client.ts `readParallel`) runs
 * under the same limits with exactly N windows in flight, in the same rotation: the floor's share it reaches is what
 * this machine leaves of the floor to any client.
 */

export interface LatencySettings {
  /** Readings of the site (50 per 5-minute tick). */
  rows: number;
  latencyMs: number;
  /** Allowed in flight, one comparison each. */
  inFlight: number[];
  perSecond?: number;
  runs: number;
}

export type Floor = 'network' | 'rate' | 'storage';

/** One run of ours under one limit, with what the server saw. */
export interface LatencyRun {
  /** NaN when the run failed (`error`). */
  ms: number;
  cpuMs: number;
  /** Requests to the token and query endpoints, 429s included. */
  requests: number;
  queries: number;
  answered429: number;
  /** Queries answered with their page. */
  pages: number;
  /** Most queries open at the server at once (429s included). */
  maxOpen: number;
  /** Why ours failed (e.g. it gave up after too many 429s): a figure of the client, not a fault of the harness. */
  error?: string;
}

export interface LimitFigures {
  inFlight: number;
  perSecond?: number;
  runs: LatencyRun[];
  /** Runs of ours that failed (their error), out of runs.length. */
  failed: string[];
  /** The minimal client with N windows in flight, under the same limits. */
  minimalRuns: LatencyRun[];
  minimalMs: number;
  /** floor / minimal. */
  minimalRatio: number;
  /** Medians over the runs (oursMs over those that succeeded: NaN if none did), except maxOpen (the most of any run). */
  oursMs: number;
  share429: number;
  requests: number;
  maxOpen: number;
  floorMs: number;
  floorBy: Floor;
  networkFloorMs: number;
  rateFloorMs?: number;
  /** floor / ours: 1.00 is the floor, higher is better. */
  ratio: number;
}

export interface LatencyDialectFigures {
  ceilingMs: number;
  ceilingSamples: number[];
  limits: LimitFigures[];
}

export interface LatencyFigures {
  rows: number;
  /** Query pages of the backfill (one answer each). */
  pages: number;
  latencyMs: number;
  perSecond?: number;
  runs: number;
  pageSize: number;
  stepMs: number;
  dialects: Partial<Record<Dialect, LatencyDialectFigures>>;
}

/** 1 building x 50 floor spaces: the site of issue 25. */
const SITE = { buildings: 1, spaces: 50 };
const TOKEN_SECONDS = 30 * 86_400;

/** The backfill settings a user who sets nothing gets: the recording must ask what ours will ask. */
function defaults(): { stepMs: number; pageSize: number } {
  const { sync } = resolveConfig({ DATABASE_URL: 'file:defaults-only.db' });
  return { stepMs: sync.stepMs, pageSize: sync.pageSize };
}

export class LatencyBench {
  readonly #child: BenchChild<ReplayInfo>;
  readonly #info: ReplayInfo;
  readonly #sandbox: SandboxInfo;
  readonly #plan: ReplayPlan;
  readonly #log: (line: string) => void;

  private constructor(child: BenchChild<ReplayInfo>, info: ReplayInfo, sandbox: SandboxInfo, plan: ReplayPlan, log: (line: string) => void) {
    this.#child = child;
    this.#info = info;
    this.#sandbox = sandbox;
    this.#plan = plan;
    this.#log = log;
  }

  /** Records `rows` readings of the site at the default window and page size, then serves them from memory. */
  static async start(log: (line: string) => void, rows: number): Promise<LatencyBench> {
    const sandboxChild = spawnBench<SandboxInfo>('sandbox-process.ts', [
      '--data-start', dataStart(), '--buildings', String(SITE.buildings), '--spaces', String(SITE.spaces), '--expires-in', String(TOKEN_SECONDS),
    ]);
    try {
      const sandbox = await sandboxChild.message;
      const ticks = Math.max(1, Math.ceil(rows / sandbox.floorSpaces));
      const from = Date.parse(sandbox.dataStart);
      const plan: ReplayPlan = { from, to: from + ticks * sandbox.intervalMs, ...defaults() };
      const child = spawnBench<ReplayInfo>('replay-process.ts', ['--sandbox', JSON.stringify(sandbox), '--plans', JSON.stringify([plan])], { timeoutMs: 900_000 });
      const info = await child.message.catch(async (error: unknown) => {
        await child.stop();
        throw error;
      });
      log(`  latency replay: ${info.answers - 1} pages of ${plan.pageSize}, ${info.rows} readings, windows of ${plan.stepMs / 60_000} min (the defaults), recorded in ${(info.recordMs / 1000).toFixed(1)} s`);
      return new LatencyBench(child, info, { ...sandbox, url: info.url }, plan, log);
    } finally {
      await sandboxChild.stop();
    }
  }

  /** Query pages of the backfill: every recorded answer but the token's. */
  get pages(): number {
    return this.#info.answers - 1;
  }

  get plan(): ReplayPlan {
    return this.#plan;
  }

  #job(databaseUrl: string): ReplayJob {
    const { from, to, stepMs, pageSize } = this.#plan;
    const expectedRows = ((to - from) / this.#sandbox.intervalMs) * this.#sandbox.floorSpaces;
    return { sandbox: this.#sandbox, from, to, stepMs, pageSize, databaseUrl, expectedRows, pgStyle: 'unnest', defaultSettings: true };
  }

  /** One run on a fresh database under `limits`; the server's counters of the run come with the worker's figures. */
  async once(impl: 'ours' | 'parallel' | 'ceiling', dialect: Dialect, limits: ReplayLimits): Promise<LatencyRun> {
    const db = await freshDatabase(dialect, `latency_${impl}_${dialect}`, { migrate: true, baseUrl: BENCH_PG_URL, schemaPrefix: 'osbench_' });
    const url = this.#info.url;
    try {
      const before = await fetchStats(url);
      // Setting the limits resets their counters: what the server reports next is this run's alone.
      await setLimits(url, limits);
      const job: ReplayJob = { ...this.#job(db.url), ...(impl === 'parallel' && { inFlight: limits.maxInFlight ?? 1 }) };
      let result: Pick<ReplayResult, 'ms' | 'cpuMs'>;
      let error: string | undefined;
      try {
        result = await runBench<ReplayResult>('replay-worker.ts', ['--impl', impl, '--job', JSON.stringify(job)]);
      } catch (cause) {
        // Ours may give up (too many 429s, say): that is a figure to report, not a reason to lose the whole run.
        if (impl !== 'ours') throw cause;
        const text = (cause as Error).message;
        error = /backfill \w+: [^\n]*/.exec(text)?.[0] ?? text.split('\n').filter(Boolean).at(-1) ?? text;
        result = { ms: Number.NaN, cpuMs: Number.NaN };
      }
      const after = await fetchStats(url);
      if (after.misses !== before.misses) {
        throw new Error(`latency replay: ${after.misses - before.misses} request(s) of ${impl} on ${dialect} were not recorded (answered 500), e.g. ${after.missed.join(' | ')}`);
      }
      const l = after.limited;
      if (limits.maxInFlight !== undefined && l.maxAccepted > limits.maxInFlight) {
        throw new Error(`latency replay: ${l.maxAccepted} queries accepted at once, above the limit of ${limits.maxInFlight}: the replay server's gate is wrong`);
      }
      const run: LatencyRun = {
        ms: result.ms,
        cpuMs: result.cpuMs,
        requests: l.requests,
        queries: l.queries,
        answered429: l.refusedInFlight + l.refusedRate,
        pages: l.pages,
        maxOpen: l.maxOpen,
        ...(error !== undefined && { error }),
      };
      const shown = limits.maxInFlight === undefined ? 'no limit' : `${limits.maxInFlight} in flight${limits.perSecond ? `, ${limits.perSecond}/s` : ''}`;
      this.#log(
        `  ${dialect} ${impl.padEnd(8)} ${limits.latencyMs} ms, ${shown}: ${error ? `FAILED (${error})` : `${(run.ms / 1000).toFixed(2)} s`}, ${run.requests} requests, ` +
          `${run.answered429} answered 429, ${run.pages} pages, most in flight ${run.maxOpen}`,
      );
      return run;
    } finally {
      await setLimits(url, NO_LIMITS).catch(() => undefined);
      await db.drop();
    }
  }

  /**
   * Ours and the minimal client under each allowance, and the storage ceiling (at zero latency), `runs` times, the
   * order rotating every repetition so drift in the machine's load hits each alike.
   */
  async compare(dialect: Dialect, settings: LatencySettings): Promise<LatencyDialectFigures> {
    type Item = { impl: 'ours' | 'parallel'; inFlight: number } | { impl: 'ceiling' };
    const items: Item[] = [...settings.inFlight.flatMap((n): Item[] => [{ impl: 'ours', inFlight: n }, { impl: 'parallel', inFlight: n }]), { impl: 'ceiling' }];
    const ours = new Map<number, LatencyRun[]>(settings.inFlight.map((n) => [n, []]));
    const minimal = new Map<number, LatencyRun[]>(settings.inFlight.map((n) => [n, []]));
    const ceiling: number[] = [];
    for (let i = 0; i < settings.runs; i++) {
      for (const item of items.map((_, k) => items[(k + i) % items.length]!)) {
        if (item.impl === 'ceiling') {
          ceiling.push((await this.once('ceiling', dialect, NO_LIMITS)).ms);
          continue;
        }
        const limits: ReplayLimits = { latencyMs: settings.latencyMs, maxInFlight: item.inFlight, ...(settings.perSecond !== undefined && { perSecond: settings.perSecond }) };
        (item.impl === 'ours' ? ours : minimal).get(item.inFlight)!.push(await this.once(item.impl, dialect, limits));
      }
    }
    const ceilingMs = median(ceiling);
    const limits = settings.inFlight.map((inFlight): LimitFigures => {
      const runs = ours.get(inFlight)!;
      const networkFloorMs = (this.pages * settings.latencyMs) / inFlight;
      const rateFloorMs = settings.perSecond !== undefined ? (this.pages / settings.perSecond) * 1000 : undefined;
      const candidates: Array<[Floor, number]> = [['network', networkFloorMs], ['storage', ceilingMs]];
      if (rateFloorMs !== undefined) candidates.push(['rate', rateFloorMs]);
      const [floorBy, floorMs] = candidates.reduce((a, b) => (b[1] > a[1] ? b : a));
      const done = runs.filter((r) => r.error === undefined);
      const oursMs = done.length ? median(done.map((r) => r.ms)) : Number.NaN;
      const minimalRuns = minimal.get(inFlight)!;
      const minimalMs = median(minimalRuns.map((r) => r.ms));
      return {
        inFlight,
        ...(settings.perSecond !== undefined && { perSecond: settings.perSecond }),
        runs,
        failed: runs.flatMap((r) => (r.error === undefined ? [] : [r.error])),
        minimalRuns,
        minimalMs,
        minimalRatio: floorMs / minimalMs,
        oursMs,
        share429: median(runs.map((r) => (r.queries ? r.answered429 / r.queries : 0))),
        requests: median(runs.map((r) => r.requests)),
        maxOpen: Math.max(...runs.map((r) => r.maxOpen)),
        floorMs,
        floorBy,
        networkFloorMs,
        ...(rateFloorMs !== undefined && { rateFloorMs }),
        ratio: floorMs / oursMs,
      };
    });
    return { ceilingMs, ceilingSamples: ceiling, limits };
  }

  #closed: Promise<void> | undefined;
  /** Stops the replay server; a second call waits for the first. */
  close(): Promise<void> {
    this.#closed ??= this.#child.stop();
    return this.#closed;
  }
}
