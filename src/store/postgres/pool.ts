import type { Sql, TransactionSql } from 'postgres';
import type { SQL } from 'drizzle-orm';
import { pgCore } from '../../../db/schema/drizzle.ts';
import type { Executor } from '../adapter.ts';
import { KeyCache, type KeyScope } from '../key-cache.ts';
import { SentAhead } from '../sent-ahead.ts';
import { preparePage, upserted } from '../sinks.ts';
import { isConnectionEnded } from './locks.ts';
import { columnsOf, columnsOfRows, upsertText } from './unnest.ts';
import type { StatementWatch, Tracked, Waitable } from './watch.ts';

/** A tracked transaction, whose statements speak for it to the watch. */
type Parent = Tracked<unknown>['entry'];

/**
 * Statements and transactions on the pool, each watched (watch.ts). A connection given up by the watch is destroyed
 * with the whole client, which is replaced: the store stays usable for what follows (recording the run's end).
 */
export class PgPool {
  #client: Sql;
  readonly #dialect = new (pgCore().PgDialect)();
  readonly #keys = new KeyCache();

  constructor(
    private readonly open: () => Sql,
    private readonly watch: StatementWatch,
  ) {
    this.#client = open();
  }

  /** The client now (a statement keeps the one it was sent on, to know which one to replace). */
  get client(): Sql {
    return this.#client;
  }

  /** `pending`, sent on `on`, watched; given up, `on` is replaced (once). */
  watched<T>(pending: Waitable<T>, label: string, on: Sql, parent?: Parent): Tracked<T> {
    return this.watch.track(pending, label, this.lose(on), parent);
  }

  /** Statements outside a transaction: each commits by itself. */
  autocommit(): Executor {
    return this.executor(this.#client, this.#client, this.#keys.scope());
  }

  transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
    let settled = false;
    const keyScope = this.#keys.scope();
    const on = this.#client;
    let outer: Parent | undefined;
    const run = on.begin(async (tx) => {
      const ahead = new SentAhead();
      try {
        const result = await fn(this.executor(tx, on, keyScope, outer, ahead));
        await ahead.settle();
        return result;
      } catch (thrown) {
        // A statement sent ahead that failed is what failed: what came after it only saw the aborted transaction. The
        // connection is gone if any of them says so, whichever failed first (a cancelled statement, then the close).
        const failures = await ahead.failures();
        const error = failures[0] ?? thrown;
        if (![thrown, ...failures].some(isConnectionEnded)) throw error;
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
    // BEGIN and COMMIT are sent by postgres.js itself: the transaction is watched as a whole, kept alive by each of
    // its statements, so a COMMIT with no answer is given up like any statement.
    const tracked = this.watch.track(run, 'committing a transaction', this.lose(on));
    outer = tracked.entry;
    return tracked
      .then((result) => {
        keyScope.commit();
        return result;
      })
      .finally(() => {
        settled = true;
      });
  }

  end(timeout: number): Promise<void> {
    return this.#client.end({ timeout });
  }

  private lose(lost: Sql): () => void {
    return () => {
      if (this.#client !== lost) return;
      this.#client = this.open();
      void lost.end({ timeout: 0 }).catch(() => undefined);
    };
  }

  /** `ahead`: a transaction's, whose statements sent ahead of their answers it awaits before COMMIT. */
  private executor(sql: Sql | TransactionSql, on: Sql, keyScope: KeyScope, parent?: Parent, ahead?: SentAhead): Executor {
    const dialect = this.#dialect;
    const send = <T>(text: string, params: unknown[], label: string) => this.watched<T>(sql.unsafe(text, params as never[], { prepare: true }) as unknown as Waitable<T>, label, on, parent);
    const tx: Executor = {
      dialect: 'postgres',
      async all<T>(query: SQL, doing = 'reading'): Promise<T[]> {
        const q = dialect.sqlToQuery(query);
        return Array.from(await send<Iterable<T>>(q.sql, q.params, doing));
      },
      async run(query: SQL, doing = 'writing'): Promise<number> {
        const q = dialect.sqlToQuery(query);
        return (await send<{ count: number }>(q.sql, q.params, doing)).count;
      },
      async runAhead(query, check) {
        const changed = tx.run(query).then((n) => check?.(n));
        if (ahead) ahead.send(changed);
        else await changed;
      },
      exec: async (statement: string) => void (await this.watched(sql.unsafe(statement) as Waitable<unknown>, 'migrating', on, parent)),
      bulk: async (text, width, values) => void (values.length > 0 && (await send(text, columnsOfRows(values, width), `writing ${values.length / width} rows`))),
      async upsert(sink, page, records) {
        const ready = await preparePage(sink, 'postgres', { tx, keys: keyScope, page }, records);
        if (!ready) return {};
        const { def, prepared } = ready;
        const columns = columnsOf(def, records, prepared);
        // In a transaction the page's rows are sent ahead, as SQLite's writer thread sends them: what follows them
        // (the page's invalidations, its checkpoint) goes out behind them without waiting for their answer.
        const written = send(upsertText(def), [...def.pageValues(page, prepared), ...columns], `writing a page of ${records.length} ${def.table} records`);
        if (ahead) ahead.send(written);
        else await written;
        return upserted(def, prepared);
      },
    };
    return tx;
  }
}

