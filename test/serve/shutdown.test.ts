import { afterEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config.ts';
import { startSandbox } from '../../src/sandbox/index.ts';
import { openStore } from '../../src/store/index.ts';
import type { Store } from '../../src/store/types.ts';
import { DIALECTS, freshDatabase, type Dialect } from '../support/databases.ts';
import { get, serveEnv, spawnServe, type ServeProcess } from './helpers.ts';
import { waitFor } from '../support/wait.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function database(dialect: Dialect): Promise<string> {
  const db = await freshDatabase(dialect, 'serve_term');
  cleanups.push(() => db.drop());
  return db.url;
}

const num = (v: unknown) => Number(v ?? 0);

describe.each(DIALECTS)('serve on %s, SIGTERM', (dialect) => {
  it('during a sync: finishes the page in flight, records the run interrupted, leaves no partial page and exits 0', async () => {
    // Enough history and small pages that the first pass takes many pages.
    const sandbox = await startSandbox({ customers: 1, buildingsPerCustomer: 3, floorSpacesPerBuilding: 4, dataStart: Date.now() - 3 * 86_400_000 });
    cleanups.push(() => sandbox.close());
    const url = await database(dialect);
    const proc: ServeProcess = await spawnServe(
      serveEnv(sandbox, url, { SYNC_PAGE_SIZE: '10', SYNC_INITIAL_HISTORY: '3d', SYNC_CRON: '0 0 1 1 *', LOG_LEVEL: 'info' }),
      ['--now'],
    );
    cleanups.push(async () => void (await proc.stop()));
    const store: Store = await openStore(resolveConfig({ DATABASE_URL: url }).database);
    cleanups.push(() => store.close());
    const pagesCommitted = async () =>
      num((await store.query("SELECT SUM(pages) AS p FROM sync_runs WHERE stream = 'occupancy'"))[0]?.p);
    await waitFor(async () => (await pagesCommitted()) >= 3, 'three committed occupancy pages', 45_000);

    const { code, signal } = await proc.stop();
    // The messages hold what the process printed, so a failure says why (a race at the queue's stop: docs/operations.md).
    expect({ code, signal }, proc.output().slice(-4000)).toEqual({ code: 0, signal: null });

    const runs = await store.query<{ stream: string; status: string; records: number }>('SELECT stream, status, records FROM sync_runs ORDER BY id');
    expect(runs.find((r) => r.stream === 'occupancy')?.status, proc.output().slice(-6000)).toBe('interrupted');
    expect(runs.some((r) => r.status === 'running')).toBe(false);
    // Rows and the run's record counter are committed in the same transaction per page: equal means no partial page.
    const { n } = (await store.query<{ n: number }>('SELECT COUNT(*) AS n FROM occupancy'))[0]!;
    const recorded = runs.filter((r) => r.stream === 'occupancy').reduce((s, r) => s + num(r.records), 0);
    expect(num(n)).toBe(recorded);
    const [state] = await store.query<{ page_cursor: string | null }>("SELECT page_cursor FROM sync_state WHERE stream = 'occupancy'");
    expect(state?.page_cursor).toBeTruthy(); // the next start resumes from this page
    expect(proc.output()).toContain('serve: stopped cleanly');
  });
});

describe('serve, idle, SIGTERM', () => {
  it('exits 0 at once when no sync is running, and its endpoints are gone', async () => {
    const sandbox = await startSandbox({ customers: 1, buildingsPerCustomer: 1, floorSpacesPerBuilding: 1 });
    cleanups.push(() => sandbox.close());
    const proc = await spawnServe(serveEnv(sandbox, await database('sqlite'), { SYNC_CRON: '0 0 1 1 *' }));
    expect((await get(`${proc.opsUrl}/healthz`)).status).toBe(200);
    expect(await proc.stop()).toEqual({ code: 0, signal: null });
    await expect(get(`${proc.opsUrl}/healthz`)).rejects.toThrow(/ECONNREFUSED/);
  });
});
