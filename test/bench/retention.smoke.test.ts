import { describe, expect, it } from 'vitest';
import { spawnTs } from '../support/process.ts';

// Keeps `npm run bench:retention` (bench/retention.ts, docs/performance.md "Readings retention") working on a tiny
// month: both ways retention removes it, and the upgrade, produce their rows. It asserts what went and what stayed
// (the script itself fails unless February's readings are all left), never how fast anything is.
describe('benchmark (--rows 1000): readings retention', () => {
  it('drops the partition of a month, deletes the same month row-wise from the migrated partition, and says both', { timeout: 120_000 }, async () => {
    const child = spawnTs('bench/retention.ts', ['--rows', '1000']);
    const exit = await child.exit(110_000);
    expect(exit.code, child.stderr().slice(-2000)).toBe(0);
    const out = child.stdout();
    expect(out).toMatch(/\| a partition of its own \(made by the store\) \| `DROP TABLE occupancy_readings_2026_01` \| [\d,]+ ms \| [\d.]+ MiB \| 1 \|/);
    expect(out).toMatch(/\| inside `occupancy_readings_migrated` \(0013's\) \| 1,000 rows deleted, 5,000 a statement \| [\d,]+ ms \| [\d.]+ MiB \| 1 \|/);
    expect(out).toMatch(/The upgrade that made `occupancy_readings_migrated` of the 2,000 readings .* took [\d,]+ ms/);
  });
});
