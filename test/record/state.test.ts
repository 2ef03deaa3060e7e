import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stateAtStart } from '../../src/app/record.ts';
import { resolveConfig } from '../../src/config.ts';
import { silentLogger } from '../../src/logger.ts';
import { DIALECTS, freshDatabase, openTestStore } from '../support/databases.ts';
import { tempDir } from '../support/tmp.ts';

/**
 * The sync state a recording says its command started from: a replay asks the recorded questions only from the same
 * state, so "none" must mean none, and a database that cannot be read must say so rather than pass for empty.
 */

const CUSTOMER = '11111111-2222-4333-8444-555555555555';

describe.each(DIALECTS)('the recorded start state (%s)', (dialect) => {
  it('is empty for a database without tables, the stored rows once synced, and a note when the database cannot be read', async () => {
    const db = await freshDatabase(dialect, 'record-state');
    try {
      const config = resolveConfig({ DATABASE_URL: db.url });
      expect(await stateAtStart(config, silentLogger)).toEqual({ states: [] });
      const store = await openTestStore(db);
      try {
        expect(await stateAtStart(config, silentLogger)).toEqual({ states: [] });
        const state = {
          customerId: CUSTOMER,
          stream: 'occupancy',
          watermark: '2026-01-07T23:59:00.000Z',
          windowStart: null,
          windowEnd: null,
          pageCursor: null,
          rangeStart: null,
          rangeEnd: null,
        };
        const { stream: stateKey, ...rest } = state;
        await store.saveState({ ...rest, stateKey });
        // The recording keeps the state key as its file format names it, `stream`.
        expect(await stateAtStart(config, silentLogger)).toEqual({ states: [state] });
      } finally {
        await store.close();
      }
    } finally {
      await db.drop();
    }
    // Not a database at all: SQLite's file holds text, Postgres's port has nothing listening.
    const scratch = tempDir('occupancy-sync-record-state-');
    try {
      const garbage = join(scratch.dir, 'notes.db');
      writeFileSync(garbage, 'not a database, just text that is long enough to fill a header page '.repeat(20));
      const unreadable = resolveConfig({ DATABASE_URL: dialect === 'sqlite' ? `file:${garbage}` : 'postgres://postgres@127.0.0.1:9/test' });
      const result = await stateAtStart(unreadable, silentLogger);
      expect(result.states).toBeUndefined();
      expect(result.note).toMatch(/^the database could not be read before the run: /);
    } finally {
      scratch.remove();
    }
  });
});
