import postgres, { type Sql, type TransactionSql } from 'postgres';
import type { SQL } from 'drizzle-orm';
import { pgCore } from '../../db/schema/drizzle.ts';
import { ConfigError, StoreError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { Adapter, Executor, QueryOptions } from './adapter.ts';
import { describeLocation } from './errors.ts';
import { advisoryKey, isConnectionEnded, PgLocks } from './locks.ts';
import { CONVERSION_DONE_MIGRATION, convertLegacyOccupancy, type ConversionOptions } from './compact-occupancy.ts';
import { loadMigrations, MIGRATIONS_TABLE, pending } from './migrations.ts';
import { KeyCache, type KeyScope } from './key-cache.ts';
import { sinkDef, type PageContext, type SinkDef } from './sinks.ts';
import { parsePgTimestamp } from './timestamps.ts';
import type { SinkName, SinkRecords } from './types.ts';

/**
 * Postgres through postgres.js. `?schema=NAME` in DATABASE_URL selects a schema: it is stripped from the URL (the
 * server would refuse it as a startup parameter), created by migrate(), set as every connection's search_path and used
 * for drizzle's migrations table, so two schemas in one database are fully independent (tests rely on it). Sessions run
 * with TimeZone=UTC so date_trunc and text output agree with the SQLite side.
 */
export interface PostgresOptions {
  url: string;
  maxConnections?: number;
  logger?: Logger;
  /** Sessions with default_transaction_read_only: the server refuses any write (status, report, state show). */
  readonly?: boolean;
  /** The occupancy conversion's batch size and progress hook (tests). */
  conversion?: Pick<ConversionOptions, 'batch' | 'onBatch'>;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

export function parsePgUrl(raw: string): { url: string; schema: string | undefined } {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch (error) {
    throw new ConfigError('DATABASE_URL: not a valid postgres:// URL; use postgres://user@host:5432/db', { cause: error });
  }
  const schema = parsed.searchParams.get('schema') ?? undefined;
  parsed.searchParams.delete('schema');
  if (schema !== undefined && !IDENTIFIER.test(schema)) {
    throw new ConfigError(
      `DATABASE_URL: schema "${schema}" is not a plain identifier; use letters, digits and _ (e.g. ?schema=occupancy)`,
    );
  }
  return { url: parsed.toString(), schema };
}

function connect(url: string, schema: string | undefined, max: number, extra: postgres.Options<{}> = {}, readonly = false): Sql {
  const client = postgres(url, {
    max,
    ...extra,
    onnotice: () => {},
    connection: {
      TimeZone: 'UTC',
      application_name: 'occupancy-sync',
      ...(schema ? { search_path: `"${schema}"` } : {}),
      ...(readonly ? { default_transaction_read_only: true } : {}),
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

export function openPostgres(options: PostgresOptions): Adapter {
  const { url, schema } = parsePgUrl(options.url);
  const readonly = options.readonly === true;
  const client = connect(url, schema, options.maxConnections ?? 10, {}, readonly);
  const migrationsTable = `"${schema ?? 'drizzle'}"."${MIGRATIONS_TABLE}"`;
  const dialect = new (pgCore().PgDialect)();
  // The lock session must live as long as its locks: no idle timeout and no max_lifetime (postgres.js would otherwise
  // end it after 30-60 minutes, dropping the locks of a long run).
  const locks = new PgLocks(
    (onclose) => connect(url, schema, 1, { idle_timeout: 0, max_lifetime: 0, onclose }),
    schema ?? '',
    options.logger,
  );

  // The hot path: one statement per page. Every row column travels as one typed array and unnest turns them back
  // into rows, so the text is fixed (prepared once per connection) whatever the page size, and a page costs one round
  // trip. Per-page values (customer, source, ingested_at) are scalars.
  const upsertTexts = new Map<SinkName, string>();
  const upsertText = (def: SinkDef<unknown>, sink: SinkName): string => {
    let text = upsertTexts.get(sink);
    if (!text) {
      const page = def.pageColumns.map((c, i) => `$${i + 1}::${c.type}`);
      const arrays = def.rowColumns.map((c, i) => `$${def.pageColumns.length + i + 1}::${c.type}[]`);
      const columns = [...def.pageColumns, ...def.rowColumns].map((c) => c.name);
      const aliases = def.rowColumns.map((c) => `u.${c.name}`);
      text =
        `INSERT INTO ${def.writeTable} (${columns.join(', ')}) ` +
        `SELECT ${[...page, ...aliases].join(', ')} FROM unnest(${arrays.join(', ')}) ` +
        `AS u(${def.rowColumns.map((c) => c.name).join(', ')}) ${def.onConflict}`;
      upsertTexts.set(sink, text);
    }
    return text;
  };

  const keys = new KeyCache();
  const executor = (sql: Sql | TransactionSql, scope: KeyScope): Executor => ({
    async all<T>(query: SQL): Promise<T[]> {
      const q = dialect.sqlToQuery(query);
      return Array.from(await sql.unsafe(q.sql, q.params as never[], { prepare: true })) as T[];
    },
    async run(query: SQL): Promise<number> {
      const q = dialect.sqlToQuery(query);
      return (await sql.unsafe(q.sql, q.params as never[], { prepare: true })).count;
    },
    async upsert<S extends SinkName>(sink: S, page: PageContext, records: ReadonlyArray<SinkRecords[S]>) {
      if (records.length === 0) return;
      const def = sinkDef(sink, 'postgres') as SinkDef<unknown>;
      const prepared = def.prepare ? await def.prepare({ tx: this, keys: scope, page }, records) : undefined;
      const columns = columnsOf(def, records, prepared);
      await sql.unsafe(upsertText(def, sink), [...def.pageValues(page, prepared), ...columns] as never[], { prepare: true });
    },
  });
  /**
   * Outside a transaction each statement commits by itself, so keys learnt are real at once. An upsert there runs
   * in its own transaction (its dictionary rows, arrival and rows commit together).
   */
  const autocommitScope = keys.scope();
  const pool: Executor = {
    ...executor(client, autocommitScope),
    upsert: async (sink, page, records) => {
      const scope = keys.scope();
      await client.begin((tx) => executor(tx, scope).upsert(sink, page, records));
      scope.commit();
    },
  };

  return {
    dialect: 'postgres',
    location: describeLocation(options.url),
    readonly,
    async pending() {
      const [exists] = await client.unsafe<{ ok: boolean }[]>('SELECT to_regclass($1) IS NOT NULL AS ok', [migrationsTable]);
      const [last] = exists?.ok ? await client.unsafe<{ created_at: number | null }[]>(`SELECT max(created_at) AS created_at FROM ${migrationsTable}`) : [];
      return pending(loadMigrations('postgres'), last?.created_at === null || last?.created_at === undefined ? undefined : Number(last.created_at)).map((m) => m.name);
    },
    ...pool,
    transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
      let settled = false;
      const scope = keys.scope();
      const run = client.begin(async (tx) => {
        try {
          return await fn(executor(tx, scope));
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
          scope.commit();
          return result;
        })
        .finally(() => {
          settled = true;
        });
    },

    async migrate() {
      if (readonly) throw new StoreError(`the database at ${describeLocation(options.url)} was opened read-only: migrations need a writable connection`);
      // One dedicated session: a session advisory lock keyed by the schema serialises concurrent migrators (drizzle's
      // migrator reads the applied list outside its transaction), and ending the session releases the lock even if
      // this process dies half-way.
      const admin = connect(url, schema, 1);
      try {
        await admin.unsafe('SELECT pg_advisory_lock($1::bigint)', [advisoryKey('occupancy-sync:migrate', schema ?? '')]);
        const migrationsSchema = schema ?? 'drizzle';
        await admin.unsafe(`CREATE SCHEMA IF NOT EXISTS "${migrationsSchema}"`);
        const table = `"${migrationsSchema}"."${MIGRATIONS_TABLE}"`;
        const [exists] = await admin.unsafe<{ ok: boolean }[]>('SELECT to_regclass($1) IS NOT NULL AS ok', [table]);
        const [last] = exists?.ok
          ? await admin.unsafe<{ created_at: number | null }[]>(`SELECT max(created_at) AS created_at FROM ${table}`)
          : [];
        const todo = pending(loadMigrations('postgres'), last?.created_at ?? undefined);
        // drizzle's bookkeeping (its table and columns), one migration per transaction, so the occupancy conversion
        // can run in its own committed batches before the migration that needs it done (store/compact-occupancy.ts).
        await admin.unsafe(`CREATE TABLE IF NOT EXISTS ${table} (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)`);
        const batches = <T>(fn: (tx: Executor) => Promise<T>) => admin.begin((tx) => fn(executor(tx, keys.scope()))) as Promise<T>;
        for (const migration of todo) {
          if (migration.name === CONVERSION_DONE_MIGRATION) {
            await convertLegacyOccupancy(batches, 'postgres', { logger: options.logger, ...options.conversion });
          }
          await admin.begin(async (tx) => {
            for (const statement of migration.sql) if (statement.trim()) await tx.unsafe(statement);
            await tx.unsafe(`INSERT INTO ${table} (hash, created_at) VALUES ($1, $2)`, [migration.hash, migration.folderMillis]);
          });
        }
        return todo.map((m) => m.name);
      } finally {
        await admin.end({ timeout: 5 });
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

/**
 * Column arrays for unnest. Postgres refuses an upsert that touches one row twice ("ON CONFLICT DO UPDATE command
 * cannot affect row a second time"), which SQLite's row-by-row upsert accepts (last one wins); in-page duplicates are
 * therefore collapsed here, keeping the last, so both dialects end with the same row.
 */
function columnsOf(def: SinkDef<unknown>, records: ReadonlyArray<unknown>, prepared: unknown): unknown[][] {
  const width = def.rowColumns.length;
  const columns = def.rowColumns.map(() => new Array<unknown>(records.length));
  const row = new Array<unknown>(width);
  const seen = new Map<string, number>();
  let n = 0;
  for (let i = 0; i < records.length; i++) {
    def.fill(records[i], row, 0, i, prepared);
    const key = def.rowKey.length === 1 ? String(row[def.rowKey[0]!]) : def.rowKey.map((k) => row[k]).join('\u0000');
    const at = seen.get(key);
    const slot = at ?? n++;
    if (at === undefined) seen.set(key, slot);
    for (let c = 0; c < width; c++) columns[c]![slot] = row[c];
  }
  if (n < records.length) for (const column of columns) column.length = n;
  return columns;
}
