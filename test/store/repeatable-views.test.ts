import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import type { Dialect } from '../../src/config.ts';
import { silentLogger } from '../../src/logger.ts';
import { openStore } from '../../src/store/index.ts';
import { openPostgres } from '../../src/store/postgres/adapter.ts';
import { openSqlite } from '../../src/store/sqlite/adapter.ts';
import { SqlStore } from '../../src/store/store.ts';
import type { Store } from '../../src/store/types.ts';
import { PG_BASE_URL, type TestDatabase } from '../support/databases.ts';
import { ROOT } from '../support/process.ts';
import { migrateAsReleased } from '../support/legacy-database.ts';
import { tempDir } from '../support/tmp.ts';
import { checkpoint, DIALECTS, migrationNames, readings, trackedDatabase } from './harness.ts';

/**
 * The views are defined once, in db/views/<dialect>.sql, and re-applied by the migrator (as Flyway's repeatable R__
 * scripts) whenever that text changes or a versioned migration was applied after it: a view change is one edit there,
 * past migrations stay as databases applied them. A database made by the version before (migrations 0000-0009, no
 * record of the views) upgrades without losing a row.
 */

const VIEWS = ['occupancy', 'occupancy_latest', 'occupancy_hourly', 'sync_health', 'webhook_reconciliation'];
const C = 'cust-v';
const file = (dialect: Dialect) => `${dialect === 'postgres' ? 'pg' : 'sqlite'}.sql`;

/** Everything users read through the views. */
async function viewsContent(store: Store): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const view of VIEWS) out[view] = await store.query(`SELECT * FROM ${view} ORDER BY 1, 2, 3`);
  // Its lag follows the clock.
  for (const row of out.sync_health as Array<Record<string, unknown>>) delete row.lag_seconds;
  return out;
}

async function write(store: Store): Promise<void> {
  await store.commitPage({ customerId: C, sink: 'occupancy', records: readings(90), at: '2026-03-01T12:00:00.000Z', checkpoint: checkpoint(C, '2026-03-01T11:30:00.000Z') });
  const run = await store.startRun({ customerId: C, stateKey: 'occupancy', mode: 'incremental', startedAt: '2026-03-01T12:00:00.000Z' });
  await store.finishRun(run, { status: 'succeeded', finishedAt: '2026-03-01T12:01:00.000Z' });
}

/** One statement on the database itself, past the store and its migrator. */
async function rawExec(db: TestDatabase, statement: string): Promise<void> {
  if (db.dialect === 'sqlite') {
    const sqlite = new Database(db.path!);
    try {
      sqlite.exec(statement);
    } finally {
      sqlite.close();
    }
    return;
  }
  const sql = postgres(PG_BASE_URL, { max: 1, onnotice: () => {}, connection: { search_path: `"${db.schema}"` } });
  try {
    await sql.unsafe(statement);
  } finally {
    await sql.end();
  }
}

/** A store whose views scripts are read from `folder` (a copy of the package's, edited by the test). */
async function storeWithViews(dialect: Dialect, url: string, path: string | undefined, folder: string): Promise<Store> {
  const clock = new FakeClock('2026-03-01T12:00:00.000Z');
  const adapter = dialect === 'sqlite' ? openSqlite({ path: path!, logger: silentLogger, now: () => new Date(clock.now()).toISOString() }) : openPostgres({ url });
  return new SqlStore(adapter, clock, silentLogger, { viewsFolder: folder });
}

function copyOfViews(): { folder: string; edit(dialect: Dialect, change: (text: string) => string): void } {
  const tmp = tempDir('occupancy-sync-views-');
  const folder = join(tmp.dir, 'views');
  mkdirSync(folder);
  for (const name of ['pg.sql', 'sqlite.sql']) writeFileSync(join(folder, name), readFileSync(join(ROOT, 'db/views', name)));
  return { folder, edit: (dialect, change) => writeFileSync(join(folder, file(dialect)), change(readFileSync(join(folder, file(dialect)), 'utf8'))) };
}

describe.each(DIALECTS)('views defined once and re-applied on %s', (dialect) => {
  it('a database made by the previous version (0000-0009 applied) upgrades: only the versioned migrations added since to apply, its views recorded, every row as before', async () => {
    const db = await trackedDatabase(dialect, 'views_upgrade');
    await migrateAsReleased(db, '0009_compact_done');
    // The previous version's rows, written through this version's store: its checkpoints write sync_state.windows
    // (0010), so the column is there for the writes only (always null here, as 0009 had no column at all); and it
    // keeps no time-weighted aggregates (0011's dimensions and 0012's tables did not exist then).
    await rawExec(db, 'ALTER TABLE sync_state ADD COLUMN windows text');
    const old = await openStore(db.database, { clock: new FakeClock('2026-03-01T12:00:00.000Z'), maintainAggregates: false });
    await write(old);
    const before = await viewsContent(old);
    await old.close();
    await rawExec(db, 'ALTER TABLE sync_state DROP COLUMN windows');

    // Read-only commands see that this version has something to apply: the views, and the migrations added since.
    const since = migrationNames(dialect).filter((name) => name > '0009_compact_done');
    const pending = [...since, `db/views/${file(dialect)}`];
    const reader = await openStore(db.database, { readonly: true });
    await expect(reader.requireCurrentSchema()).rejects.toThrow(`lacks ${pending.length} migration(s) of this version (${pending.join(', ')})`);
    await reader.close();

    const store = await openStore(db.database);
    try {
      expect(await store.migrate()).toEqual(since);
      await store.requireCurrentSchema();
      expect(await viewsContent(store)).toEqual(before);
      const checksum = createHash('sha256').update(readFileSync(join(ROOT, 'db/views', file(dialect)))).digest('hex');
      const table = dialect === 'postgres' ? `"${db.schema}".__repeatable_migrations` : '__repeatable_migrations';
      const [row] = await store.query<{ script: string; checksum: string; applied_at: string }>(`SELECT script, checksum, applied_at FROM ${table}`);
      expect(row).toMatchObject({ script: `db/views/${file(dialect)}`, checksum });
      // Unchanged text: a second migrate applies nothing again.
      expect(await store.migrate()).toEqual([]);
      expect(await store.query(`SELECT applied_at FROM ${table}`)).toEqual([{ applied_at: row!.applied_at }]);
    } finally {
      await store.close();
    }
  });

  it('a view changed in db/views alone reaches a migrated database, and a user view built on it still works', async () => {
    const db = await trackedDatabase(dialect, 'views_change');
    const views = copyOfViews();
    const store = await storeWithViews(dialect, db.url, db.path, views.folder);
    try {
      await store.migrate();
      await write(store);
      await store.query('CREATE VIEW my_busy_hours AS SELECT floor_space_id, hour FROM occupancy_hourly WHERE occupied_readings > 0');
      const occupied = async () => (await store.query<{ n: number }>('SELECT sum(occupied_readings) AS n FROM occupancy_hourly'))[0]!.n;
      // The readings say OCCUPIED, which the views do not count as occupied (they count CurrentlyOccupied).
      expect(Number(await occupied())).toBe(0);

      views.edit(dialect, (text) => text.replaceAll(`occupancy_status = 'CurrentlyOccupied'`, `occupancy_status IN ('CurrentlyOccupied', 'OCCUPIED')`));
      await expect(store.requireCurrentSchema()).rejects.toThrow(`db/views/${file(dialect)}`);
      expect(await store.migrate()).toEqual([]);
      await store.requireCurrentSchema();
      expect(Number(await occupied())).toBe(45);
      expect(await store.query('SELECT count(*) AS n FROM my_busy_hours')).toEqual([{ n: 2 }]);
    } finally {
      await store.close();
    }
  });

  it('a views script that fails half-way changes nothing: the earlier views and their record stay as they were', async () => {
    const db = await trackedDatabase(dialect, 'views_atomic');
    const views = copyOfViews();
    const store = await storeWithViews(dialect, db.url, db.path, views.folder);
    try {
      await store.migrate();
      await write(store);
      const before = await viewsContent(store);
      const table = dialect === 'postgres' ? `"${db.schema}".__repeatable_migrations` : '__repeatable_migrations';
      const [recorded] = await store.query(`SELECT checksum FROM ${table}`);
      views.edit(dialect, (text) =>
        `${text.replaceAll(`occupancy_status = 'CurrentlyOccupied'`, `occupancy_status IN ('CurrentlyOccupied', 'OCCUPIED')`)}\n--> statement-breakpoint\n-- A view named as a table: refused when it is made, on both dialects.\nCREATE VIEW sync_state AS SELECT 1 AS x;\n`,
      );
      await expect(store.migrate()).rejects.toThrow(/applying db\/views\/\w+\.sql failed: .*sync_state.*Nothing of it was applied/s);
      expect(await viewsContent(store)).toEqual(before);
      expect(await store.query(`SELECT checksum FROM ${table}`)).toEqual([recorded]);
    } finally {
      await store.close();
    }
  });
});
