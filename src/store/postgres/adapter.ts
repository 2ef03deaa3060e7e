import type { Sql } from 'postgres';
import type { DatabaseTimeouts } from '../../config.ts';
import { StoreError } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import type { Adapter, Bookkeeping, Executor, LockAttempt, QueryOptions } from '../adapter.ts';
import { COMPATIBILITY_FLAGS } from '../compatibility.ts';
import { describeLocation } from '../errors.ts';
import { DECLARED_TABLE, MIGRATIONS_TABLE, REPEATABLE_TABLE } from '../migrations.ts';
import { connect, DEFAULT_TIMEOUTS, type ConnectOptions } from './connect.ts';
import { ADVISORY_HOLDER, advisoryKey, CLOSE_WAIT_SECONDS, PgLocks, runLockKey } from './locks.ts';
import { lockMonitor } from './monitor.ts';
import { PgPool } from './pool.ts';
import { parsePgUrl } from './url.ts';
import { StatementWatch, type Waitable } from './watch.ts';

/** drizzle's migrations table, the repeatable scripts' and the declared tables' steps, in the bookkeeping schema. */
function bookkeepingTables(schema: string): Pick<Bookkeeping, 'migrations' | 'repeatable' | 'declared'> {
  return { migrations: `${schema}."${MIGRATIONS_TABLE}"`, repeatable: `${schema}."${REPEATABLE_TABLE}"`, declared: `${schema}."${DECLARED_TABLE}"` };
}

/**
 * Postgres through postgres.js: a pool for statements and transactions, and dedicated sessions for locks (run locks
 * in PgLocks, the migration lock while migrating). `?schema=NAME` in DATABASE_URL selects a schema (url.ts). Every
 * statement is bounded by the server (connect.ts) and watched here (watch.ts): a long wait says what it waits for, a
 * silent server is given up, and `signal` (SIGTERM) cancels what is in flight.
 */
export interface PostgresOptions {
  url: string;
  maxConnections?: number;
  logger?: Logger;
  /** Sessions with default_transaction_read_only: the server refuses any write (status, report, state show). */
  readonly?: boolean;
  timeouts?: DatabaseTimeouts;
  /** Aborted (SIGTERM): the statements in flight are cancelled; the store stays usable for what comes after. */
  signal?: AbortSignal;
}

export function openPostgres(options: PostgresOptions): Adapter {
  const { url, schema } = parsePgUrl(options.url);
  const location = describeLocation(options.url);
  const readonly = options.readonly === true;
  const timeouts = options.timeouts ?? DEFAULT_TIMEOUTS;
  const applicationName = new URL(url).searchParams.get('application_name') ?? `occupancy-sync (pid ${process.pid})`;
  const session = (max: number, extra?: ConnectOptions['extra']) => connect(url, schema, { max, timeouts, applicationName, readonly, ...(extra && { extra }) });
  const scope = schema ?? '';
  const bookkeepingSchema = `"${schema ?? 'drizzle'}"`;

  const monitor = lockMonitor({ open: () => session(1), applicationName, answerWithinMs: timeouts.connectMs + 5_000, lockTimeoutMs: timeouts.lockMs, statementTimeoutMs: timeouts.statementMs });
  const watch = new StatementWatch({ logger: options.logger, location, statementTimeoutMs: timeouts.statementMs, describe: monitor.describe, onGone: () => locks.abandon() });
  options.signal?.addEventListener('abort', () => watch.cancel(), { once: true });
  const pool = new PgPool(() => session(options.maxConnections ?? 10), watch);

  // The lock session must live as long as its locks: no idle timeout and no max_lifetime (postgres.js would otherwise
  // end it after 30-60 minutes, dropping the locks of a long run). Lock sessions send and read no arrays, so they skip
  // postgres.js's query of the server's array types: one round trip less before a run's lock.
  const lockSession = (extra: ConnectOptions['extra']) => session(1, { idle_timeout: 0, max_lifetime: 0, fetch_types: false, ...extra });
  const locks = new PgLocks((onclose) => lockSession({ onclose }), scope, options.logger, (pending, label, lost) => watch.track(pending, label, lost));
  const transaction = <T>(fn: (tx: Executor) => Promise<T>): Promise<T> => pool.transaction(fn);

  return {
    dialect: 'postgres',
    flags: COMPATIBILITY_FLAGS.postgres,
    location,
    readonly,
    bookkeeping: {
      ...bookkeepingTables(bookkeepingSchema),
      // Not CREATE SCHEMA IF NOT EXISTS: it needs CREATE on the database even when the schema exists, which a role
      // given only its schema does not have.
      setup: [`DO $$ BEGIN IF to_regnamespace('${bookkeepingSchema}') IS NULL THEN CREATE SCHEMA ${bookkeepingSchema}; END IF; END $$`],
      stepLock: `SELECT pg_advisory_xact_lock(${advisoryKey('occupancy-sync:migration-step', scope)})`,
    },
    all: (query, doing) => pool.autocommit().all(query, doing),
    run: (query, doing) => pool.autocommit().run(query, doing),
    runAhead: (query, check) => pool.autocommit().runAhead(query, check),
    exec: (statement) => pool.autocommit().exec(statement),
    upsert: (sink, page, records) => transaction((tx) => tx.upsert(sink, page, records)),
    transaction,
    tryMigrationLock: () => tryMigrationLock(lockSession({}), watch, scope),
    tryLock: (customerId, stream) => locks.tryLock(customerId, stream),
    async runLockHeld(customerId, stream) {
      // Advisory locks end with their session: none held means the run's process (or its connection) is gone.
      const on = pool.client;
      return (await pool.watched(on.unsafe(ADVISORY_HOLDER, [runLockKey(scope, customerId, stream)]) as unknown as Waitable<unknown[]>, 'asking whether a run is alive', on)).length > 0;
    },
    lockLost: (customerId) => locks.lockLost(customerId),
    query: (text, params, queryOptions) => queryWithin(pool, text, params, queryOptions),

    // Bounded whatever the server does: the pool and the lock session end together, each giving what is still in
    // flight CLOSE_WAIT_SECONDS before its sockets are destroyed (nothing in flight at a close was committed, and a
    // page not committed is read again by the next run).
    async close() {
      watch.close();
      await Promise.all([monitor.close(), locks.close(), pool.end(CLOSE_WAIT_SECONDS)]);
    },
  };
}

/** The migration lock, on a session of its own (`own`): ending it releases the lock, also when this process dies half-way. */
async function tryMigrationLock(own: Sql, watch: StatementWatch, scope: string): Promise<LockAttempt> {
  const key = advisoryKey('occupancy-sync:migrate', scope);
  const ask = <T>(text: string, label: string) => watch.track(own.unsafe(text, [key]) as unknown as Waitable<T>, label, () => void own.end({ timeout: 0 }));
  try {
    const [row] = await ask<{ ok: boolean }[]>('SELECT pg_try_advisory_lock($1::bigint) AS ok', 'taking the migration lock');
    if (row?.ok) return { lock: { release: () => own.end({ timeout: CLOSE_WAIT_SECONDS }) } };
    const [holder] = await ask<{ pid: number; application_name: string; backend_start: string }[]>(ADVISORY_HOLDER, 'asking who migrates');
    await own.end({ timeout: CLOSE_WAIT_SECONDS });
    return { holder: holder ? `Postgres session ${holder.pid} (${holder.application_name || 'no application name'}) since ${holder.backend_start}` : 'a session that just ended' };
  } catch (error) {
    await own.end({ timeout: 0 }).catch(() => undefined);
    throw error;
  }
}

/** An ad hoc query (reports, health); with `timeoutMs`, cancelled on the server when the caller stops waiting. */
async function queryWithin<T>(pool: PgPool, text: string, params: readonly unknown[], queryOptions: QueryOptions = {}): Promise<T[]> {
  const on = pool.client;
  const pending = on.unsafe(text, params as never[]);
  // A caller that stops waiting must not leave the query running on the server (health checks under load).
  let timedOut = false;
  const timer =
    queryOptions.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          void pending.cancel();
        }, queryOptions.timeoutMs);
  try {
    // A plain array (not postgres.js's RowList with count/command/columns), as SQLite returns.
    return Array.from(await pool.watched(pending as Waitable<Iterable<T>>, 'running a query', on));
  } catch (error) {
    if (timedOut) throw new StoreError(`the database did not answer within ${queryOptions.timeoutMs} ms; the query was cancelled`, { cause: error });
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
