import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { memoryLogger } from '../../src/logger.ts';
import { WalCheckpointer } from '../../src/store/sqlite/checkpointer.ts';
import { CHECKPOINTS_AFTER_COMMITS } from '../../src/store/sqlite/connection.ts';
import { freshDatabase, openTestStore } from '../support/databases.ts';
import { tempDir } from '../support/tmp.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Background WAL checkpoints (src/store/checkpointer.ts) against real SQLite files: the worker's connection copies
 * the writer's WAL into the database file, the writer then restarts the WAL by itself, and a worker that cannot
 * work leaves the writer checkpointing as SQLite always does.
 */

let cleanup: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.reverse()) await fn();
  cleanup = [];
});

function writer(autocheckpoint: number) {
  const tmp = tempDir('occupancy-ckpt-');
  const path = join(tmp.dir, 'w.db');
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma(`wal_autocheckpoint = ${autocheckpoint}`);
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)');
  const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
  const writeRows = (n: number) => db.transaction(() => {
    for (let i = 0; i < n; i++) insert.run('x'.repeat(500));
  })();
  cleanup.push(() => {
    if (db.open) db.close();
    tmp.remove();
  });
  // [busy, WAL frames, frames checkpointed]: a PASSIVE checkpoint by the writer itself, as an observer.
  const walState = () => (db.pragma('wal_checkpoint(PASSIVE)') as Array<{ busy: number; log: number; checkpointed: number }>)[0]!;
  return { path, db, writeRows, walState };
}

describe('WalCheckpointer', () => {
  it('copies the WAL into the database from its worker, and the writer restarts the WAL by itself', async () => {
    // Autocheckpoint off: only the worker can checkpoint.
    const w = writer(0);
    const { logger, records } = memoryLogger();
    const checkpointer = new WalCheckpointer({ path: w.path, logger, minIntervalMs: 0 });
    cleanup.push(() => checkpointer.close());

    w.writeRows(2000);
    checkpointer.nudge();
    const result = await checkpointer.settled();
    expect(result).toBeDefined();
    expect(result!.walFrames).toBeGreaterThan(200);
    expect(result!.checkpointed).toBe(result!.walFrames);
    expect(checkpointer.completed).toBe(1);

    // Everything was copied, so the next write starts the WAL over instead of appending after ~250 frames.
    w.writeRows(1);
    const after = w.walState();
    expect(after.log).toBeLessThan(10);
    expect(w.db.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 2001 });
    expect(records().filter((r) => Number(r.level) >= 40)).toEqual([]);
  });

  it('coalesces nudges: one checkpoint at a time, one more if asked while it ran', async () => {
    const w = writer(0);
    const checkpointer = new WalCheckpointer({ path: w.path, logger: memoryLogger().logger, minIntervalMs: 0 });
    cleanup.push(() => checkpointer.close());
    w.writeRows(500);
    for (let i = 0; i < 50; i++) checkpointer.nudge();
    await checkpointer.settled();
    w.writeRows(500);
    checkpointer.nudge();
    await checkpointer.settled();
    // 50 nudges while the first ran became one more checkpoint, then the last nudge a third at most.
    expect(checkpointer.completed).toBeGreaterThanOrEqual(2);
    expect(checkpointer.completed).toBeLessThanOrEqual(3);
  });

  it('starts its worker only after firstAfterCommits commits: a short process leaves the WAL to the close', async () => {
    const w = writer(0);
    const checkpointer = new WalCheckpointer({ path: w.path, logger: memoryLogger().logger, minIntervalMs: 0, firstAfterCommits: 3 });
    cleanup.push(() => checkpointer.close());
    w.writeRows(500);
    for (let i = 0; i < 3; i++) checkpointer.nudge();
    // Nothing asked for: settled() answers at once and no checkpoint ran.
    expect(await checkpointer.settled()).toBeUndefined();
    expect(checkpointer.completed).toBe(0);
    checkpointer.nudge();
    const result = await checkpointer.settled();
    expect(result!.walFrames).toBeGreaterThan(50);
    expect(result!.checkpointed).toBe(result!.walFrames);
    expect(checkpointer.completed).toBe(1);
  });

  it('a worker that cannot open the database logs one warning and leaves checkpoints to the writer', async () => {
    const tmp = tempDir('occupancy-ckpt-');
    cleanup.push(() => tmp.remove());
    const { logger, records } = memoryLogger();
    const checkpointer = new WalCheckpointer({ path: join(tmp.dir, 'missing.db'), logger, minIntervalMs: 0 });
    cleanup.push(() => checkpointer.close());
    checkpointer.nudge();
    // The worker fails while opening, before any checkpoint: wait for its warning.
    await waitFor(() => records().some((r) => r.level === 40), 'the worker to log its warning', 5_000, { everyMs: 10 });
    const warnings = records().filter((r) => r.level === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toMatch(/background WAL checkpoints unavailable/);
    checkpointer.nudge();
    expect(await checkpointer.settled()).toBeUndefined();
    expect(checkpointer.completed).toBe(0);
  });

  it('a store with background checkpoints closes cleanly: no WAL left, every row in the file', async () => {
    const db = await freshDatabase('sqlite', 'ckpt');
    cleanup.push(() => db.drop());
    const path = db.path!;
    const store = await openTestStore(db);
    const customerId = '0b7e3d1c-0000-4000-8000-000000000001';
    // More commits than CHECKPOINTS_AFTER_COMMITS, so the worker runs and must be closed before the store's close.
    const deliveries = CHECKPOINTS_AFTER_COMMITS + 20;
    for (let i = 0; i < deliveries; i++) {
      const at = new Date(Date.UTC(2026, 2, 1, 0, i)).toISOString();
      await store.storeDelivery(
        { id: `d${i}`, customerId, type: 'Occupancy', createdAt: at, sentAt: at, receivedAt: at, body: '{}' },
        [{ floorSpaceId: 'fs-1', observedAt: at, occupancyStatus: 'CurrentlyOccupied', headcount: i, eventId: `d${i}` }],
      );
    }
    await store.close();
    // The worker's connection was closed first, so the writer's close could checkpoint and remove the WAL.
    expect(existsSync(`${path}-wal`)).toBe(false);
    const reopened = new Database(path, { readonly: true });
    expect(reopened.prepare('SELECT count(*) AS n FROM webhook_deliveries').get()).toEqual({ n: deliveries });
    expect(reopened.prepare('SELECT count(*) AS n FROM occupancy').get()).toEqual({ n: deliveries });
    reopened.close();
  });
});
