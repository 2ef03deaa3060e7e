import { expect, it } from 'vitest';
import { killFanOut } from './crash-fanout.ts';

// About 10 s on an idle machine; the timeout leaves room for a machine many suites load at once.
it('a fan-out stream killed at 3 seeded points of sync and backfill resumes every space to the truth (Postgres)', async () => {
  const { killed, pages } = await killFanOut('postgres', 3802, 3);
  expect(killed, `pages committed per killed run: ${pages.join(', ')}`).toBeGreaterThanOrEqual(2);
}, 120_000);
