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
  /** Whether some session holds the run lock of (customer, state key) on the data's schema. */
  runLockHeld(client: QueueClient, customerId: string, stateKey: string): Promise<boolean>;
}

/**
 * The Postgres job queue's connection, place and statements for the `postgres://` DATABASE_URL `databaseUrl`
 * (src/app/queue.ts runs graphile-worker on them); the room loads only here.
 */
export async function openJobQueueSql(databaseUrl: string): Promise<JobQueueSql> {
  const { jobQueueSql } = await import('./postgres/job-queue.ts');
  return jobQueueSql(databaseUrl);
}
