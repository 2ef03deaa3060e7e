import type { Sql } from 'postgres';

/**
 * What this process's waiting statements wait for, asked of the server on a connection of the monitor's own: the
 * locks they wait for and the sessions holding (or queued ahead for) them, or that the server is busy with them, or
 * that it does not answer at all. For the watch's "waiting for Postgres" lines (watch.ts).
 */

const LOCK_WAITS = `
  SELECT w.pid,
         (SELECT string_agg(DISTINCT c.relname, ', ') FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
           WHERE l.pid = w.pid AND NOT l.granted) AS relations,
         b.pid AS blocker, b.application_name AS blocker_app, b.state AS blocker_state,
         left(regexp_replace(coalesce(b.query, ''), '\\s+', ' ', 'g'), 100) AS blocker_query,
         extract(epoch FROM now() - coalesce(b.xact_start, b.query_start))::int AS blocker_seconds
    FROM pg_stat_activity w
   CROSS JOIN LATERAL unnest(pg_blocking_pids(w.pid)) AS bp(pid)
    JOIN pg_stat_activity b ON b.pid = bp.pid
   WHERE w.application_name = $1 AND w.wait_event_type = 'Lock' AND w.pid <> pg_backend_pid()
   ORDER BY w.pid, b.pid`;

interface Row {
  pid: number;
  relations: string | null;
  blocker: number;
  blocker_app: string | null;
  blocker_state: string | null;
  blocker_query: string;
  blocker_seconds: number | null;
}

export interface MonitorOptions {
  open(): Sql;
  applicationName: string;
  /** How long the monitor itself waits for an answer (it connects anew when the last one went unanswered). */
  answerWithinMs: number;
  lockTimeoutMs: number;
  statementTimeoutMs: number;
}

export function lockMonitor(options: MonitorOptions): { describe(): Promise<{ text: string; answered: boolean }>; close(): Promise<void> } {
  let client: Sql | undefined;
  const drop = () => {
    const old = client;
    client = undefined;
    void old?.end({ timeout: 0 }).catch(() => undefined);
  };
  return {
    async describe() {
      client ??= options.open();
      let timer: NodeJS.Timeout | undefined;
      try {
        const rows = await Promise.race([
          client.unsafe<Row[]>(LOCK_WAITS, [options.applicationName]),
          new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('no answer')), options.answerWithinMs))),
        ]);
        if (rows.length === 0) return { text: `the server is working on it (DATABASE_STATEMENT_TIMEOUT ends it after ${seconds(options.statementTimeoutMs)})`, answered: true };
        const holders = rows.map(
          (r) =>
            `a lock on ${r.relations ?? 'a row or object'} held by (or queued ahead in) Postgres session ${r.blocker} ` +
            `(${r.blocker_app || 'no application name'}, ${r.blocker_state ?? 'unknown state'}${r.blocker_seconds === null ? '' : ` for ${r.blocker_seconds} s`}: ${r.blocker_query || '?'})`,
        );
        return { text: `${[...new Set(holders)].join('; ')}; DATABASE_LOCK_TIMEOUT ends the wait after ${seconds(options.lockTimeoutMs)}`, answered: true };
      } catch (error) {
        drop();
        return { text: `the server does not answer a new connection either (${(error as Error).message}): the network path to it or the server may be down`, answered: false };
      } finally {
        clearTimeout(timer);
      }
    },
    async close() {
      drop();
    },
  };
}

const seconds = (ms: number) => (ms % 60_000 === 0 ? `${ms / 60_000} min` : `${Math.round(ms / 1000)} s`);
