import type { Sql, TransactionSql } from 'postgres';
import type { SQL } from 'drizzle-orm';
import { pgCore } from '../../../db/schema/drizzle.ts';
import { StoreError } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import type { Adapter, Executor, LockAttempt, QueryOptions } from '../adapter.ts';
import { COMPATIBILITY_FLAGS } from '../compatibility.ts';
import { describeLocation } from '../errors.ts';
import { KeyCache, type KeyScope } from '../key-cache.ts';
import { MIGRATIONS_TABLE, REPEATABLE_TABLE } from '../migrations.ts';
import { preparePage } from '../sinks.ts';
import { connect } from './connect.ts';
import { ADVISORY_HOLDER, advisoryKey, isConnectionEnded, PgLocks } from './locks.ts';
import { columnsOf, upsertText } from './unnest.ts';
import { parsePgUrl } from './url.ts';

/**
 * Postgres through postgres.js: a pool for statements and transactions, and dedicated sessions for locks (run locks
 * in PgLocks, the migration lock while migrating). `?schema=NAME` in DATABASE_URL selects a schema (url.ts).
 */
export interface PostgresOptions {
  url: string;
  maxConnections?: number;
  logger?: Logger;
  /** Sessions with default_transaction_read_only: the server refuses any write (status, report, state show). */
  readonly?: boolean;
}

export function openPostgres(options: PostgresOptions): Adapter {
  const { url, schema } = parsePgUrl(options.url);
  const readonly = options.readonly === true;
  const client = connect(url, schema, options.maxConnections ?? 10, {}, readonly);
  const scope = schema ?? '';
  const bookkeepingSchema = `"${schema ?? 'drizzle'}"`;
  const dialect = new (pgCore().PgDialect)();
  // The lock session must live as long as its locks: no idle timeout and no max_lifetime (postgres.js would otherwise
  // end it after 30-60 minutes, dropping the locks of a long run).
  const locks = new PgLocks((onclose) => connect(url, schema, 1, { idle_timeout: 0, max_lifetime: 0, onclose }), scope, options.logger);
  const keys = new KeyCache();

  const executor = (sql: Sql | TransactionSql, keyScope: KeyScope): Executor => {
    const tx: Executor = {
      async all<T>(query: SQL): Promise<T[]> {
        const q = dialect.sqlToQuery(query);
        return Array.from(await sql.unsafe(q.sql, q.params as never[], { prepare: true })) as T[];
      },
      async run(query: SQL): Promise<number> {
        const q = dialect.sqlToQuery(query);
        return (await sql.unsafe(q.sql, q.params as never[], { prepare: true })).count;
      },
      async exec(statement: string): Promise<void> {
        await sql.unsafe(statement);
      },
      async upsert(sink, page, records) {
        const ready = await preparePage(sink, 'postgres', { tx, keys: keyScope, page }, records);
        if (!ready) return;
        const { def, prepared } = ready;
        const columns = columnsOf(def, records, prepared);
        await sql.unsafe(upsertText(sink), [...def.pageValues(page, prepared), ...columns] as never[], { prepare: true });
      },
    };
    return tx;
  };

  const transaction = <T>(fn: (tx: Executor) => Promise<T>): Promise<T> => {
    let settled = false;
    const keyScope = keys.scope();
    const run = client.begin(async (tx) => {
      try {
        return await fn(executor(tx, keyScope));
      } catch (error) {
        if (!isConnectionEnded(error)) throw error;
        // The transaction's connection closed (backend terminated, failover, network). Throwing here would make
        // postgres.js 3.4.9 send ROLLBACK on the dead connection, which throws an uncaught TypeError from a
        // setImmediate (porsager/postgres#1208) and kills the process. begin() already rejects by itself when its
        // connection closes, so this callback stays pending instead (the server rolled back with the session);
        // should the connection still be open after all, it rejects after 5 s and the rollback is safe.
        return await new Promise<never>((_, reject) => {
          setTimeout(() => settled || reject(error), 5_000).unref();
        });
      }
    }) as Promise<T>;
    return run
      .then((result) => {
        keyScope.commit();
        return result;
      })
      .finally(() => {
        settled = true;
      });
  };

  // Outside a transaction each statement commits by itself, so keys learnt are real at once. An upsert there runs
  // in its own transaction (its dictionary rows, arrival and rows commit together).
  const pool = executor(client, keys.scope());

  return {
    dialect: 'postgres',
    flags: COMPATIBILITY_FLAGS.postgres,
    location: describeLocation(options.url),
    readonly,
    bookkeeping: {
      migrations: `${bookkeepingSchema}."${MIGRATIONS_TABLE}"`,
      repeatable: `${bookkeepingSchema}."${REPEATABLE_TABLE}"`,
      setup: [`CREATE SCHEMA IF NOT EXISTS ${bookkeepingSchema}`],
      stepLock: `SELECT pg_advisory_xact_lock(${advisoryKey('occupancy-sync:migration-step', scope)})`,
    },
    all: pool.all,
    run: pool.run,
    exec: pool.exec,
    upsert: (sink, page, records) => transaction((tx) => tx.upsert(sink, page, records)),
    transaction,

    async tryMigrationLock(): Promise<LockAttempt> {
      // A session of its own: ending it releases the lock, also when this process dies half-way.
      const key = advisoryKey('occupancy-sync:migrate', scope);
      const session = connect(url, schema, 1, { idle_timeout: 0, max_lifetime: 0 });
      try {
        const [row] = await session.unsafe<{ ok: boolean }[]>('SELECT pg_try_advisory_lock($1::bigint) AS ok', [key]);
        if (row?.ok) return { lock: { release: () => session.end({ timeout: 5 }) } };
        const [holder] = await session.unsafe<{ pid: number; application_name: string; backend_start: string }[]>(ADVISORY_HOLDER, [key]);
        await session.end({ timeout: 5 });
        return { holder: holder ? `Postgres session ${holder.pid} (${holder.application_name || 'no application name'}) since ${holder.backend_start}` : 'a session that just ended' };
      } catch (error) {
        await session.end({ timeout: 5 }).catch(() => undefined);
        throw error;
      }
    },

    tryLock: (customerId, stream) => locks.tryLock(customerId, stream),
    lockLost: (customerId) => locks.lockLost(customerId),

    async query<T>(text: string, params: readonly unknown[], options: QueryOptions = {}): Promise<T[]> {
      const pending = client.unsafe(text, params as never[]);
      // A caller that stops waiting must not leave the query running on the server (health checks under load).
      let timedOut = false;
      const timer =
        options.timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              timedOut = true;
              void pending.cancel();
            }, options.timeoutMs);
      try {
        // A plain array (not postgres.js's RowList with count/command/columns), as SQLite returns.
        return Array.from(await pending) as T[];
      } catch (error) {
        if (timedOut) throw new StoreError(`the database did not answer within ${options.timeoutMs} ms; the query was cancelled`, { cause: error });
        throw error;
      } finally {
        clearTimeout(timer);
      }
    },

    async close() {
      await locks.releaseAll().catch(() => undefined);
      await client.end({ timeout: 5 });
    },
  };
}
