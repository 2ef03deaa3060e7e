import { expect, it } from 'vitest';
import { killFanOut } from './crash-fanout.ts';

it('a fan-out stream killed at 4 seeded points of sync and backfill resumes every space to the truth (SQLite)', async () => {
  const { killed, pages } = await killFanOut('sqlite', 3801, 4);
  expect(killed, `pages committed per killed run: ${pages.join(', ')}`).toBeGreaterThanOrEqual(3);
}, 60_000);
