import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from '../../db/schema/drizzle.ts';
import { DatabaseBusyError, StoreError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { Adapter, Executor } from './adapter.ts';
import { CONVERSION_DONE_MIGRATION, convertLegacyOccupancy, type ConversionStep } from './compact-occupancy.ts';
import { explainDatabaseError, wrapDriverError } from './errors.ts';
import { loadMigrations, loadRepeatable, pending, type NamedMigration, type RepeatableScript } from './migrations.ts';
import type { Lock } from './types.ts';

/**
 * The one migrator, over any room's Adapter. A process migrates under a cross-process lock (SQLite: a lock row whose
 * holder's liveness is checked; Postgres: a session advisory lock), and every step (a versioned migration, a batch of
 * the occupancy conversion, the repeatable views) is also one transaction that first checks it is still to be done,
 * serialised with other processes' steps: processes that start together (a cron `sync` and `serve` after an
 * upgrade) never apply a step twice or act on what another has already changed. The others wait, saying for whom,
 * for at most `lockWaitMs`, and then find nothing pending.
 */

export interface MigratorOptions {
  logger: Logger;
  /** The occupancy conversion's batch size and a hook after each batch (tests stop a conversion half-way with it). */
  conversion?: { batch?: number; onBatch?(moved: number, total: number): void };
  /** How long to wait for another process's migration before giving up with DatabaseBusyError (exit 75). */
  lockWaitMs?: number;
  /** Where the views scripts are (tests change a view without touching the package's db/views). */
  viewsFolder?: string;
  /** Aborted (SIGTERM): a wait for another process's migration ends, nothing done. */
  signal?: AbortSignal;
}

/** A conversion of a large database takes minutes; a process waiting longer gives up, and cron or systemd retry it. */
export const MIGRATION_LOCK_WAIT_MS = 10 * 60_000;
/** How often a waiting process says again what it waits for. */
const SAY_EVERY_MS = 10_000;

/** Work that must be done, in committed steps of its own, before a migration can be applied. */
const BEFORE: Record<string, (step: ConversionStep, db: Adapter, options: MigratorOptions) => Promise<unknown>> = {
  [CONVERSION_DONE_MIGRATION]: (step, db, options) => convertLegacyOccupancy(step, db.dialect, { logger: options.logger, ...options.conversion }),
};

/**
 * What this version would apply: pending versioned migrations by name, then the repeatable scripts that are stale
 * (never applied, changed, or applied before the last versioned migration). Reads only.
 */
export async function pendingMigrations(db: Adapter, options: Pick<MigratorOptions, 'viewsFolder'> = {}): Promise<string[]> {
  const exists = async (table: string) => {
    const [row] = await db.query<{ ok: unknown }>(db.flags.tableExists, [table]);
    return Number(row?.ok) === 1;
  };
  const { migrations, repeatable } = db.bookkeeping;
  const last = (await exists(migrations)) ? await lastApplied(db, db) : undefined;
  const versioned = pending(loadMigrations(db.dialect), last).map((m) => m.name);
  const applied = (await exists(repeatable)) ? await db.all<RepeatableRow>(sql`SELECT script, checksum, after_migration FROM ${sql.raw(repeatable)}`) : [];
  const stale = loadRepeatable(db.dialect, options.viewsFolder).filter((script) => isStale(script, applied.find((r) => r.script === script.name), last));
  return [...versioned, ...stale.map((s) => s.name)];
}

/** Applies what is pending; resolves to the names of the versioned migrations this call applied. */
export async function migrate(db: Adapter, options: MigratorOptions): Promise<string[]> {
  if (db.readonly) throw new StoreError(`the database at ${db.location} was opened read-only: migrations need a writable connection`);
  // A database already at this version (every run but the first after an upgrade) has nothing to wait for: the look is
  // reads only, and a step another process is applying shows as pending, which takes the lock below. Without it, each
  // cron run would take the lock (on Postgres a session of its own) and open three transactions to find nothing to do.
  if ((await pendingMigrations(db, options)).length === 0) return [];
  const lock = await migrationLock(db, options);
  try {
    const { setup, migrations, repeatable } = db.bookkeeping;
    for (const statement of setup) await db.exec(statement);
    const time = db.flags.migrationTimeType;
    await step(db, async (tx) => {
      await tx.exec(`CREATE TABLE IF NOT EXISTS ${migrations} (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at ${time})`);
      await tx.exec(`CREATE TABLE IF NOT EXISTS ${repeatable} (script text PRIMARY KEY, checksum text NOT NULL, after_migration ${time}, applied_at text NOT NULL)`);
    });
    const applied = await applyVersioned(db, options);
    for (const script of loadRepeatable(db.dialect, options.viewsFolder)) await applyRepeatable(db, script, options.logger);
    return applied;
  } finally {
    await lock.release();
  }
}

async function applyVersioned(db: Adapter, options: MigratorOptions): Promise<string[]> {
  const all = loadMigrations(db.dialect);
  const next = async (tx: Executor) => pending(all, await lastApplied(tx, db))[0];
  const applied: string[] = [];
  for (let migration = await step(db, next); migration; migration = await step(db, next)) {
    const todo: NamedMigration = migration;
    const stillPending = async (tx: Executor) => (await next(tx))?.name === todo.name;
    await BEFORE[todo.name]?.((fn) => step(db, async (tx) => ((await stillPending(tx)) ? fn(tx) : undefined)), db, options);
    const done = await step(db, async (tx) => {
      // Another process may have applied it meanwhile (its migration lock lost with its session, say).
      if (!(await stillPending(tx))) return false;
      for (const statement of todo.sql) if (statement.trim()) await tx.exec(statement);
      await tx.run(sql`INSERT INTO ${sql.raw(db.bookkeeping.migrations)} (hash, created_at) VALUES (${todo.hash}, ${todo.folderMillis})`);
      return true;
    });
    if (done) applied.push(todo.name);
  }
  return applied;
}

interface RepeatableRow {
  script: string;
  checksum: string;
  after_migration: number | string | null;
}

function isStale(script: RepeatableScript, row: RepeatableRow | undefined, last: number | undefined): boolean {
  const after = row?.after_migration === null || row?.after_migration === undefined ? undefined : Number(row.after_migration);
  return !row || row.checksum !== script.checksum || after !== last;
}

/** Re-applies a repeatable script, all of it in one transaction, when it is stale. */
async function applyRepeatable(db: Adapter, script: RepeatableScript, logger: Logger): Promise<void> {
  const table = sql.raw(db.bookkeeping.repeatable);
  const reapplied = await step(db, async (tx) => {
    const [row] = await tx.all<RepeatableRow>(sql`SELECT script, checksum, after_migration FROM ${table} WHERE script = ${script.name}`);
    const last = await lastApplied(tx, db);
    if (!isStale(script, row, last)) return false;
    try {
      for (const statement of script.statements) await tx.exec(statement);
    } catch (error) {
      throw wrapDriverError(
        error,
        `applying ${script.name} failed: ${explainDatabaseError(error, db.location)}. Nothing of it was applied. ` +
          'Fix: a view whose columns change (renamed, removed or of another type) cannot be replaced in place: add a ' +
          'migration that drops it, and the views script creates it again',
      );
    }
    const at = new Date().toISOString();
    await tx.run(sql`
      INSERT INTO ${table} (script, checksum, after_migration, applied_at) VALUES (${script.name}, ${script.checksum}, ${last ?? null}, ${at})
      ON CONFLICT (script) DO UPDATE SET checksum = excluded.checksum, after_migration = excluded.after_migration, applied_at = excluded.applied_at`);
    return true;
  });
  if (reapplied) logger.info({ script: script.name, checksum: script.checksum.slice(0, 12) }, 'applied the repeatable script (its text changed, or migrations were applied after it)');
}

/** One migration step: a transaction that first takes the dialect's step lock. */
export function step<T>(db: Adapter, fn: (tx: Executor) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    if (db.bookkeeping.stepLock) await tx.exec(db.bookkeeping.stepLock);
    return fn(tx);
  });
}

/** Creation time of the last applied versioned migration (drizzle's rule), or undefined for none. */
async function lastApplied(tx: Pick<Executor, 'all'>, db: Adapter): Promise<number | undefined> {
  const [row] = await tx.all<{ last: number | string | null }>(sql`SELECT max(created_at) AS last FROM ${sql.raw(db.bookkeeping.migrations)}`);
  return row?.last === null || row?.last === undefined ? undefined : Number(row.last);
}

/** Takes the migration lock, waiting (and saying for whom) at most lockWaitMs. */
export async function migrationLock(db: Adapter, options: MigratorOptions): Promise<Lock> {
  const limit = options.lockWaitMs ?? MIGRATION_LOCK_WAIT_MS;
  const started = performance.now();
  let said = -Infinity;
  let pause = 25;
  for (;;) {
    const attempt = await db.tryMigrationLock();
    if ('lock' in attempt) return attempt.lock;
    const waited = performance.now() - started;
    if (options.signal?.aborted) {
      throw new DatabaseBusyError(`stopped (SIGTERM) while waiting for another process to finish migrating the database at ${db.location} (${attempt.holder}); nothing was done`);
    }
    if (waited >= limit) {
      throw new DatabaseBusyError(
        `waited over ${Math.round(limit / 1000)} s to migrate the database at ${db.location} while another process held it (${attempt.holder}); nothing was done. ` +
          'Fix: none needed if it is migrating or writing (its log says how far it is): the next run goes on once it is done; otherwise stop that process',
      );
    }
    if (waited - said >= SAY_EVERY_MS) {
      options.logger.info({ holder: attempt.holder, waitedMs: Math.round(waited) }, 'waiting for another process to finish migrating the database');
      said = waited;
    }
    await sleep(Math.min(pause, limit - waited), undefined, options.signal ? { signal: options.signal } : {}).catch(() => undefined);
    pause = Math.min(pause * 2, 1000);
  }
}
