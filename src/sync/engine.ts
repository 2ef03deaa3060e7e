import type { Clock } from '../clock.ts';
import { CustomerMismatchError } from '../errors.ts';
import { globalSecrets } from '../logger.ts';
import { toIsoUtc } from '../time.ts';
import { inSpan } from '../tracing.ts';
import type { Logger } from '../logger.ts';
import type { Lock, RunMode, Store } from '../store/types.ts';
import type { GraphQLRequester } from './fetch.ts';
import type { EngineSettings } from './settings.ts';
import type { AnyStream } from './stream.ts';
import { runStream, stateKey } from './run/stream.ts';
import type { ProgressEvent, RunRequest, StreamOutcome } from './run/types.ts';
import { emptyCounts } from './run/parts.ts';

export type { RunRequest, StreamOutcome, ProgressEvent } from './run/types.ts';

/** One customer to sync, with its own authenticated client. */
export interface SyncTarget {
  customerId: string;
  client: GraphQLRequester;
  /** The API key's name, for messages. */
  apiKey?: string;
}

export interface SyncOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  settings: EngineSettings;
  streams: ReadonlyArray<AnyStream>;
  targets: ReadonlyArray<SyncTarget>;
  /** Parses a stream's document (src/api/documents.ts `loadDocument`); called once per stream. */
  loadDocument(path: string): unknown;
  request?: RunRequest;
  /** Aborted on SIGTERM/SIGINT: the current page commits, the run is recorded as interrupted. */
  signal?: AbortSignal;
  /** Customers synced at the same time. Default: settings.concurrency (SYNC_CONCURRENCY). */
  concurrency?: number;
  onProgress?(event: ProgressEvent): void;
  /**
   * What the API offers of the streams, asked once a customer's credentials are verified (so an unreachable API or a
   * refused key costs no request of its own). Undefined, or an answer of undefined: every stream as declared.
   */
  offer?(target: SyncTarget, signal: AbortSignal | undefined): Promise<StreamOffer | undefined>;
}

/** How the API's offer changes the streams (src/app/offered-streams.ts says each change in one line). */
export interface StreamOffer {
  /** Streams the API cannot answer, by name: not run, no outcome. */
  skipped: ReadonlySet<string>;
  /** Streams run in another form, by name: the stream (its record) and its parsed document. */
  adapted: ReadonlyMap<string, { stream: AnyStream; document: unknown }>;
}

export interface SyncReport {
  outcomes: StreamOutcome[];
  startedAt: number;
  finishedAt: number;
}

/**
 * Runs every stream for every customer. Customers are independent: one failing (bad secret, API down) does not
 * stop the others; every outcome is collected and the caller derives the exit code (see `exitCodeOf`).
 */
export async function runSync(options: SyncOptions): Promise<SyncReport> {
  const startedAt = options.clock.now();
  const request = options.request ?? { mode: 'incremental' };
  const planned = planStreams(options.streams, request);
  // Parsed once up front: a broken document is a configuration problem, not one failure per customer.
  const documents = new Map(planned.map((p) => [p.stream.name, options.loadDocument(p.stream.document)]));
  // The streams' own tables made or evolved before any page, once for every customer: a declaration the stored table
  // cannot follow (a column's type changed) fails the run here, one line per change (docs/tables.md).
  const tables = planned.flatMap((p) => (p.stream.table ? [p.stream.table] : []));
  if (tables.length > 0) await options.store.declareTables(tables);

  const outcomes: StreamOutcome[][] = [];
  const queue = options.targets.map((target, index) => ({ target, index }));
  const worker = async () => {
    for (let item = queue.shift(); item; item = queue.shift()) {
      outcomes[item.index] = await syncCustomer(options, item.target, planned, documents);
    }
  };
  const concurrency = Math.max(1, Math.min(options.concurrency ?? options.settings.concurrency ?? 4, queue.length));
  const attributes = { 'sync.mode': request.mode, 'sync.customers': options.targets.length, 'sync.streams': planned.map((p) => p.key).join(',') };
  await inSpan('sync.run', attributes, async (span) => {
    await Promise.all(Array.from({ length: concurrency }, worker));
    const all = outcomes.flat();
    span.setAttributes({ 'sync.failed': all.filter((o) => o.status === 'failed').length, 'sync.records': all.reduce((n, o) => n + o.records, 0) });
  });
  return { outcomes: outcomes.flat(), startedAt, finishedAt: options.clock.now() };
}

/** One stream as this run will run it. */
interface PlannedStream {
  stream: AnyStream;
  request: RunRequest;
  /** State and lock key. */
  key: string;
  mode: RunMode;
  /** A lock another run holds skips this stream (it is refreshed by that run) instead of the whole customer. */
  optional: boolean;
}

/**
 * A backfill loads its range of the windowed streams and refreshes the full ones, so a backfill into an
 * empty database leaves a complete one (buildings included). Those refreshes are ordinary full runs under their own
 * key; when a concurrent `sync` holds their lock, it is refreshing them already.
 */
export function planStreams(streams: ReadonlyArray<AnyStream>, request: RunRequest): PlannedStream[] {
  return streams.map((stream) => {
    if (stream.kind === 'full') {
      return { stream, request: { mode: 'incremental' }, key: stream.name, mode: 'full', optional: request.mode === 'backfill' };
    }
    return { stream, request, key: stateKey(stream.name, request), mode: request.mode === 'backfill' ? 'backfill' : 'incremental', optional: false };
  });
}

/** An outcome of a stream that did not run (locked, skipped, failed before it started, interrupted before it). */
function blankOutcome(target: SyncTarget, p: PlannedStream, status: StreamOutcome['status'], extra: Partial<StreamOutcome> = {}): StreamOutcome {
  return {
    customerId: target.customerId,
    stream: p.stream.name,
    stateKey: p.key,
    mode: p.mode,
    status,
    ...emptyCounts(null),
    ...extra,
  };
}

async function syncCustomer(
  options: SyncOptions,
  target: SyncTarget,
  planned: ReadonlyArray<PlannedStream>,
  documents: Map<string, unknown>,
): Promise<StreamOutcome[]> {
  const blank = (p: PlannedStream, status: StreamOutcome['status'], extra: Partial<StreamOutcome> = {}) => blankOutcome(target, p, status, extra);
  const log = options.logger.child({ customer: target.customerId });
  const locks: Lock[] = [];
  try {
    const skipped = await lockAll(options, target, planned, locks, log);
    if (!skipped) return planned.map((q) => blank(q, 'locked'));
    const running = planned.filter((p) => !skipped.has(p));
    await closeAbandoned(options, target, running, log);
    // Before any data is written: the credentials must belong to the customer their data is filed under. A failure
    // here (a wrong secret too) is recorded once per stream, so status and /healthz show it like any failed run.
    try {
      await verifyCustomer(target, options.signal);
    } catch (error) {
      if (options.signal?.aborted) return planned.map((p) => blank(p, 'interrupted', { note: 'not started' }));
      const message = globalSecrets.scrub((error as Error)?.message ?? String(error));
      log.error({ err: error }, message);
      for (const p of running) {
        const now = toIsoUtc(options.clock.now());
        const run = await options.store.startRun({ customerId: target.customerId, stateKey: p.key, mode: p.mode, startedAt: now });
        await options.store.finishRun(run, { status: 'failed', finishedAt: now, error: message });
      }
      return planned.map((p) => (skipped.has(p) ? blank(p, 'skipped', { note: 'locked by a concurrent run' }) : blank(p, 'failed', { error })));
    }
    const offer = await options.offer?.(target, options.signal);
    const outcomes: StreamOutcome[] = [];
    for (const p of planned) {
      const adapted = offer?.adapted.get(p.stream.name);
      if (skipped.has(p)) outcomes.push(blank(p, 'skipped', { note: 'a concurrent run holds its lock and refreshes it' }));
      else if (options.signal?.aborted) outcomes.push(blank(p, 'interrupted', { note: 'not started' }));
      else if (offer?.skipped.has(p.stream.name)) continue;
      else if (adapted) outcomes.push(await runOne(options, target, { ...p, stream: adapted.stream }, adapted.document));
      else outcomes.push(await runOne(options, target, p, documents.get(p.stream.name)));
    }
    return outcomes;
  } catch (error) {
    // Lock or run bookkeeping failed (database down): this customer fails, the others go on.
    log.error({ err: error }, 'customer sync failed');
    return planned.map((p) => blank(p, 'failed', { error }));
  } finally {
    for (const lock of locks.reverse()) {
      await lock.release().catch((error: unknown) => log.warn({ err: error }, 'could not release a lock'));
    }
  }
}

/**
 * All of the customer's locks first, in a fixed order, into `locks`: a second process gets "locked" for the whole
 * customer instead of running half of its streams, and two processes can never wait on each other. Returns the
 * optional streams whose lock another run holds (skipped), or undefined when a lock that is not optional is held.
 */
async function lockAll(options: SyncOptions, target: SyncTarget, planned: ReadonlyArray<PlannedStream>, locks: Lock[], log: Logger): Promise<Set<PlannedStream> | undefined> {
  const skipped = new Set<PlannedStream>();
  for (const p of planned) {
    const lock = await options.store.tryLock(target.customerId, p.key);
    if (!lock && p.optional) {
      skipped.add(p);
      continue;
    }
    if (!lock) {
      log.warn({ stream: p.stream.name, stateKey: p.key }, 'another run holds the lock for this customer and stream: skipping this customer');
      return undefined;
    }
    locks.push(lock);
  }
  return skipped;
}

/** Holding the lock, any run of a pair still marked 'running' was left by a process that died (kill -9). */
async function closeAbandoned(options: SyncOptions, target: SyncTarget, running: ReadonlyArray<PlannedStream>, log: Logger): Promise<void> {
  for (const p of running) {
    try {
      const runs = await options.store.closeAbandonedRuns(target.customerId, p.key, toIsoUtc(options.clock.now()));
      if (runs.length > 0) log.warn({ stream: p.stream.name, stateKey: p.key, runs }, `marked ${runs.length} run(s) left 'running' by an ended process as interrupted`);
    } catch (error) {
      log.warn({ err: error, stream: p.stream.name, stateKey: p.key }, 'could not close runs left running by an ended process');
    }
  }
}

/** Runs one planned stream and times it. */
async function runOne(options: SyncOptions, target: SyncTarget, p: PlannedStream, document: unknown): Promise<StreamOutcome> {
  const started = options.clock.now();
  const outcome = await runStream(
    {
      store: options.store,
      clock: options.clock,
      logger: options.logger,
      settings: options.settings,
      signal: options.signal,
      customerId: target.customerId,
      client: target.client,
      document,
      onProgress: options.onProgress,
    },
    p.stream,
    p.request,
  );
  return { ...outcome, durationMs: options.clock.now() - started };
}

/**
 * Compares the customer the credentials belong to (a token claim, when the platform gives one) with the configured
 * one. The client caches its answer, so this costs one token per process and customer, which the sync needs anyway.
 */
async function verifyCustomer(target: SyncTarget, signal: AbortSignal | undefined): Promise<void> {
  const actual = await target.client.customerOf?.(signal ? { signal } : {});
  if (actual !== undefined && actual.toLowerCase() !== target.customerId.toLowerCase()) {
    throw new CustomerMismatchError(target.customerId, actual, target.apiKey ?? '(unknown key)');
  }
}
