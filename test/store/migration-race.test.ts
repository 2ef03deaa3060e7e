import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.ts';
import { freshDatabase, DIALECTS, type TestDatabase } from '../support/databases.ts';
import { convertedRows, legacyRows, makeLegacyDatabase, migrateAsReleased, readRows, type LegacyRow } from '../support/legacy-database.ts';
import { spawnTs, type Child } from '../support/process.ts';
import { migrationNames } from './harness.ts';

/**
 * Concurrent first starts (issue 24): processes that migrate one database at the same moment, as a cron `sync` and
 * `serve` do after an upgrade. Each migration step must be applied exactly once and no process may fail, whether the
 * database is empty or at 0008 with rows the occupancy conversion still has to move (where a process used to read
 * occupancy_legacy after another's 0009 had dropped it). The processes are started once and each round is one line
 * written to all of them at once, so they start migrating together; rounds repeat the race.
 */

const PROCESSES = 4;
const ROUNDS = 4;
const ROWS = 1_500;
const BATCH = 150;

type Answer = { applied: string[] } | { error: string };

describe.each(DIALECTS)('processes migrating one database at the same moment on %s', (dialect) => {
  let children: Child[] = [];
  beforeAll(async () => {
    children = Array.from({ length: PROCESSES }, () => spawnTs('test/store/fixtures/migrate-child.ts', [], { stdin: 'pipe', stderr: 'inherit' }));
    for (const child of children) expect(await child.nextLine('the migrating process to start')).toBe('ready');
  });
  afterAll(async () => {
    await Promise.all(children.map((child) => child.kill('SIGKILL')));
  });

  /** Sends the request to every process at once; resolves to their answers. */
  async function race(db: TestDatabase, batch?: number): Promise<Answer[]> {
    const line = `migrate ${db.url}${batch ? ` ${batch}` : ''}\n`;
    for (const child of children) child.write(line);
    return Promise.all(children.map(async (child) => JSON.parse(await child.nextLine('the migration to end', 120_000)) as Answer));
  }

  it(`${PROCESSES} processes on an empty database, ${ROUNDS} times: every migration applied once, by one process, none fails`, async () => {
    const all = migrationNames(dialect);
    for (let round = 0; round < ROUNDS; round++) {
      const db = await freshDatabase(dialect, `race_empty_${round}`);
      try {
        const answers = await race(db);
        expect(answers.filter((a) => 'error' in a), `round ${round}`).toEqual([]);
        const applied = answers.map((a) => (a as { applied: string[] }).applied);
        expect(applied.flat(), `round ${round}`).toEqual(all);
        expect(applied.filter((names) => names.length > 0), `round ${round}`).toHaveLength(1);
        const store = await openStore(db.database, { readonly: true });
        try {
          expect(await store.query('SELECT count(*) AS n FROM __drizzle_migrations')).toEqual([{ n: all.length }]);
          await store.requireCurrentSchema();
        } finally {
          await store.close();
        }
      } finally {
        await db.drop();
      }
    }
  });

  it(`${PROCESSES} processes on a database at 0008 with ${ROWS} rows to convert, ${ROUNDS} times: converted once, exactly, none fails`, async () => {
    const rows = legacyRows(ROWS);
    for (let round = 0; round < ROUNDS; round++) {
      const db = await freshDatabase(dialect, `race_0008_${round}`);
      try {
        await makeLegacyDatabase(db, rows);
        await migrateAsReleased(db, '0008_compact_occupancy');
        const answers = await race(db, BATCH);
        expect(answers.filter((a) => 'error' in a), `round ${round}`).toEqual([]);
        expect(answers.flatMap((a) => (a as { applied: string[] }).applied), `round ${round}`).toEqual(['0009_compact_done']);
        const store = await openStore(db.database, { readonly: true });
        try {
          expect(readRows(await store.query<LegacyRow>('SELECT * FROM occupancy')), `round ${round}`).toEqual(convertedRows(rows));
        } finally {
          await store.close();
        }
      } finally {
        await db.drop();
      }
    }
  });
});
