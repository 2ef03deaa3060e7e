import postgres, { type Sql } from 'postgres';
import type { DatabaseTimeouts } from '../../config.ts';
import { parsePgTimestamp } from '../timestamps.ts';

/** The bounds when the configuration gives none (a library caller's own `database`): DATABASE_*_TIMEOUT's defaults. */
export const DEFAULT_TIMEOUTS: DatabaseTimeouts = { connectMs: 10_000, lockMs: 30_000, statementMs: 300_000 };

/** How often an idle connection is probed, so a path that went silent (NAT, firewall) is noticed before it is used. */
const KEEP_ALIVE_SECONDS = 30;

/**
 * Planner settings of read-only sessions (report, status, state show), whose statements are the reporting views'
 * GROUP BYs over a whole period. JIT off: those statements' estimates cross jit_above_cost, and compiling them cost
 * seconds that their execution never won back. work_mem: the profiles' and day views' sorts and hashes spilled to disk
 * at the server's default 4MB. Set at connection start, not per transaction, since `report` sends its statements at
 * once over the pool, each outside a transaction. docs/performance.md, "Where the report's time goes", has the figures.
 */
const READER_SETTINGS = { jit: 'off', work_mem: '64MB' };

export interface ConnectOptions {
  max: number;
  timeouts: DatabaseTimeouts;
  /** Names this process's sessions in pg_stat_activity (and lets the watch find what they wait for). */
  applicationName: string;
  readonly?: boolean;
  extra?: postgres.Options<{}>;
}

/**
 * A postgres.js client. Sessions run with TimeZone=UTC so date_trunc and text output agree with the SQLite side, with
 * the schema of `?schema=` as search_path, read-only when the store was opened for reading, and with every wait
 * bounded by the server: a lock another session holds (lock_timeout), one statement (statement_timeout), a
 * transaction left idle (idle_in_transaction_session_timeout: as long as a statement may run).
 */
export function connect(url: string, schema: string | undefined, options: ConnectOptions): Sql {
  const { timeouts } = options;
  const client = postgres(url, {
    max: options.max,
    connect_timeout: Math.max(1, Math.ceil(timeouts.connectMs / 1000)),
    keep_alive: KEEP_ALIVE_SECONDS,
    ...options.extra,
    onnotice: () => {},
    connection: {
      TimeZone: 'UTC',
      application_name: options.applicationName,
      lock_timeout: timeouts.lockMs,
      statement_timeout: timeouts.statementMs,
      idle_in_transaction_session_timeout: timeouts.statementMs,
      ...(schema ? { search_path: `"${schema}"` } : {}),
      ...(options.readonly ? { default_transaction_read_only: true, ...READER_SETTINGS } : {}),
    },
  });
  // Plain rows on both dialects: timestamps as canonical ISO strings, counts and averages as numbers (SQLite returns
  // numbers too). int8 values here are counts and ids, far below 2^53.
  const parsers = client.options.parsers as Record<string, (text: string) => unknown>;
  parsers['1184'] = parsePgTimestamp;
  parsers['1114'] = parsePgTimestamp;
  parsers['20'] = Number;
  parsers['1700'] = Number;
  return client;
}
