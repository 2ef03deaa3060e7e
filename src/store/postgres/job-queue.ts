import type { JobQueueSql, QueueClient } from '../job-queue.ts';
import { runLockKey } from './locks.ts';
import { parsePgUrl } from './url.ts';

/** The job queue's statements (src/store/job-queue.ts), on graphile-worker's tables and functions in `queue`. */
export function jobQueueSql(databaseUrl: string): JobQueueSql {
  const { url, schema: dataSchema } = parsePgUrl(databaseUrl);
  return {
    url,
    dataSchema,
    async addJobs(client, queue, task, pairs, maxAttempts) {
      const result = await client.query(
        `SELECT count(*) FILTER (WHERE j.revision = 0) AS added
         FROM unnest($1::text[], $2::text[], $3::text[]) AS t(customer_id, stream, job_key),
         LATERAL "${queue}".add_job($4, json_build_object('customerId', t.customer_id, 'stream', t.stream),
           max_attempts => $5, job_key => t.job_key, job_key_mode => 'unsafe_dedupe') AS j`,
        [pairs.map((p) => p.customerId), pairs.map((p) => p.stream), pairs.map((p) => p.key), task, maxAttempts],
      );
      return Number((result.rows[0] as { added: string }).added);
    },
    async jobs(client, queue, task) {
      const result = await client.query(
        `SELECT key, attempts, run_at, locked_at IS NOT NULL AS locked, last_error
         FROM "${queue}".jobs WHERE task_identifier = $1 ORDER BY key`,
        [task],
      );
      return (result.rows as Array<{ key: string; attempts: number; run_at: Date; locked: boolean; last_error: string | null }>).map((r) => ({
        key: r.key,
        attempts: r.attempts,
        runAt: r.run_at,
        locked: r.locked,
        lastError: r.last_error,
      }));
    },
    async lockedLongerThan(client, queue, task, ms) {
      const result = await client.query(
        `SELECT key, locked_by FROM "${queue}".jobs
         WHERE task_identifier = $1 AND locked_at < now() - make_interval(secs => $2::double precision / 1000)`,
        [task, ms],
      );
      return (result.rows as Array<{ key: string; locked_by: string }>).map((r) => ({ key: r.key, lockedBy: r.locked_by }));
    },
    runLockHeld: (client, customerId, stateKey) => runLockHeld(client, dataSchema, customerId, stateKey),
  };
}

async function runLockHeld(client: QueueClient, dataSchema: string | undefined, customerId: string, stateKey: string): Promise<boolean> {
  const unsigned = BigInt.asUintN(64, BigInt(runLockKey(dataSchema ?? '', customerId, stateKey)));
  const held = await client.query(
    `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = $1::bigint::oid AND objid = $2::bigint::oid AND objsubid = 1`,
    [(unsigned >> 32n).toString(), (unsigned & 0xffffffffn).toString()],
  );
  return (held.rowCount ?? 0) > 0;
}
