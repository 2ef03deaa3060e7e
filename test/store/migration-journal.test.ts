import { describe, expect, it } from 'vitest';
import { loadMigrations } from '../../src/store/migrations.ts';

/**
 * drizzle's rule, which the migrator keeps (migrations.ts `pending`): a migration runs only when its journal `when`
 * is later than the last one applied. A new migration whose `when` is not after every earlier one's (drizzle-kit
 * stamps the machine's clock; a hand-set one can be later) would be skipped on every database already migrated.
 */
describe('migration journals', () => {
  for (const dialect of ['sqlite', 'postgres'] as const) {
    it(`${dialect}: each migration's creation time is later than the one before it, in file order`, () => {
      const migrations = loadMigrations(dialect);
      expect(migrations.length).toBeGreaterThan(10);
      const names = migrations.map((m) => m.name);
      expect(names).toEqual([...names].sort());
      for (let i = 1; i < migrations.length; i++) {
        const [before, after] = [migrations[i - 1]!, migrations[i]!];
        expect(after.folderMillis, `${after.name} (${after.folderMillis}) must be created after ${before.name} (${before.folderMillis})`).toBeGreaterThan(before.folderMillis);
      }
    });
  }
});
