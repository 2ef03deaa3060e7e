/**
 * The statements of the Postgres job queue (graphile-worker, run by src/app/queue.ts) over its schema `queue` beside
 * the data's: written in src/store/postgres/job-queue.ts, opened by `openJobQueueSql` below (the room loads only then).
 */

/** A connection graphile-worker lends (`withPgClient`): node-postgres's query. */
export interface QueueClient {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>;
}

/** A sync job as the queue holds it. */
export interface QueuedJobRow {
  key: string;
  attempts: number;
  runAt: Date;
  locked: boolean;
  lastError: string | null;
}

export interface JobQueueSql {
  /** DATABASE_URL without `?schema=`, and that schema (the data's): the queue's connection and its place. */
  readonly url: string;
  readonly dataSchema: string | undefined;
  /**
   * Adds a job per (customer, stream) unless its key is queued already (`job_key_mode => 'unsafe_dedupe'`); returns how
   * many were added.
   */
  addJobs(client: QueueClient, queue: string, task: string, pairs: ReadonlyArray<{ customerId: string; stream: string; key: string }>, maxAttempts: number): Promise<number>;
  /** The task's jobs, by key. */
  jobs(client: QueueClient, queue: string, task: string): Promise<QueuedJobRow[]>;
  /** Jobs of the task locked for longer than `ms`, and the workers that hold them. */
  lockedLongerThan(client: QueueClient, queue: string, task: string, ms: number): Promise<Array<{ key: string; lockedBy: string }>>;
  /**
   * Whether the job of (customer, stream) is being worked on: some session holds its job lock (JobLocks) or its run
   * lock on the data's schema (a run of an instance that takes no job lock yet, or a cron `sync`).
   */
  jobAlive(client: QueueClient, customerId: string, stream: string): Promise<boolean>;
  /**
   * The instance's job locks, on a session of their own, connected before it resolves: a job's lock is then one
   * statement after graphile-worker locked the job, not a connection, and a reaper looking in between (a loaded
   * machine's connection took longer than the queue's threshold) does not take the starting job for a dead one.
   */
  openJobLocks(): Promise<JobLocks>;
}

/**
 * Session advisory locks, one per (customer, stream) job, held from the start of a job to its end (the aggregates'
 * refreshes before and after its run included, when it holds no run lock), on one session per queue: they end with
 * their process, SIGKILL included, which is what the queue's reaper reads as a dead job.
 */
export interface JobLocks {
  /**
   * DATABASE_URL as node-postgres (graphile-worker's driver) must read it to connect as this session did: it reads
   * libpq's sslmode otherwise than the store's driver (prefer and require as verify-full, no plain fallback).
   */
  readonly workerUrl: string;
  /**
   * Takes the job lock of (customer, stream); resolves to its release. A lock another session holds is not waited
   * for (the run lock still keeps two runs of a stream apart): the release is then a no-op.
   */
  hold(customerId: string, stream: string): Promise<() => Promise<void>>;
  /** Ends the session, and every lock on it. */
  close(): Promise<void>;
}

/**
 * The Postgres job queue's connection, place and statements for the `postgres://` DATABASE_URL `databaseUrl`
 * (src/app/queue.ts runs graphile-worker on them); the room loads only here.
 */
export async function openJobQueueSql(databaseUrl: string): Promise<JobQueueSql> {
  const { jobQueueSql } = await import('./postgres/job-queue.ts');
  return jobQueueSql(databaseUrl);
}
