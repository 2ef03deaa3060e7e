import { freshDatabase, PG_BASE_URL, type Dialect } from '../test/support/databases.ts';
import { runBench, spawnBench, type BenchChild } from './child.ts';
import type { SandboxInfo } from './sandbox-process.ts';
import type { SyncJob, SyncResult } from './sync-job.ts';

/**
 * The sync measurements: a sandbox in its own process serves every run; each run is a fresh worker process on a
 * fresh, migrated database. Ours and the raw baseline alternate (which goes first alternates too), so slow drift in
 * the machine's load hits both sides alike.
 */

/** 25 buildings x 50 floor spaces: one tick is 1,250 rows and a one-hour window (12 ticks) exactly 3 pages of 5,000. */
export const GEOMETRY = { buildings: 25, spaces: 50 };
/** The sandbox's maximum (SYNC_PAGE_SIZE accepts 1 to 5,000); `--page-size` measures others. */
export const PAGE_SIZE = 5000;
export const STEP_MS = 3_600_000;

/** The Postgres the Postgres measurements use: BENCH_DATABASE_URL, else the test suite's. */
export const BENCH_PG_URL = process.env.BENCH_DATABASE_URL ?? PG_BASE_URL;

/** A fixed, long-past data start keeps the data identical between runs; a younger clock falls back to 60 days ago. */
export function dataStart(): string {
  const fixed = Date.parse('2026-01-05T00:00:00.000Z');
  const latest = Date.now() - 60 * 86_400_000;
  return new Date(fixed < latest ? fixed : Math.floor(latest / 86_400_000) * 86_400_000).toISOString();
}

export interface SyncSamples {
  rows: number;
  ours: SyncResult[];
  raw: SyncResult[];
}

export class SyncBench {
  readonly #sandbox: BenchChild<SandboxInfo>;
  readonly #log: (line: string) => void;
  readonly #pageSize: number;

  private constructor(sandbox: BenchChild<SandboxInfo>, log: (line: string) => void, pageSize: number) {
    this.#sandbox = sandbox;
    this.#log = log;
    this.#pageSize = pageSize;
  }

  static async start(log: (line: string) => void, pageSize = PAGE_SIZE): Promise<SyncBench> {
    const sandbox = spawnBench<SandboxInfo>('sandbox-process.ts', [
      '--data-start', dataStart(), '--buildings', String(GEOMETRY.buildings), '--spaces', String(GEOMETRY.spaces),
    ]);
    await sandbox.message;
    return new SyncBench(sandbox, log, pageSize);
  }

  /** Whole ticks covering at least `rows` observations. */
  async job(rows: number, databaseUrl: string): Promise<SyncJob> {
    const sandbox = await this.#sandbox.message;
    const ticks = Math.max(1, Math.ceil(rows / sandbox.floorSpaces));
    const from = Date.parse(sandbox.dataStart);
    return {
      sandbox,
      from,
      to: from + ticks * sandbox.intervalMs,
      stepMs: STEP_MS,
      pageSize: this.#pageSize,
      databaseUrl,
      expectedRows: ticks * sandbox.floorSpaces,
    };
  }

  /** One run of `impl` on a fresh database; `nodeFlags` e.g. for --cpu-prof. */
  async once(impl: 'ours' | 'raw', dialect: Dialect, rows: number, nodeFlags: string[] = []): Promise<SyncResult> {
    const db = await freshDatabase(dialect, `${impl}_${dialect}`, { migrate: true, baseUrl: BENCH_PG_URL, schemaPrefix: 'osbench_' });
    try {
      const job = await this.job(rows, db.url);
      const result = await runBench<SyncResult>('sync-worker.ts', ['--impl', impl, '--job', JSON.stringify(job)], { nodeFlags });
      this.#log(`  ${dialect} ${impl.padEnd(4)} ${result.rows} rows in ${(result.ms / 1000).toFixed(2)} s = ${Math.round(result.rowsPerSecond)} rows/s, peak RSS ${Math.round(result.maxRssBytes / 1048576)} MiB`);
      return result;
    } finally {
      await db.drop();
    }
  }

  async compare(dialect: Dialect, rows: number, runs: number): Promise<SyncSamples> {
    const ours: SyncResult[] = [];
    const raw: SyncResult[] = [];
    for (let i = 0; i < runs; i++) {
      const order: Array<'ours' | 'raw'> = i % 2 === 0 ? ['raw', 'ours'] : ['ours', 'raw'];
      for (const impl of order) (impl === 'ours' ? ours : raw).push(await this.once(impl, dialect, rows));
    }
    return { rows: ours[0]!.rows, ours, raw };
  }

  /** Peak RSS of our sync (SQLite) at `rows`, each run in a fresh process. */
  async memory(rows: number, runs: number): Promise<SyncResult[]> {
    const results: SyncResult[] = [];
    for (let i = 0; i < runs; i++) results.push(await this.once('ours', 'sqlite', rows));
    return results;
  }

  close(): Promise<void> {
    return this.#sandbox.stop();
  }
}
