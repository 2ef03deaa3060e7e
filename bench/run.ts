import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { measureAuthEconomy, type AuthEconomy } from './auth-economy.ts';
import { postgresProblem, type Dialect } from '../test/support/databases.ts';
import { flags, runBench } from './child.ts';
import { updateDoc } from './doc.ts';
import { profileAll, profileReplay } from './profile.ts';
import type { FloorResult } from './receiver-floor.ts';
import { measureReceiver, type LoadResult } from './receiver-load.ts';
import { formatNumber, median, mib } from './stats.ts';
import { BENCH_PG_URL, PAGE_SIZE, SyncBench, type SyncSamples } from './sync-bench.ts';
import type { PgStyle } from './raw-writers.ts';
import type { SyncResult } from './sync-job.ts';
import { renderTable, type Row } from './table.ts';
import { replayRows, type ReplayFigures } from './replay-table.ts';
import { ReplayBench, SHAPES } from './replay-bench.ts';
import { buildDist, measureSteady } from './steady.ts';
import { LatencyBench, type LatencyFigures } from './latency-bench.ts';
import { LATENCY_FLAGS, latencyHeader, latencySettings, measureLatency } from './latency-part.ts';
import { latencyRows } from './latency-table.ts';
import { measurePortfolio, type PortfolioFigures, type PortfolioPlan } from './portfolio.ts';
import { portfolioHeader, portfolioRows } from './portfolio-table.ts';

/**
 * npm run bench [-- --quick | --smoke] [--profile] [--only replay,steady,latency,sqlite,postgres,memory,receiver,auth,portfolio]
 *               [--pg-style unnest|rows] [--page-size N] [--write | --no-write] [--out FILE] [--json FILE]
 *               [--latency-ms L] [--in-flight 8,2] [--per-second R] [--latency-rows N] [--explain]
 *
 * Prints one table (figures, same-run baselines, ratios, goals) on stdout, progress on stderr. The default mode
 * writes the table into docs/performance.md; --quick and --smoke write only when asked (--write or --out).
 * --page-size (1 to 5,000, default 5,000) sets SYNC_PAGE_SIZE for both sides of the sync comparisons; a run with
 * another page size writes docs/performance.md only when asked, as --quick does.
 *
 * `replay` and `steady` (bench/replay-bench.ts, bench/steady.ts) measure our sync against the limit: a replay server
 * answering from memory, the minimal clients and the storage ceiling. `sqlite` and `postgres` are the older
 * end-to-end comparison through the sandbox, which shares our two cores and so is not a limit. `latency`
 * (bench/latency-bench.ts) measures a default backfill against a replay server that answers L ms late and refuses
 * queries beyond N in flight (and R per second) with 429: ours against the floor those limits allow. Its rows go to
 * their own block of docs/performance.md, so `--only latency` rewrites that block alone. `portfolio`
 * (bench/portfolio.ts) loads a generated portfolio and times the reports over its aggregates; it runs only when
 * named (`--only portfolio`: about 25 minutes in full mode on an idle machine) and writes its own block too; --explain adds the
 * plans of its report statements at full size (EXPLAIN ANALYZE on Postgres).
 */

interface Mode {
  name: 'full' | 'quick' | 'smoke';
  /** Readings per replay run (both shapes, both dialects), and the steady state's pre-loaded readings. */
  replayRows: number;
  replayRuns: number;
  steadyRuns: number;
  /**
   * The end-to-end sandbox comparison (not a limit) and the memory rows: fewer rows and runs than before the replay
   * benchmark (1,000,000 rows, 3 runs), to keep the full run near 20 minutes on two cores.
   */
  syncRows: number;
  memoryRows: [small: number, large: number];
  runs: number;
  receiverSeconds: number;
  receiverRuns: number;
  auth: { passes: number; everyMs: number };
  /**
   * The latency benchmark: readings of the 50-space site, repetitions, the in-flight allowances and dialects compared
   * (100 ms per answer, bench/latency-part.ts). Smoke runs 2 on SQLite only: the same code (the dialect is only the
   * database's) with a sixth of the processes, so the CI test keeps its time.
   */
  latency: { rows: number; runs: number; inFlight: number[]; dialects: Dialect[] };
  /**
   * The portfolio benchmark's sizes (bench/portfolio.ts). Full: the issue's 2,000 floor spaces x 180 days on Postgres
   * (8.64 M hourly readings, 10 to 15 minutes to load on this 2-core machine idle) and a quarter of the spaces on SQLite
   * (500 x 180 days, 2.16 M: its single writer, and a smaller file to report over); the reasons in bench/portfolio.ts
   * and docs/performance.md, "A portfolio's reports".
   */
  portfolio: PortfolioPlan;
}

const MODES: Record<Mode['name'], Mode> = {
  full: {
    name: 'full', replayRows: 1_000_000, replayRuns: 3, steadyRuns: 5, syncRows: 200_000, memoryRows: [100_000, 1_000_000], runs: 1, receiverSeconds: 10, receiverRuns: 3, auth: { passes: 60, everyMs: 60_000 }, latency: { rows: 200_000, runs: 3, inFlight: [8, 2], dialects: ['sqlite', 'postgres'] },
    portfolio: { sizes: { postgres: { buildings: 40, spacesPerBuilding: 50, days: 180 }, sqlite: { buildings: 10, spacesPerBuilding: 50, days: 180 } }, warmRuns: 5, restart: true, timeoutMs: 60_000, cost: { readings: 30_000, runs: 7 }, explain: false, aggregates: 'kept' },
  },
  quick: {
    name: 'quick', replayRows: 50_000, replayRuns: 1, steadyRuns: 1, syncRows: 50_000, memoryRows: [10_000, 50_000], runs: 1, receiverSeconds: 5, receiverRuns: 1, auth: { passes: 60, everyMs: 60_000 }, latency: { rows: 10_000, runs: 1, inFlight: [8, 2], dialects: ['sqlite', 'postgres'] },
    portfolio: { sizes: { postgres: { buildings: 4, spacesPerBuilding: 50, days: 40 }, sqlite: { buildings: 4, spacesPerBuilding: 50, days: 40 } }, warmRuns: 3, restart: false, timeoutMs: 60_000, cost: { readings: 25_000, runs: 1 }, explain: false, aggregates: 'kept' },
  },
  smoke: {
    name: 'smoke', replayRows: 2_500, replayRuns: 1, steadyRuns: 1, syncRows: 2_500, memoryRows: [1_250, 2_500], runs: 1, receiverSeconds: 2, receiverRuns: 1, auth: { passes: 12, everyMs: 300_000 }, latency: { rows: 2_500, runs: 1, inFlight: [2], dialects: ['sqlite'] },
    // SQLite only, as the latency part's smoke: the same code (the dialect is only the database's) in fewer processes.
    portfolio: { sizes: { sqlite: { buildings: 2, spacesPerBuilding: 4, days: 8 } }, warmRuns: 1, restart: false, timeoutMs: 60_000, cost: { readings: 2_500, runs: 1 }, explain: false, aggregates: 'kept' },
  },
};
const CONNECTIONS = 50;
/**
 * The Postgres baselines' page insert: one `INSERT ... SELECT FROM unnest(...)` per page was faster than one
 * prepared INSERT per row (pipelined in the page's transaction) in bench/ measurements: see docs/performance.md.
 */
const PG_STYLE: PgStyle = 'unnest';
/** Deliveries per transaction for the storage floor: what the receiver's group commit averaged at 50 connections. */
const FLOOR_GROUP = 25;
const PARTS = ['replay', 'steady', 'latency', 'sqlite', 'postgres', 'memory', 'receiver', 'auth', 'portfolio'] as const;
/** Run without --only: every part but the portfolio, which takes as long as the rest and runs when named. */
const DEFAULT_PARTS = PARTS.filter((p) => p !== 'portfolio');
type Part = (typeof PARTS)[number];

/** Everything measured, for --json (the smoke test reads it). */
export interface BenchFigures {
  mode: Mode['name'];
  replay?: ReplayFigures;
  latency?: LatencyFigures;
  sync: Partial<Record<Dialect, { rows: number; ours: number; raw: number; ratio: number; samples: SyncSamples }>>;
  memory?: { smallRows: number; largeRows: number; small: number; large: number; ratio: number };
  receiver?: { ours: LoadResult; bare: LoadResult; ratio: number; floor: FloorResult; bound: number; ratioToBound: number };
  auth?: AuthEconomy[];
  portfolio?: PortfolioFigures;
  skipped: string[];
  table: string;
}

const log = (line: string) => process.stderr.write(`${line}\n`);
/** Children to stop however main ends (a failed part must not leave a replay server keeping the process alive). */
const stopAtExit: Array<() => Promise<void>> = [];
const rate = (v: number) => `${formatNumber(v)} rows/s`;

async function main(): Promise<void> {
  const args = flags();
  const base = MODES[args.has('smoke') ? 'smoke' : args.has('quick') ? 'quick' : 'full'];
  // --rows N: the replay's readings per shape (experiments); such a run writes docs/performance.md only when asked.
  const mode: Mode = args.has('rows') ? { ...base, replayRows: Number(args.get('rows')) } : base;
  if (!Number.isInteger(mode.replayRows) || mode.replayRows < 1) throw new Error(`--rows ${args.get('rows')}: use a whole number of readings`);
  const only = args.get('only')?.split(',') ?? [...DEFAULT_PARTS];
  const unknown = only.filter((p) => !(PARTS as readonly string[]).includes(p));
  if (unknown.length) throw new Error(`--only: unknown part ${unknown.join(', ')}; use ${PARTS.join(', ')}`);
  const wants = (p: Part) => only.includes(p);
  const pageSize = Number(args.get('page-size') ?? PAGE_SIZE);
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > PAGE_SIZE) {
    throw new Error(`--page-size ${args.get('page-size')}: use a whole number from 1 to ${PAGE_SIZE} (SYNC_PAGE_SIZE's range)`);
  }
  // Parsed before anything runs, so a mistyped flag fails at once rather than after the earlier parts.
  const latencyPlan = wants('latency') ? latencySettings(args, mode.latency) : undefined;
  const started = performance.now();
  const loadAtStart = loadavg().map((l) => l.toFixed(1)).join(' ');
  const load = { connections: CONNECTIONS, durationSeconds: mode.receiverSeconds };
  const figures: BenchFigures = { mode: mode.name, sync: {}, skipped: [], table: '' };
  const rows: Row[] = [];
  let replayProfile: string | undefined;
  log(`bench (${mode.name}): ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}, load average ${loadAtStart}`);

  const pgProblem = wants('postgres') || wants('replay') || wants('steady') || wants('latency') || wants('portfolio') ? await postgresProblem(BENCH_PG_URL).then((problem) => problem && `${problem}; or set BENCH_DATABASE_URL`) : undefined;
  // The latency part records from its own sandbox while the replay part records from its two: it is ready when its
  // turn comes.
  const latencyStarted = latencyPlan ? LatencyBench.start(log, latencyPlan.rows) : undefined;
  if (latencyStarted) {
    latencyStarted.catch(() => undefined);
    stopAtExit.push(async () => (await latencyStarted.catch(() => undefined))?.close());
  }
  const pgStyle = (args.get('pg-style') ?? PG_STYLE) as PgStyle;
  if (pgStyle !== 'unnest' && pgStyle !== 'rows') throw new Error(`--pg-style ${pgStyle}: use unnest or rows`);
  if (wants('replay') || wants('steady') || args.has('profile')) {
    const dialects = (['sqlite', 'postgres'] as const).filter((d) => {
      if (d === 'postgres' && pgProblem) figures.skipped.push(`replay postgres: ${pgProblem}`);
      return !(d === 'postgres' && pgProblem);
    });
    log(`Replay: recording ${formatNumber(mode.replayRows)} readings per shape from the sandbox`);
    // The steady state's dist/ is built while the sandboxes record (both untimed), and ready before any timed run.
    const building = wants('steady') ? buildDist(log) : undefined;
    building?.catch(() => undefined);
    // The steady state alone reads only the small shape: the large one is recorded only for the replay rows.
    const replay = await ReplayBench.start(log, mode.replayRows, wants('replay') || args.has('profile') ? ['large', 'small'] : ['small']);
    try {
      await building;
    } catch (error) {
      await replay.close();
      throw error;
    }
    try {
      const r: ReplayFigures = { rows: mode.replayRows, runs: mode.replayRuns, steadyRuns: mode.steadyRuns, pgStyle, steadyWindow: replay.steady, dialects: {}, server: replay.serverCpuPerMillion() };
      for (const dialect of dialects) {
        const d: NonNullable<ReplayFigures['dialects']['sqlite']> = (r.dialects[dialect] = { shapes: {} });
        if (!wants('replay')) continue;
        for (const shape of SHAPES) {
          log(`Replay into ${dialect}, ${shape.label}: ${mode.replayRuns} run(s) of ours, minimal, minimal+overlap, ceiling, rotating`);
          d.shapes[shape.name] = await replay.compare(dialect, shape.name, mode.replayRuns, pgStyle, async (url, result) => {
            if (shape.name !== 'large') return;
            d.bytes = await replay.bytesPerReading(dialect, url, result.rows);
            log(`  ${dialect}: ${d.bytes.perReading.toFixed(1)} bytes per reading after ours (${d.bytes.breakdown})`);
          });
        }
      }
      r.server = replay.serverCpuPerMillion();
      if (wants('steady')) {
        for (const dialect of dialects) {
          log(`Steady state on ${dialect}: ${mode.steadyRuns} run(s) each of ours (CLI sync), minimal, node -e 0, rotating`);
          r.dialects[dialect]!.steady = await measureSteady(replay, dialect, mode.steadyRuns, log);
        }
      }
      if (wants('replay')) log(`Replay servers: ${r.server.perMillion.toFixed(3)} CPU s per million rows served (${formatNumber(r.server.rows)} rows, ${r.server.cpuSeconds.toFixed(2)} s)`);
      if (args.has('profile')) {
        log('Profiling (node --cpu-prof): ours and the minimal client on the replay server, large pages');
        replayProfile = await profileReplay(replay, dialects);
        process.stdout.write(`${replayProfile}\n\n`);
      }
      figures.replay = r;
      rows.push(...replayRows(r));
    } finally {
      await replay.close();
    }
  }

  // Their own block in docs/performance.md (see the write below); printed with the rest.
  const latencyTableRows: Row[] = [];
  if (latencyPlan && latencyStarted) {
    const dialects = mode.latency.dialects.filter((d) => {
      if (d === 'postgres' && pgProblem) figures.skipped.push(`latency postgres: ${pgProblem}`);
      return !(d === 'postgres' && pgProblem);
    });
    figures.latency = await measureLatency(latencyStarted, latencyPlan, dialects, log);
    latencyTableRows.push(...latencyRows(figures.latency));
  }

  const sync = wants('sqlite') || wants('postgres') || wants('memory') || args.has('profile') ? await SyncBench.start(log, pageSize) : undefined;
  let profile: string | undefined;
  try {
    let largeMemory: SyncResult[] | undefined;
    for (const dialect of ['sqlite', 'postgres'] as const) {
      if (!wants(dialect) || !sync) continue;
      const label = `Sync into ${dialect === 'sqlite' ? 'SQLite' : 'Postgres'}, ${formatNumber(mode.syncRows)} rows, end-to-end with the sandbox (not a limit)`;
      if (dialect === 'postgres' && pgProblem) {
        figures.skipped.push(`postgres: ${pgProblem}`);
        rows.push({ benchmark: label, ours: 'skipped', baseline: pgProblem, goal: '>= 0.90', met: undefined });
        continue;
      }
      log(`${label}: ${mode.runs} run(s) each, ours and raw alternating, pages of ${formatNumber(pageSize)}`);
      const samples = await sync.compare(dialect, mode.syncRows, mode.runs);
      const ours = median(samples.ours.map((s) => s.rowsPerSecond));
      const raw = median(samples.raw.map((s) => s.rowsPerSecond));
      figures.sync[dialect] = { rows: samples.rows, ours, raw, ratio: ours / raw, samples };
      rows.push({ benchmark: label, ours: rate(ours), baseline: `${rate(raw)} (raw ${dialect === 'sqlite' ? 'better-sqlite3' : 'postgres.js unnest'})`, ratio: ours / raw, goal: '>= 0.90', met: ours / raw >= 0.9 });
      if (dialect === 'sqlite' && samples.rows >= mode.memoryRows[1]) largeMemory = samples.ours;
    }

    if (wants('memory') && sync) {
      const [smallRows, largeRows] = mode.memoryRows;
      log(`Memory: peak RSS of our sync at ${formatNumber(smallRows)} and ${formatNumber(largeRows)} rows`);
      const small = await sync.memory(smallRows, mode.runs);
      // The SQLite comparison already ran our sync at the large size in fresh processes: its RSS is reused.
      const large = largeMemory ?? (await sync.memory(largeRows, mode.runs));
      const s = median(small.map((r) => r.maxRssBytes));
      const l = median(large.map((r) => r.maxRssBytes));
      figures.memory = { smallRows, largeRows, small: s, large: l, ratio: l / s };
      rows.push({ benchmark: `Memory: peak RSS at ${formatNumber(largeRows)} vs ${formatNumber(smallRows)} rows`, ours: mib(l), baseline: `${mib(s)} (our sync, ${formatNumber(smallRows)} rows)`, ratio: l / s, goal: '<= 1.25', met: l / s <= 1.25 });
    }

    if (args.has('profile') && sync) {
      log('Profiling (node --cpu-prof): our SQLite sync and the real receiver');
      profile = await profileAll(sync, mode.syncRows, load);
      process.stdout.write(`${profile}\n\n`);
    }
  } finally {
    await sync?.close();
  }

  if (wants('receiver')) {
    log(`Receiver: ${mode.receiverRuns} run(s) of ${mode.receiverSeconds} s at ${CONNECTIONS} connections, bare and real alternating`);
    const ours: LoadResult[] = [];
    const bare: LoadResult[] = [];
    for (let i = 0; i < mode.receiverRuns; i++) {
      for (const kind of i % 2 === 0 ? (['bare', 'real'] as const) : (['real', 'bare'] as const)) {
        const result = await measureReceiver(kind, load);
        if (result.failures > 0) throw new Error(`receiver benchmark (${kind}): ${result.failures} failed requests; the figure would be meaningless`);
        const current = result.currentAfterMs === undefined ? '' : `, aggregates current ${formatNumber(Math.round(result.currentAfterMs))} ms after the last`;
        log(`  ${kind.padEnd(4)} ${formatNumber(result.perSecond)}/s, p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms (${result.requests} requests${current})`);
        (kind === 'real' ? ours : bare).push(result);
      }
    }
    const pick = (list: LoadResult[]): LoadResult => {
      const m = median(list.map((r) => r.perSecond));
      return { ...list.reduce((a, b) => (Math.abs(b.perSecond - m) < Math.abs(a.perSecond - m) ? b : a)), perSecond: m };
    };
    const o = pick(ours);
    const b = pick(bare);
    // The same number of deliveries as the receiver stored in one run, so the database grows to the same size.
    const floorDeliveries = String(Math.max(1000, Math.round(o.perSecond * mode.receiverSeconds)));
    const floors: FloorResult[] = [];
    for (let i = 0; i < mode.receiverRuns; i++) {
      const floor = await runBench<FloorResult>('receiver-floor.ts', ['--deliveries', floorDeliveries, '--group', String(FLOOR_GROUP)]);
      log(`  storage floor ${formatNumber(floor.perSecond)} deliveries/s (${floor.deliveries} deliveries, ${FLOOR_GROUP} per transaction, raw better-sqlite3)`);
      floors.push(floor);
    }
    const floorPerSecond = median(floors.map((f) => f.perSecond));
    const floor = floors.find((f) => f.perSecond === floorPerSecond) ?? { ...floors[0]!, perSecond: floorPerSecond };
    // One thread does both: the bare server's HTTP work and the floor's SQLite work, one after the other.
    const bound = 1 / (1 / b.perSecond + 1 / floorPerSecond);
    figures.receiver = { ours: o, bare: b, ratio: o.perSecond / b.perSecond, floor, bound, ratioToBound: o.perSecond / bound };
    const show = (r: LoadResult, what: string) => `${formatNumber(r.perSecond)} ${what}/s, p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms`;
    rows.push({ benchmark: `Receiver: signed deliveries (10 items), ${CONNECTIONS} connections`, ours: `${show(o, 'deliveries')}${o.currentAfterMs === undefined ? '' : `; views current ${formatNumber(Math.round(o.currentAfterMs))} ms after the last`}`, baseline: `${show(b, 'req')} (bare node:http 204)`, ratio: o.perSecond / b.perSecond, goal: '>= 0.50', met: o.perSecond / b.perSecond >= 0.5 });
    rows.push({
      benchmark: 'Receiver storage floor alone (raw SQLite, no HTTP) vs bare',
      ours: `${formatNumber(floorPerSecond)} deliveries/s`,
      baseline: `${formatNumber(b.perSecond)} req/s (bare node:http 204)`,
      ratio: floorPerSecond / b.perSecond,
      goal: 'n/a (ceiling of one SQLite writer)',
      met: undefined,
    });
    rows.push({
      benchmark: 'Receiver against bare HTTP + storage floor on one thread',
      ours: `${formatNumber(o.perSecond)} deliveries/s`,
      baseline: `${formatNumber(bound)}/s (bare ${formatNumber(b.perSecond)}/s in series with raw SQLite ${formatNumber(floorPerSecond)}/s)`,
      ratio: o.perSecond / bound,
      goal: 'n/a (explains the gap)',
      met: undefined,
    });
  }

  if (wants('auth')) {
    log(`Auth economy: ${mode.auth.passes} passes, clock +${mode.auth.everyMs / 60_000} min each, expiresIn 900 s`);
    figures.auth = await measureAuthEconomy(mode.auth);
    for (const a of figures.auth) {
      rows.push({
        benchmark: `Auth calls per hour: ${a.label}`,
        ours: `${formatNumber(a.perHour, 1)} (${a.authCalls} in ${a.passes} passes)`,
        baseline: '-',
        ...(a.goalApplies ? { goal: '<= 6', met: a.perHour <= 6 } : { goal: 'n/a (1 per pass)', met: undefined }),
      });
    }
  }

  // Its own block in docs/performance.md too.
  const portfolioTableRows: Row[] = [];
  if (wants('portfolio')) {
    const dialects = (['postgres', 'sqlite'] as const).filter((d) => {
      if (d === 'postgres' && pgProblem) figures.skipped.push(`portfolio postgres: ${pgProblem}`);
      return !(d === 'postgres' && pgProblem);
    });
    figures.portfolio = await measurePortfolio({ ...mode.portfolio, explain: mode.portfolio.explain || args.has('explain') }, dialects, log);
    portfolioTableRows.push(...portfolioRows(figures.portfolio));
  }

  figures.table = renderTable([...rows, ...latencyTableRows, ...portfolioTableRows]);
  if (figures.portfolio?.explain) process.stdout.write(`${figures.portfolio.explain}\n\n`);
  const minutes = ((performance.now() - started) / 60_000).toFixed(1);
  process.stdout.write(`${figures.table}\n`);
  log(`bench (${mode.name}) finished in ${minutes} min`);

  if (args.has('json')) writeFileSync(args.get('json')!, JSON.stringify(figures, null, 2));
  const out = args.get('out') ?? fileURLToPath(new URL('../docs/performance.md', import.meta.url));
  const experiment = ['rows', ...LATENCY_FLAGS].some((f) => args.has(f));
  const standard = mode.name === 'full' && pageSize === PAGE_SIZE && !experiment;
  const write = !args.has('no-write') && (standard || args.has('write') || args.has('out'));
  if (write) {
    const machine = `${new Date().toISOString().slice(0, 10)}: ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}, load average ${loadAtStart} at the start and ${loadavg().map((l) => l.toFixed(1)).join(' ')} at the end`;
    const blocks: Record<string, string> = {};
    // The latency rows have their own block: a run of that part alone must not wipe the other rows, nor they it.
    if (rows.length) {
      const header = `Mode \`${mode.name}\`, ${machine}, medians of ${mode.replayRuns} run(s) (replay), ${mode.steadyRuns} (steady state), ${mode.runs} (end to end with the sandbox, memory) (receiver: ${mode.receiverRuns} x ${mode.receiverSeconds} s), ` +
        `${minutes} min in all${profile || replayProfile ? ' (profile included)' : ''}.`;
      blocks.results = `${header}\n\n${renderTable(rows)}`;
    }
    if (figures.latency) blocks.latency = `${latencyHeader(mode.name, machine, figures.latency)}\n\n${renderTable(latencyTableRows)}`;
    // The plans (--explain) are printed, not written: they are read once, where a figure misses.
    if (figures.portfolio) blocks.portfolio = `${portfolioHeader(mode.name, machine, figures.portfolio)}\n\n${renderTable(portfolioTableRows)}`;
    updateDoc(out, { ...blocks, ...(profile ? { profile } : {}), ...(replayProfile ? { 'replay-profile': replayProfile } : {}) });
    log(`wrote ${out}`);
  }
}

main()
  .catch((error: unknown) => {
    process.stderr.write(`bench failed: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exitCode = 1;
  })
  .finally(async () => {
    for (const stop of stopAtExit.splice(0)) await stop().catch(() => undefined);
  });
