import { EventEmitter } from 'node:events';
import { Logger as GraphileLogger, makeWorkerUtils, run, type Runner, type Task, type WorkerEvents, type WorkerUtils } from 'graphile-worker';
import { messageOf } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { openJobQueueSql, type JobLocks, type JobQueueSql } from '../store/job-queue.ts';
import type { AnyStream } from '../sync/stream.ts';
import { PARKED_AFTER_FAILURES, retryDelayMs } from './backoff.ts';
import { settlesWithin, STOP_LIMIT_MS } from './scheduler.ts';
import type { SyncPass } from './sync-pass.ts';

/**
 * The Postgres schedule: every run of a (customer, stream) is a job in graphile-worker's queue, in the database the
 * data goes to. Every `serve` instance works the queue with SYNC_CONCURRENCY jobs at once; on each SYNC_CRON tick it
 * adds the interval's jobs, one per customer and stream under a job key, so a job still waiting, running or backing
 * off is never queued a second time (job_key_mode `unsafe_dedupe`), whichever instance ticks first.
 *
 * A failing run throws, so graphile-worker retries that one job after exp(min(attempts, 10)) seconds while every other
 * customer goes on; src/app/backoff.ts applies the same delays to the in-process schedule of SQLite. Jobs never run
 * out of attempts (the back-off levels off at about 6 hours), so a parked customer comes back on its own once its API
 * answers again. The per-stream advisory lock stays the guard against two runs of one stream (a cron `sync` beside the
 * daemon, a job whose worker was presumed dead).
 *
 * graphile-worker releases a job whose worker died only after 4 hours. Here a job locked for longer than
 * `staleAfterMs` whose job lock no session holds is released within `staleAfterMs` more, so a killed instance's
 * customers are picked up by the others within the interval. The job lock (src/store/job-queue.ts JobLocks) is taken
 * as the job starts and held to its very end, on a session of its own: it dies with its process (SIGKILL included),
 * and nothing a live job does without it can pass for death. The stream's run lock alone would not do: a job holds
 * it only while the engine runs, not while the aggregates are refreshed before and after, which can wait for a
 * building's lock for as long as the lock_timeout (30 s), well past `staleAfterMs`.
 */

export const SYNC_TASK = 'occupancy_sync_stream';
/** How long the queue's connection pool may take to close at a stop (the store's close is bounded alike). */
const RELEASE_LIMIT_MS = 2_000;
/** graphile-worker's attempts are a smallint; a job that may retry for ever never becomes permanently failed. */
const MAX_ATTEMPTS = 32_767;

export interface QueueOptions {
  /** The postgres:// DATABASE_URL, `?schema=` included (the queue's own schema is derived from it). */
  databaseUrl: string;
  pass: SyncPass;
  customerIds: ReadonlyArray<string>;
  streams: ReadonlyArray<AnyStream>;
  concurrency: number;
  logger: Logger;
  /**
   * A job locked this long whose job lock is free belongs to a dead worker; checked this often too. Default 10 s:
   * a live worker takes the job lock within milliseconds of taking the job and holds it to the end.
   */
  staleAfterMs?: number;
  /** How often a worker looks for jobs whose time has come (retries), besides LISTEN/NOTIFY. Default 2 s. */
  pollIntervalMs?: number;
}

export interface Queue {
  /** Adds the interval's jobs (those not queued already) and releases jobs of dead workers. */
  tick(): Promise<{ added: number; released: number }>;
  /** Waiting, running and parked jobs, for status and tests. */
  jobs(): Promise<QueueJob[]>;
  /** Stops taking jobs, lets the running ones finish their current page, closes the pool. */
  stop(): Promise<void>;
}

export interface QueueJob {
  customerId: string;
  stream: string;
  attempts: number;
  runAt: string;
  locked: boolean;
  lastError: string | null;
  parked: boolean;
}

/** The queue's schema: beside the data's own, so datasets in separate schemas keep separate queues. */
export function queueSchema(dataSchema: string | undefined): string {
  return dataSchema ? `${dataSchema}_queue` : 'occupancy_sync_queue';
}

export function jobKey(customerId: string, stream: string): string {
  return `sync:${customerId}:${stream}`;
}

function payloadOf(raw: unknown): { customerId: string; stream: string } | undefined {
  const p = raw as { customerId?: unknown; stream?: unknown } | null;
  return p && typeof p.customerId === 'string' && typeof p.stream === 'string' ? { customerId: p.customerId, stream: p.stream } : undefined;
}

function workerLogger(logger: Logger): GraphileLogger {
  return new GraphileLogger(() => (level, message, meta) => {
    const log = logger.child({ component: 'queue' });
    if (level === 'error') log.error(meta ?? {}, message);
    else if (level === 'warning') log.warn(meta ?? {}, message);
    else log.debug(meta ?? {}, message);
  });
}

/**
 * graphile-worker stops its workers when any schema of the database installs its tables or changes them in a breaking
 * way: its `worker:migrate` notification names no schema. So a second dataset's first start (its queue's schema
 * installed) stopped the workers of every other dataset on the database, their jobs left queued and the process
 * alive. A runner that ends without our stop is started again on this schema, which run() checks anew: a breaking
 * change of this schema's own tables by a newer version still stops it, with one line.
 */
function keepRunning(first: Runner, on: { start(): Promise<Runner>; stopped(): boolean; replaced(next: Runner): void; logger: Logger; schema: string }): void {
  // Only a stop graphile-worker chose is undone: a runner that failed (its promise rejected) says so and stays down,
  // so nothing restarts in a loop.
  const watch = (runner: Runner) => {
    void runner.promise.then(
      () => restart(),
      (error: unknown) => {
        if (!on.stopped()) on.logger.error({ err: error, schema: on.schema }, `the queue's workers failed on ${on.schema}: ${messageOf(error)}`);
      },
    );
  };
  const restart = async () => {
    // The exit code graphile-worker sets for a stop of its own (57): the process goes on, or ends by our stop with
    // its own code.
    if (process.exitCode === 57) process.exitCode = undefined;
    if (on.stopped()) return;
    try {
      const next = await on.start();
      if (on.stopped()) {
        await next.stop();
        return;
      }
      on.replaced(next);
      on.logger.warn({ schema: on.schema }, `graphile-worker stopped the queue's workers (some schema of this database installed or changed its queue tables, or a job's end could not be written: its line is above); started again on ${on.schema}`);
      watch(next);
    } catch (error) {
      on.logger.error({ err: error, schema: on.schema }, `the queue's workers stopped and could not start again on ${on.schema}: ${messageOf(error)}`);
    }
  };
  watch(first);
}

/** graphile-worker's runner of the sync task, on the queue's schema (migrated first). */
async function startRunner(common: { connectionString: string; schema: string; logger: ReturnType<typeof workerLogger> }, utils: WorkerUtils, options: QueueOptions, task: Task, events: WorkerEvents): Promise<Runner> {
  await utils.migrate();
  return run({
    ...common,
    events,
    concurrency: options.concurrency,
    // A job holds a connection only to be taken and completed, not while it runs: a few connections serve many jobs
    // (three instances of 32 jobs would otherwise need a third of Postgres's default 100 connections each).
    maxPoolSize: Math.min(options.concurrency + 2, 12),
    noHandleSignals: true,
    pollInterval: options.pollIntervalMs ?? 2_000,
    // A job's completion or failure is written through the batcher (at once: a delay of 0), not as a promise the
    // worker drops: a stop waits for the batcher before it ends the pool, and a write that fails is logged and stops
    // the workers (keepRunning starts them again) instead of rejecting with nobody listening. Unbatched, the failure
    // of the job a SIGTERM interrupted was written after the pool ended ("Cannot use a pool after calling end on the
    // pool", graphile/worker#223): an unhandled rejection, and serve exited 1 instead of 0 (docs/operations.md).
    preset: { worker: { completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
    taskList: { [SYNC_TASK]: task },
  });
}

/**
 * Runners whose workers graphile-worker began to stop by itself (worker:migrate, keepRunning above). Their jobs still
 * run, and runner.stop() does not wait for them: with the workers already stopping it goes straight to ending the
 * pool, under the jobs' feet (their run's end and the job's own not written). A stop waits for such a runner to
 * finish by itself instead. Seen by the `pool:gracefulShutdown` event of an emitter given to each runner, before our
 * stop was asked for.
 */
function watchSelfStops() {
  let asked = false;
  const runners = new WeakSet<Runner>();
  return {
    /** Our stop began: a graceful shutdown from here on is ours. */
    asked: () => void (asked = true),
    stoppingByItself: (runner: Runner) => runners.has(runner),
    async start(startWith: (events: WorkerEvents) => Promise<Runner>): Promise<Runner> {
      const events = new EventEmitter() as WorkerEvents;
      let started: Runner | undefined;
      let early = false;
      events.on('pool:gracefulShutdown', () => {
        if (asked) return;
        if (started) runners.add(started);
        else early = true;
      });
      started = await startWith(events);
      if (early) runners.add(started);
      return started;
    },
  };
}

export async function startQueue(options: QueueOptions): Promise<Queue> {
  const queueSql = await openJobQueueSql(options.databaseUrl);
  const { dataSchema } = queueSql;
  const schema = queueSchema(dataSchema);
  const logger = options.logger.child({ component: 'queue' });
  const staleAfterMs = options.staleAfterMs ?? 10_000;
  const abort = new AbortController();
  const jobLocks = await queueSql.openJobLocks();
  const common = { connectionString: jobLocks.workerUrl, schema, logger: workerLogger(options.logger) };
  const utils: WorkerUtils = await makeWorkerUtils(common).catch(async (error: unknown) => {
    await jobLocks.close();
    throw error;
  });
  const selfStops = watchSelfStops();
  const start = () => selfStops.start((events) => startRunner(common, utils, options, syncTask(options.pass, jobLocks, abort.signal, logger), events));
  let runner: Runner | undefined;
  try {
    runner = await start();
  } catch (error) {
    await Promise.resolve(utils.release()).catch(() => {});
    await jobLocks.close();
    throw error;
  }

  let stopping: Promise<void> | undefined;
  keepRunning(runner, { start, stopped: () => stopping !== undefined, replaced: (next) => (runner = next), logger, schema });
  // Between ticks too, so a killed instance's jobs move to the others within seconds, not at the next interval.
  const reaper = setInterval(() => {
    releaseDeadWorkers(utils, queueSql, schema, staleAfterMs, logger).catch((error: unknown) => logger.warn({ err: error }, 'could not look for jobs of dead workers'));
  }, staleAfterMs);
  reaper.unref();
  const pairs = options.customerIds.flatMap((customerId) => options.streams.map((s) => ({ customerId, stream: s.name, key: jobKey(customerId, s.name) })));

  return {
    async tick() {
      const added = await utils.withPgClient((client) => queueSql.addJobs(client, schema, SYNC_TASK, pairs, MAX_ATTEMPTS));
      const released = await releaseDeadWorkers(utils, queueSql, schema, staleAfterMs, logger);
      return { added, released };
    },
    async jobs() {
      return utils.withPgClient(async (client) => {
        return (await queueSql.jobs(client, schema, SYNC_TASK)).map((r) => {
          const [, customerId = '', stream = ''] = /^sync:([^:]*):(.*)$/.exec(r.key) ?? [];
          return {
            customerId,
            stream,
            attempts: r.attempts,
            runAt: r.runAt.toISOString(),
            locked: r.locked,
            lastError: r.lastError,
            parked: r.attempts >= PARKED_AFTER_FAILURES,
          };
        });
      });
    },
    stop() {
      selfStops.asked();
      stopping ??= (async () => {
        clearInterval(reaper);
        abort.abort();
        // Bounded: jobs whose database or API does not answer are left (their page not committed is read again by
        // the next run; graphile-worker's lock on them ends with this process's sessions), and so is a pool whose
        // goodbye the server never answers.
        const current = runner;
        const ending = current === undefined ? Promise.resolve() : selfStops.stoppingByItself(current) ? current.promise.catch(() => {}) : current.stop();
        const stopped = await settlesWithin(ending, STOP_LIMIT_MS);
        if (!stopped) logger.warn({ waitedMs: STOP_LIMIT_MS }, `the queue's jobs in progress did not end within ${STOP_LIMIT_MS / 1000} s of the stop: stopping without them; what they did not commit is read again by the next run`);
        await settlesWithin(Promise.resolve(utils.release()), RELEASE_LIMIT_MS);
        // Jobs left running at the stop lose their job locks with the session: the others' reapers take them over.
        await jobLocks.close();
      })();
      return stopping;
    },
  };
}

/**
 * Jobs locked for longer than staleAfterMs whose job lock (and run lock) is free: their worker is gone (a live one
 * takes the job lock within milliseconds of starting the job and holds it to the end). Their workers' jobs are released.
 */
async function releaseDeadWorkers(utils: WorkerUtils, queueSql: JobQueueSql, schema: string, staleAfterMs: number, logger: Logger): Promise<number> {
  const stale = await utils.withPgClient(async (client) => {
    const dead: string[] = [];
    for (const row of await queueSql.lockedLongerThan(client, schema, SYNC_TASK, staleAfterMs)) {
      const [, customerId = '', stream = ''] = /^sync:([^:]*):(.*)$/.exec(row.key) ?? [];
      if (!(await queueSql.jobAlive(client, customerId, stream))) dead.push(row.lockedBy);
    }
    return [...new Set(dead)];
  });
  if (stale.length > 0) {
    await utils.forceUnlockWorkers(stale);
    logger.warn({ workers: stale }, `released the jobs of ${stale.length} worker(s) that stopped without finishing them (killed?)`);
  }
  return stale.length;
}

/** The job of one (customer, stream): its run; a failure throws, so graphile-worker retries that job with back-off. */
function syncTask(pass: SyncPass, jobLocks: JobLocks, signal: AbortSignal, logger: Logger): Task {
  return async (raw, helpers) => {
    const job = payloadOf(raw);
    if (!job) {
      logger.warn({ payload: raw }, 'a queued sync job without customerId and stream: dropped');
      return;
    }
    // Held across every phase of the job (the aggregates' refreshes too), so the reapers never take it for dead.
    const release = await jobLocks.hold(job.customerId, job.stream);
    let report;
    try {
      report = await pass.runOne(signal, job.customerId, job.stream);
    } finally {
      await release().catch((error: unknown) => logger.warn({ err: error, customer: job.customerId, stream: job.stream }, 'could not release the job lock (it ends with its session)'));
    }
    const outcome = report.outcomes[0];
    if (outcome?.status === 'failed') {
      const { attempts } = helpers.job;
      if (attempts >= PARKED_AFTER_FAILURES) {
        const wait = Math.round(retryDelayMs(attempts) / 1000);
        logger.warn({ customer: job.customerId, stream: job.stream, attempts }, `parked after ${attempts} failures in a row: the next attempt in about ${wait} s`);
      }
      throw outcome.error instanceof Error ? outcome.error : new Error(String(outcome.error));
    }
    // Resumes at its checkpoint: soon, on this or another instance.
    if (outcome?.status === 'interrupted') throw new Error('interrupted by shutdown; resumes at its last committed page');
  };
}
