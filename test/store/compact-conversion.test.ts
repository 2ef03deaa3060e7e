import { afterEach, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.ts';
import type { Store } from '../../src/store/types.ts';
import { DIALECTS, freshDatabase, type TestDatabase } from '../support/databases.ts';
import { migrationNames } from './harness.ts';
import { convertedRows, legacyRows, makeLegacyDatabase, readRows, type LegacyRow } from '../support/legacy-database.ts';

/**
 * The compact occupancy layout (migrations 0008 and 0009) converts a database made by the previous version in place:
 * stopped half-way, readers still see every reading and the next migrate resumes; at the end `occupancy` holds
 * exactly what the old table held, read through the same SQL.
 */

const ROWS = 2_400;
const BATCH = 500;

const expected = convertedRows;
const read = readRows;

const identity = ({ customer_id, floor_space_id, observed_at, occupancy_status, headcount, source, event_id, ingested_at }: LegacyRow) =>
  ({ customer_id, floor_space_id, observed_at, occupancy_status, headcount, source, event_id, ingested_at });

describe.each(DIALECTS)('converting a previous-version database to the compact layout on %s', (dialect) => {
  let db: TestDatabase | undefined;
  const stores: Store[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close().catch(() => {});
    await db?.drop();
  });

  it('stops half-way without losing a reading, resumes, and ends with exactly the old rows', async () => {
    db = await freshDatabase(dialect, 'compact');
    const rows = legacyRows(ROWS);
    await makeLegacyDatabase(db, rows);

    // A conversion stopped after its second committed batch (as kill -9 would stop it between batches).
    const stopped = await openStore(db.database, {
      conversion: {
        batch: BATCH,
        onBatch: (_moved, total) => {
          if (total >= 2 * BATCH) throw new Error('stopped half-way');
        },
      },
    });
    stores.push(stopped);
    await expect(stopped.migrate()).rejects.toThrow(/stopped half-way/);
    const [{ left }] = (await stopped.query<{ left: number }>('SELECT count(*) AS left FROM occupancy_legacy')) as [{ left: number }];
    expect(Number(left)).toBe(ROWS - 2 * BATCH);
    // Half-way, users' SQL still reads every reading once, with its values and first arrival.
    const during = read(await stopped.query<LegacyRow>('SELECT * FROM occupancy'));
    expect(during.map(identity)).toEqual(expected(rows).map(identity));
    await stopped.close();
    stores.pop();

    const resumed = await openStore(db.database, { conversion: { batch: BATCH } });
    stores.push(resumed);
    expect(await resumed.migrate()).toEqual(migrationNames(dialect).filter((name) => name > '0008_compact_occupancy'));
    expect(read(await resumed.query<LegacyRow>('SELECT * FROM occupancy'))).toEqual(expected(rows));
    await expect(resumed.query('SELECT count(*) FROM occupancy_legacy')).rejects.toThrow(/occupancy_legacy/);
    // The dictionaries hold each floor space and status once.
    const [spaces] = await resumed.query<{ n: number }>('SELECT count(*) AS n FROM floor_spaces');
    expect(Number(spaces!.n)).toBe(new Set(rows.map((r) => `${r.customer_id}/${r.floor_space_id}`)).size);
  });
});
