import postgres from 'postgres';
import type { JobLocks, JobQueueSql } from '../job-queue.ts';
import { advisoryKey, CLOSE_WAIT_SECONDS, isConnectionEnded, runLockKey } from './locks.ts';
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
    async jobAlive(client, customerId, stream) {
      const halves = [jobLockKey(dataSchema ?? '', customerId, stream), runLockKey(dataSchema ?? '', customerId, stream)].map((key) => {
        const unsigned = BigInt.asUintN(64, BigInt(key));
        return [(unsigned >> 32n).toString(), (unsigned & 0xffffffffn).toString()];
      });
      const held = await client.query(
        `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
           AND ((classid, objid) IN (($1::bigint::oid, $2::bigint::oid), ($3::bigint::oid, $4::bigint::oid)))`,
        halves.flat(),
      );
      return (held.rowCount ?? 0) > 0;
    },
    openJobLocks: () => openJobLocks(url, dataSchema ?? ''),
  };
}

/** The advisory lock of the queue job of (customer, stream); `scope` is the data's Postgres schema ('' for the default). */
export function jobLockKey(scope: string, customerId: string, stream: string): string {
  return advisoryKey('occupancy-sync:job', scope, customerId, stream);
}

async function openJobLocks(url: string, scope: string): Promise<JobLocks> {
  // One connection that never idles out or retires: its session is what keeps the locks (postgres.js reconnects on the
  // next statement should it end; the locks it held are gone then, and the run lock keeps two runs apart meanwhile).
  const sql = postgres(url, { max: 1, idle_timeout: 0, max_lifetime: 0, fetch_types: false, onnotice: () => {}, connection: { application_name: 'occupancy-sync queue jobs' } });
  let tls: boolean;
  try {
    const [row] = await sql.unsafe<{ ssl: boolean | null }[]>('SELECT (SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()) AS ssl');
    tls = row?.ssl === true;
  } catch (error) {
    await sql.end({ timeout: CLOSE_WAIT_SECONDS }).catch(() => undefined);
    throw error;
  }
  return {
    workerUrl: workerUrl(url, tls),
    async hold(customerId, stream) {
      const key = jobLockKey(scope, customerId, stream);
      const [row] = await sql.unsafe<{ ok: boolean }[]>('SELECT pg_try_advisory_lock($1::bigint) AS ok', [key]);
      if (!row?.ok) return async () => {};
      let released = false;
      return async () => {
        if (released) return;
        released = true;
        try {
          await sql.unsafe('SELECT pg_advisory_unlock($1::bigint)', [key]);
        } catch (error) {
          // The session ended under the unlock: the server dropped the lock with it.
          if (!isConnectionEnded(error)) throw error;
        }
      };
    },
    close: () => sql.end({ timeout: CLOSE_WAIT_SECONDS }).catch(() => undefined),
  };
}

/**
 * `url` for node-postgres, connecting as the store's driver (postgres.js) did with the same sslmode (`tls`: whether
 * that session negotiated TLS). node-postgres reads prefer, require and verify-ca as verify-full and never falls back
 * to plain (a server without TLS refused the queue while the syncs ran); with `uselibpqcompat=true` it reads require
 * as libpq does (TLS, the certificate not verified), which is what postgres.js does for require and, over TLS, for
 * prefer and allow. verify-ca is verify-full for postgres.js too.
 */
export function workerUrl(url: string, tls: boolean): string {
  const parsed = new URL(url);
  const mode = parsed.searchParams.getAll('sslmode').at(-1);
  if (mode === undefined || mode === 'disable' || mode === 'verify-full') return url;
  parsed.searchParams.delete('sslmode');
  parsed.searchParams.delete('uselibpqcompat');
  if (mode === 'verify-ca') {
    parsed.searchParams.set('sslmode', 'verify-full');
  } else if ((mode === 'prefer' || mode === 'allow') && !tls) {
    parsed.searchParams.set('sslmode', 'disable');
  } else {
    parsed.searchParams.set('uselibpqcompat', 'true');
    parsed.searchParams.set('sslmode', 'require');
  }
  return parsed.toString();
}
