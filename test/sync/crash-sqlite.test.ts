import { expect, it } from 'vitest';
import { killAndResume } from './crash-scenario.ts';

it('sync killed with SIGKILL at 12 seeded points then rerun equals the ground truth (SQLite)', async () => {
  const { realKills, pagesAtKill } = await killAndResume('sqlite', 101);
  expect(realKills, `pages committed per killed run: ${pagesAtKill.join(', ')}`).toBeGreaterThanOrEqual(10);
}, 180_000);
