import { readFileSync } from 'node:fs';
import { flags, report, required } from './child.ts';
import { readOverlapped, readParallel, readSequential, type ReadJob } from './minimal-client.ts';
import { countReadings, openWriter, target, type PgStyle, type Reading } from './raw-writers.ts';
import { threadWriter } from './sqlite-writer-thread.ts';
import { mainThreadCpuMs } from './thread-cpu.ts';
import type { SyncJob } from './sync-job.ts';

/**
 * One replay measurement in a fresh process, on a fresh migrated database:
 *
 *   --impl ours | minimal | overlap | parallel | ceiling | load  --job '<ReplayJob JSON>'
 *
 * - ours: the real backfill (bench/ours.ts), timed from before resolveConfig to after the store closed.
 * - minimal: bench/minimal-client.ts one page at a time, bench/raw-writers.ts one transaction per page.
 * - overlap: the same, the fetch of page n+1 overlapping the write of page n (SQLite: writer on a worker thread).
 * - parallel: the minimal client with job.inFlight windows in flight at once, writes one at a time (issue 25).
 * - ceiling: the same pages fetched and parsed before the clock starts, then only the writes: no network.
 * - load: the minimal client, untimed use (steady state's pre-loaded readings).
 *
 * CPU is process.cpuUsage() (user + system, every thread) over the timed part, and the main thread's alone where Linux
 * tells it (/proc/thread-self/stat): the rest is the other threads' (a SQLite writer, checkpoints, zlib, the GC's
 * helpers). Peak RSS is the process's maxRSS.
 * Every run then counts the stored readings: a run that missed any fails instead of producing a figure.
 */

export type Impl = 'ours' | 'minimal' | 'overlap' | 'parallel' | 'ceiling' | 'load';

export interface ReplayJob extends SyncJob {
  pgStyle: PgStyle;
  /** Readings already in the database before the run (the steady state's pre-load); added to expectedRows. */
  storedBefore?: number;
  /** parallel: windows in flight at once. */
  inFlight?: number;
}

export interface ReplayResult {
  impl: Impl;
  rows: number;
  ms: number;
  rowsPerSecond: number;
  cpuMs: number;
  /** Client CPU seconds (user + system) per million rows. */
  cpuPerMillion: number;
  /** The main thread's share of cpuMs (Linux /proc/thread-self/stat, in clock ticks of 10 ms), where available. */
  mainCpuMs?: number;
  /** Bytes written over the timed part (Linux /proc/self/io wchar), where available. */
  writtenBytes?: number;
  maxRssBytes: number;
}

const args = flags();
const impl = required(args, 'impl') as Impl;
const job = JSON.parse(required(args, 'job')) as ReplayJob;
const read: ReadJob = { url: job.sandbox.url, apiKey: job.sandbox.apiKey, apiSecret: job.sandbox.apiSecret, from: job.from, to: job.to, stepMs: job.stepMs, pageSize: job.pageSize };
const customerId = job.sandbox.customerId;

function writerFor(overlap: boolean) {
  const t = target(job.databaseUrl);
  return overlap && t.dialect === 'sqlite' ? threadWriter(t.path, customerId) : openWriter(job.databaseUrl, customerId, job.pgStyle);
}

// Our sources are imported only for ours (the baselines' processes never load them, so their peak RSS is their own),
// and before the clock starts: module loading is not part of the sync, as with a static import.
const ours = impl === 'ours' ? await import('./ours.ts') : undefined;
let preloaded: Reading[][] = [];
if (impl === 'ceiling') await readSequential(read, (nodes) => void preloaded.push(nodes));

/** Bytes the process handed to write(2) and pwrite(2) (Linux): WAL frames plus the pages checkpoints copy. */
const writtenBytes = (): number | undefined => {
  try {
    return Number(/^wchar: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))?.[1]);
  } catch {
    return undefined;
  }
};
const main0 = mainThreadCpuMs();
const written0 = writtenBytes();
const cpu0 = process.cpuUsage();
const t0 = performance.now();
if (ours) {
  await ours.oursBackfill(job);
} else {
  const writer = writerFor(impl === 'overlap');
  try {
    if (impl === 'minimal' || impl === 'load') await readSequential(read, (nodes) => writer.write(nodes));
    else if (impl === 'overlap') await readOverlapped(read, async (nodes) => writer.write(nodes));
    else if (impl === 'parallel') await readParallel(read, job.inFlight ?? 1, (nodes) => writer.write(nodes));
    else if (impl === 'ceiling') for (const nodes of preloaded) await writer.write(nodes);
    else throw new Error(`--impl must be ours, minimal, overlap, parallel, ceiling or load, got ${impl}`);
  } finally {
    await writer.close();
  }
}
const ms = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
const main1 = mainThreadCpuMs();
const maxRssBytes = process.resourceUsage().maxRSS * 1024;
const written1 = writtenBytes();
preloaded = [];

const stored = await countReadings(job.databaseUrl);
const expected = job.expectedRows + (job.storedBefore ?? 0);
if (stored !== expected) throw new Error(`${impl}: the database holds ${stored} readings, expected ${expected}`);
const rows = job.expectedRows;
const cpuMs = (cpu.user + cpu.system) / 1000;
report({ impl, rows, ms, rowsPerSecond: (rows / ms) * 1000, cpuMs, cpuPerMillion: (cpuMs / 1000) * (1_000_000 / rows), maxRssBytes, ...(main0 !== undefined && main1 !== undefined && { mainCpuMs: main1 - main0 }), ...(written0 !== undefined && written1 !== undefined && { writtenBytes: written1 - written0 }) } satisfies ReplayResult);
