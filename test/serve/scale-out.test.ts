import { afterEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config.ts';
import { startSandbox } from '../../src/sandbox/index.ts';
import { openStore } from '../../src/store/index.ts';
import { signatureHeader } from '../../src/webhooks/signature.ts';
import { writeFileSync } from 'node:fs';
import { freshDatabase } from '../support/databases.ts';
import { tempDir } from '../support/tmp.ts';
import { get, metricSum, occupancyDelivery, serveEnv, spawnServe, WEBHOOK_SECRET } from './helpers.ts';
import { waitFor } from '../support/wait.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

interface RunRow {
  customer_id: string;
  stream: string;
  started_at: string;
  finished_at: string | null;
  status: string;
}

describe('two serve instances on one Postgres', () => {
  it('share the work: the same customer and stream never run twice at once, and either receiver stores deliveries', async () => {
    const sandbox = await startSandbox({ customers: 2, buildingsPerCustomer: 2, floorSpacesPerBuilding: 3, dataStart: Date.now() - 2 * 86_400_000 });
    cleanups.push(() => sandbox.close());
    const pg = await freshDatabase('postgres', 'scale_out');
    cleanups.push(() => pg.drop());
    // Both customers on both instances, a tick every second: the instances contend on every tick.
    const customersFile = JSON.stringify(
      sandbox.customers.map((c, i) => ({ id: c.id, apiKey: c.readKey.key, apiSecretEnv: `SECRET_${i}`, webhookSecretEnv: 'WEBHOOK_SECRET' })),
    );
    const tmp = tempDir('scale-out-');
    cleanups.push(tmp.remove);
    const dir = tmp.dir;
    writeFileSync(`${dir}/customers.json`, customersFile);
    // Two jobs at a time per instance: a tick queues eight (2 customers x 4 streams) and the queue hands each to the
    // first worker that asks, so with the default 32 one instance could take every job of every tick for as long as
    // it answers first (a busy machine favours one process). Two leave jobs waiting for the other instance, whose idle
    // workers take them at the insert's notification or their next poll: both run jobs, however the CPU is shared.
    const env = serveEnv(sandbox, pg.url, { SYNC_CRON: '* * * * * *', SYNC_PAGE_SIZE: '50', SYNC_INITIAL_HISTORY: '2d', SYNC_CONCURRENCY: '2' });
    delete env.API_KEY;
    delete env.API_SECRET;
    delete env.CUSTOMER_ID;
    Object.assign(env, { CUSTOMERS_FILE: `${dir}/customers.json`, SECRET_0: sandbox.customers[0]!.readKey.secret, SECRET_1: sandbox.customers[1]!.readKey.secret });

    // With jitter the instances take turns winning the locks instead of the fastest one winning every tick.
    const [a, b] = await Promise.all([spawnServe(env, ['--now', '--jitter', '600ms']), spawnServe(env, ['--now', '--jitter', '600ms'])]);
    cleanups.push(async () => void (await a.stop()), async () => void (await b.stop()));
    const store = await openStore(resolveConfig({ DATABASE_URL: pg.url }).database);
    cleanups.push(() => store.close());

    const scrape = async () => Promise.all([a, b].map(async (p) => (await get(`${p.opsUrl}/metrics`)).text));
    const succeeded = (t: string) => metricSum(t, 'occupancy_sync_runs_total', 'status="succeeded"');
    await waitFor(async () => {
      const [ta, tb] = await scrape();
      return succeeded(ta!) >= 4 && succeeded(tb!) >= 4;
    }, 'both instances to have run streams several times', 90_000).catch(async (error: unknown) => {
      // What each instance did by then, so a timeout on a busy machine says which instance stalled and on what.
      const texts = await scrape().catch(() => ['', '']);
      const state = [a, b].map((p, i) => `instance ${i === 0 ? 'a' : 'b'}: ${succeeded(texts[i] ?? '')} run(s) succeeded, ${metricSum(texts[i] ?? '', 'occupancy_sync_runs_total')} in all; its output ends:\n${p.output().split('\n').slice(-15).join('\n')}`);
      throw new Error(`${(error as Error).message}\n${state.join('\n')}`, { cause: error });
    });
    // Receivers keep no state: the same delivery sent to each instance is stored once, the second is a duplicate.
    const customerId = sandbox.customers[0]!.id;
    const body = occupancyDelivery(customerId, '5d1e0000-0000-4000-8000-0000000000aa', '9e8d7c6b-0000-4000-8000-000000000001');
    const header = () => ({ 'X-Service-Signature': signatureHeader(WEBHOOK_SECRET, body, Math.floor(Date.now() / 1000)) });
    const first = await get(a.webhookUrl, 'POST', body, header());
    expect(first.status).toBe(200);
    expect((await get(b.webhookUrl, 'POST', body, header())).status).toBe(200);
    const { n } = (await store.query<{ n: number }>("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE id = '5d1e0000-0000-4000-8000-0000000000aa'"))[0]!;
    expect(Number(n)).toBe(1);

    const [sa, sb] = await Promise.all([a.stop(), b.stop()]);
    expect(sa).toEqual({ code: 0, signal: null });
    expect(sb).toEqual({ code: 0, signal: null });

    const runs = await store.query<RunRow>('SELECT customer_id, stream, started_at, finished_at, status FROM sync_runs ORDER BY customer_id, stream, started_at, id');
    expect(runs.some((r) => r.status === 'running')).toBe(false);
    const byKey = new Map<string, RunRow[]>();
    for (const r of runs) byKey.set(`${r.customer_id}/${r.stream}`, [...(byKey.get(`${r.customer_id}/${r.stream}`) ?? []), r]);
    expect(byKey.size).toBe(8); // 2 customers x (buildings, floors, floor-spaces, occupancy)
    for (const [key, list] of byKey) {
      for (let i = 1; i < list.length; i++) {
        // Each run starts only after the previous one of the same customer and stream finished.
        expect(list[i]!.started_at >= list[i - 1]!.finished_at!, `${key}: run ${i} overlaps run ${i - 1}`).toBe(true);
      }
    }
  }, 120_000);
});
