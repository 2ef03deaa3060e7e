import type { Clock } from '../clock.ts';
import type { Logger } from '../logger.ts';
import type { Lock, RunMode, Store } from '../store/types.ts';
import { closeAbandonedRuns } from './abandoned-runs.ts';
import type { GraphQLRequester } from './fetch.ts';
import type { AnyStream, StreamSettings } from './stream.ts';
import { runStream, stateKey, type ProgressEvent, type RunRequest, type StreamOutcome } from './stream-run.ts';

export type { RunRequest, StreamOutcome, ProgressEvent } from './stream-run.ts';

/** One customer to sync, with its own authenticated client. */
export interface SyncTarget {
  customerId: string;
  client: GraphQLRequester;
}

export interface SyncOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  settings: StreamSettings;
  streams: ReadonlyArray<AnyStream>;
  targets: ReadonlyArray<SyncTarget>;
  /** Parses a stream's document (src/api/documents.ts `loadDocument`); called once per stream. */
  loadDocument(path: string): unknown;
  request?: RunRequest;
  /** Aborted on SIGTERM/SIGINT: the current page commits, the run is recorded as interrupted. */
  signal?: AbortSignal;
  /** Customers synced at the same time. Default 4. */
  concurrency?: number;
  onProgress?(event: ProgressEvent): void;
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
  const streams = request.mode === 'backfill' ? options.streams.filter((s) => s.kind === 'incremental-window') : options.streams;
  // Parsed once up front: a broken document is a configuration problem, not one failure per customer.
  const documents = new Map(streams.map((s) => [s.name, options.loadDocument(s.document)]));

  const outcomes: StreamOutcome[][] = [];
  const queue = options.targets.map((target, index) => ({ target, index }));
  const worker = async () => {
    for (let item = queue.shift(); item; item = queue.shift()) {
      outcomes[item.index] = await syncCustomer(options, item.target, streams, documents, request);
    }
  };
  const concurrency = Math.max(1, Math.min(options.concurrency ?? 4, queue.length));
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { outcomes: outcomes.flat(), startedAt, finishedAt: options.clock.now() };
}

async function syncCustomer(
  options: SyncOptions,
  target: SyncTarget,
  streams: ReadonlyArray<AnyStream>,
  documents: Map<string, unknown>,
  request: RunRequest,
): Promise<StreamOutcome[]> {
  const modeOf = (s: AnyStream): RunMode =>
    request.mode === 'backfill' ? 'backfill' : s.kind === 'full-refresh' ? 'full' : 'incremental';
  const blank = (s: AnyStream, status: StreamOutcome['status'], extra: Partial<StreamOutcome> = {}): StreamOutcome => ({
    customerId: target.customerId,
    stream: stateKey(s.name, request),
    mode: modeOf(s),
    status,
    pages: 0,
    records: 0,
    windows: 0,
    watermark: null,
    ...extra,
  });
  const log = options.logger.child({ customer: target.customerId });

  // All of the customer's locks first, in a fixed order: a second process gets "locked" for the whole customer
  // instead of running half of its streams, and two processes can never wait on each other.
  const locks: Lock[] = [];
  try {
    for (const stream of streams) {
      const lock = await options.store.tryLock(target.customerId, stateKey(stream.name, request));
      if (!lock) {
        log.warn({ stream: stateKey(stream.name, request) }, 'another run holds the lock for this customer and stream: skipping this customer');
        return streams.map((s) => blank(s, 'locked'));
      }
      locks.push(lock);
    }
    for (const stream of streams) {
      // Holding the lock, any run of this pair still marked 'running' was left by a process that died (kill -9).
      await closeAbandonedRuns(options.store, target.customerId, stateKey(stream.name, request), options.clock.now(), log).catch((error: unknown) =>
        log.warn({ err: error, stream: stateKey(stream.name, request) }, 'could not close runs left running by an ended process'),
      );
    }
    const outcomes: StreamOutcome[] = [];
    for (const stream of streams) {
      if (options.signal?.aborted) {
        outcomes.push(blank(stream, 'interrupted', { note: 'not started' }));
        continue;
      }
      outcomes.push(
        await runStream(
          {
            store: options.store,
            clock: options.clock,
            logger: options.logger,
            settings: options.settings,
            signal: options.signal,
            customerId: target.customerId,
            client: target.client,
            document: documents.get(stream.name),
            onProgress: options.onProgress,
          },
          stream,
          request,
        ),
      );
    }
    return outcomes;
  } catch (error) {
    // Lock or run bookkeeping failed (database down): this customer fails, the others go on.
    log.error({ err: error }, 'customer sync failed');
    return streams.map((s) => blank(s, 'failed', { error }));
  } finally {
    for (const lock of locks.reverse()) {
      await lock.release().catch((error: unknown) => log.warn({ err: error }, 'could not release a lock'));
    }
  }
}
