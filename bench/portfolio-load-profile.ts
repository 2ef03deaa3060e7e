import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshDatabase } from '../test/support/databases.ts';
import { flags, runBench, spawnBench } from './child.ts';
import { formatFrames, summarize, topOwnTotal, topSelf } from './cpuprofile.ts';
import { postgresCpuSeconds } from './server-cpu.ts';
import { portfolioDefinitions, PORTFOLIO_LOAD_ENV, portfolioSandboxArgs } from './portfolio.ts';
import type { PortfolioLoad, PortfolioLoadResult } from './portfolio-worker.ts';
import type { SandboxInfo } from './sandbox-process.ts';
import { BENCH_PG_URL, dataStart } from './sync-bench.ts';

/**
 * Where the portfolio benchmark's load spends its time (docs/performance.md, "A portfolio's reports"): one load of
 * the benchmark's kind (hourly sensors, its settings and definitions file, listings first, the aggregates kept) into
 * a fresh Postgres (or SQLite) database, the sandbox and the sync each under node --cpu-prof, and the CPU seconds of the server's
 * processes (all of them: read it on an otherwise idle server). Prints wall time, the CPU of each party and their
 * profiles; writes nothing.
 *
 *   node --import tsx bench/portfolio-load-profile.ts [--buildings 10] [--spaces 50] [--days 30] [--aggregates kept|rebuilt]
 *     [--dialect postgres|sqlite] [--no-profile]
 */

const args = flags();
const buildings = Number(args.get('buildings') ?? 10);
const spaces = Number(args.get('spaces') ?? 50);
const days = Number(args.get('days') ?? 30);
/** `kept`: by every commit (the product today); `rebuilt`: a load keeping none, then `aggregates rebuild` (timed apart). */
const aggregates = args.get('aggregates') === 'rebuilt' ? 'rebuilt' : 'kept';
/** --no-profile: the load alone, timed (a full-size load's profiles would be hundreds of MB). */
const profiled = !args.has('no-profile');
const profileFlags = (dir: string) => (profiled ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : []);
const dialect = args.get('dialect') === 'sqlite' ? 'sqlite' : 'postgres';
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

function show(title: string, dir: string): void {
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) return void console.log(`\n${title}: no profile written`);
  const profile = summarize(join(dir, file));
  const busy = profile.frames.filter((f) => f.name !== '(idle)' && f.name !== '(program)').reduce((a, f) => a + f.selfMs, 0);
  console.log(`\n## ${title}: ${(busy / 1000).toFixed(1)} s sampled busy of ${(profile.totalMs / 1000).toFixed(1)} s\nby self time:`);
  console.log(formatFrames(topSelf(profile.frames, 15), 'self').join('\n'));
  console.log('our frames by total time:');
  console.log(formatFrames(topOwnTotal(profile.frames, 12), 'total').join('\n'));
}

const sandboxDir = mkdtempSync(join(tmpdir(), 'occupancy-sync-loadprofile-sandbox-'));
const syncDir = mkdtempSync(join(tmpdir(), 'occupancy-sync-loadprofile-sync-'));
const definitions = portfolioDefinitions('60m');
const sandbox = spawnBench<SandboxInfo>('sandbox-process.ts', portfolioSandboxArgs(dataStart(), { buildings, spacesPerBuilding: spaces, days }), {
  nodeFlags: profileFlags(sandboxDir),
});
const db = await freshDatabase(dialect, 'loadprofile', { migrate: true, baseUrl: BENCH_PG_URL, schemaPrefix: 'osbench_' });
try {
  const info = await sandbox.message;
  const from = Date.parse(info.dataStart);
  const to = from + days * 86_400_000;
  const expectedRows = days * 24 * info.floorSpaces;
  const load: PortfolioLoad = { sandbox: info, from, to, databaseUrl: db.url, maintain: aggregates === 'kept', restart: false, expectedRows, env: { ...PORTFOLIO_LOAD_ENV, DEFINITIONS_FILE: definitions.file } };
  if (aggregates === 'rebuilt') load.rebuild = { from: day(from - 86_400_000), to: day(to + 86_400_000) };
  const pgBefore = postgresCpuSeconds();
  const started = performance.now();
  const result = await runBench<PortfolioLoadResult>('portfolio-worker.ts', ['--job', JSON.stringify(load)], { nodeFlags: profileFlags(syncDir), timeoutMs: 60 * 60_000 });
  const wall = (performance.now() - started) / 1000;
  const pgAfter = postgresCpuSeconds();
  const pg = pgBefore === undefined || pgAfter === undefined ? 'n/a' : `${(pgAfter - pgBefore).toFixed(1)} s`;
  console.log(`${info.floorSpaces} floor spaces x ${days} days: ${result.rows} readings; backfill ${(result.ms / 1000).toFixed(1)} s = ${Math.round(result.rows / (result.ms / 1000))} readings/s (process ${wall.toFixed(1)} s)`);
  if (result.rebuildMs !== undefined) console.log(`aggregates rebuilt after it in ${(result.rebuildMs / 1000).toFixed(1)} s (${result.buckets} buckets)`);
  console.log(`CPU: sync ${(result.cpuMs / 1000).toFixed(1)} s (process), Postgres ${pg} (every postgres process), peak RSS sync ${Math.round(result.maxRssBytes / 1048576)} MiB`);
} finally {
  await sandbox.stop();
  await db.drop();
  definitions.remove();
}
if (profiled) {
  show('Sandbox', sandboxDir);
  show('Sync', syncDir);
}
rmSync(sandboxDir, { recursive: true, force: true });
rmSync(syncDir, { recursive: true, force: true });
