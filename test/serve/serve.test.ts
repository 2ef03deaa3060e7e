import { afterEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config.ts';
import { createMetrics } from '../../src/metrics.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { serve } from '../../src/serve/index.ts';
import { startOpsServer } from '../../src/serve/ops-server.ts';
import { openStore } from '../../src/store/index.ts';
import type { Scheduler } from '../../src/app/scheduler.ts';
import { systemClock } from '../../src/clock.ts';
import { silentLogger } from '../../src/logger.ts';
import { signatureHeader } from '../../src/webhooks/signature.ts';
import { get, metric, metricSum, occupancyDelivery, serveEnv, WEBHOOK_SECRET } from './helpers.ts';
import { freshDatabase, migratedStore } from '../support/databases.ts';
import { within } from '../support/wait.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** node-cron stand-in: ticks only when the test calls scheduler.tick(). */
const manualCron = () => ({ stop() {}, destroy() {} });

async function start(env: (sandbox: Sandbox, db: string) => Record<string, string>) {
  const sandbox = await startSandbox({ customers: 1, buildingsPerCustomer: 1, floorSpacesPerBuilding: 2, dataStart: Date.now() - 6 * 3_600_000 });
  cleanups.push(() => sandbox.close());
  const db = await freshDatabase('sqlite', 'serve');
  cleanups.push(db.drop);
  const config = resolveConfig(env(sandbox, db.url));
  const controller = new AbortController();
  let ready!: (info: { opsUrl: string; webhookUrl: string | undefined; scheduler: Scheduler | undefined }) => void;
  const readyP = new Promise<Parameters<typeof ready>[0]>((resolve) => (ready = resolve));
  const done = serve({ config, logger: silentLogger, signal: controller.signal, cronSchedule: manualCron, onReady: ready });
  done.catch(() => {});
  const stop = async () => {
    controller.abort();
    await done;
  };
  cleanups.push(stop);
  const info = await within(Promise.race([readyP, done.then(() => { throw new Error('serve ended before it was ready'); })]), 'serve to be ready');
  return { sandbox, config, info, stop, done };
}

describe('occupancy-sync serve', () => {
  it('without any webhook configuration runs no receiver, says so once, and syncs as usual', async () => {
    const { info } = await start((sandbox, db) => {
      const { WEBHOOK_SECRET: _unused, ...env } = serveEnv(sandbox, db);
      return env;
    });
    expect(info.webhookUrl).toBeUndefined();
    await info.scheduler!.tick();
    expect((await get(`${info.opsUrl}/healthz`)).json.status).toBe('ok');
  });

  it('syncs on its schedule and reports runs, pages, records, API calls and lag on /metrics and a healthy /healthz', async () => {
    const { sandbox, info, config } = await start(serveEnv);
    const before = await get(`${info.opsUrl}/healthz`);
    expect(before.status).toBe(200); // no runs yet is not unhealthy
    await info.scheduler!.tick();

    const health = await get(`${info.opsUrl}/healthz`);
    expect(health.status).toBe(200);
    expect(health.json.status).toBe('ok');
    expect(health.json.database).toEqual({ ok: true });
    const customerId = sandbox.customers[0]!.id;
    expect(health.json.streams.map((s: { stream: string; lastRunStatus: string; healthy: boolean }) => [s.stream, s.lastRunStatus, s.healthy])).toEqual([
      ['buildings', 'succeeded', true],
      ['floor-spaces', 'succeeded', true],
      ['floors', 'succeeded', true],
      ['occupancy', 'succeeded', true],
    ]);

    const metrics = await get(`${info.opsUrl}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = metrics.text;
    expect(metric(text, `occupancy_sync_runs_total{stream="occupancy",status="succeeded"}`)).toBe(1);
    expect(metric(text, `occupancy_sync_runs_total{stream="buildings",status="succeeded"}`)).toBe(1);
    const store = await openStore(config.database);
    cleanups.push(() => store.close());
    const { n } = (await store.query<{ n: number }>('SELECT COUNT(*) AS n FROM occupancy'))[0]!;
    const { pages } = (await store.query<{ pages: number }>("SELECT SUM(pages) AS pages FROM sync_runs WHERE stream = 'occupancy'"))[0]!;
    expect(n).toBeGreaterThan(0);
    expect(metric(text, `occupancy_sync_records_total{stream="occupancy"}`)).toBe(Number(n));
    expect(metric(text, `occupancy_sync_pages_total{stream="occupancy"}`)).toBe(Number(pages));
    expect(metric(text, 'occupancy_sync_api_auth_calls_total')).toBe(1);
    expect(metric(text, 'occupancy_sync_api_retries_total')).toBe(0);
    expect(metric(text, `occupancy_sync_lag_seconds{stream="occupancy"}`)).toBeGreaterThan(0);
    expect(metric(text, 'occupancy_sync_sync_in_progress')).toBe(0);
    // By convention: standard process metrics, a duration histogram and the last success per stream, no customer label.
    expect(metric(text, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(text).not.toContain('occupancy_sync_process_');
    expect(metric(text, `occupancy_sync_run_duration_seconds_count{stream="occupancy",status="succeeded"}`)).toBe(1);
    expect(metric(text, `occupancy_sync_last_success_timestamp_seconds{stream="occupancy"}`)).toBeGreaterThan(Date.now() / 1000 - 600);
    expect(text).not.toContain(`customer="${customerId}"`);

    // A second pass reuses the token: the long-lived client does not authenticate again.
    await info.scheduler!.tick();
    const again = await get(`${info.opsUrl}/metrics`);
    expect(metric(again.text, 'occupancy_sync_api_auth_calls_total')).toBe(1);
    expect(metric(again.text, `occupancy_sync_runs_total{stream="occupancy",status="succeeded"}`)).toBe(2);
  });

  it('counts webhook deliveries accepted, duplicate and refused by reason', async () => {
    const { sandbox, info } = await start(serveEnv);
    const customerId = sandbox.customers[0]!.id;
    const body = occupancyDelivery(customerId, '5d1e0000-0000-4000-8000-000000000001', '9e8d7c6b-0000-4000-8000-000000000001');
    const signed = () => ({ 'X-Service-Signature': signatureHeader(WEBHOOK_SECRET, body, Math.floor(Date.now() / 1000)) });
    expect((await get(info.webhookUrl!, 'POST', body, signed())).status).toBe(200);
    expect((await get(info.webhookUrl!, 'POST', body, signed())).status).toBe(200);
    expect((await get(info.webhookUrl!, 'POST', body)).status).toBeGreaterThanOrEqual(400);
    const stale = { 'X-Service-Signature': signatureHeader(WEBHOOK_SECRET, body, Math.floor(Date.now() / 1000) - 3600) };
    expect((await get(info.webhookUrl!, 'POST', body, stale)).status).toBeGreaterThanOrEqual(400);
    const text = (await get(`${info.opsUrl}/metrics`)).text;
    expect(metric(text, 'occupancy_sync_webhook_deliveries_total{outcome="accepted",reason=""}')).toBe(1);
    expect(metric(text, 'occupancy_sync_webhook_deliveries_total{outcome="duplicate",reason=""}')).toBe(1);
    expect(metric(text, 'occupancy_sync_webhook_deliveries_total{outcome="refused",reason="signature_missing"}')).toBe(1);
    expect(metric(text, 'occupancy_sync_webhook_deliveries_total{outcome="refused",reason="signature_stale"}')).toBe(1);
  });

  it('answers 503 on /healthz when the last run failed, naming the customer, stream and error', async () => {
    const { sandbox, info } = await start((sb, db) => serveEnv(sb, db, { API_SECRET: 'not-the-right-secret-at-all' }));
    await info.scheduler!.tick();
    const health = await get(`${info.opsUrl}/healthz`);
    expect(health.status).toBe(503);
    expect(health.json.status).toBe('unhealthy');
    const customerId = sandbox.customers[0]!.id;
    expect(health.json.problems.join('\n')).toMatch(new RegExp(`${customerId} (buildings|occupancy): last run failed: `));
    expect(JSON.stringify(health.json)).not.toContain('not-the-right-secret-at-all');
    const text = (await get(`${info.opsUrl}/metrics`)).text;
    // One failed run per built-in stream (buildings, floors, floor-spaces, occupancy).
    expect(metricSum(text, 'occupancy_sync_failures_total', 'kind="AUTH"')).toBe(4);
    expect(metricSum(text, 'occupancy_sync_runs_total', 'status="failed"')).toBe(4);
  });

  it('turns /healthz 503 when a lag limit is passed, and rejects a bad limit', async () => {
    const { info } = await start(serveEnv);
    await info.scheduler!.tick();
    expect((await get(`${info.opsUrl}/healthz?max_lag=1d`)).status).toBe(200);
    const late = await get(`${info.opsUrl}/healthz?max_lag=1s`);
    expect(late.status).toBe(503);
    expect(late.json.problems.join('\n')).toMatch(/occupancy: lag \d+ s exceeds 1 s/);
    expect((await get(`${info.opsUrl}/healthz?max_lag=soon`)).status).toBe(400);
    expect((await get(`${info.opsUrl}/nope`)).status).toBe(404);
    expect((await get(`${info.opsUrl}/metrics`, 'POST', '{}')).status).toBe(405);
  });

  it('stops cleanly on abort: listeners close and the promise resolves', async () => {
    const { info, stop } = await start(serveEnv);
    await stop();
    await expect(get(`${info.opsUrl}/healthz`)).rejects.toThrow(/ECONNREFUSED/);
    await expect(get(info.webhookUrl!, 'POST', '{}')).rejects.toThrow(/ECONNREFUSED/);
  });
});

describe('/healthz without a database', () => {
  it('answers 503 with the database error, and /metrics still answers', async () => {
    const { store, drop } = await migratedStore('sqlite', 'serve_db');
    cleanups.push(drop);
    await store.close();
    const ops = await startOpsServer({ host: '127.0.0.1', port: 0, store, metrics: createMetrics(), logger: silentLogger, clock: systemClock, health: () => ({}) });
    cleanups.push(() => ops.close());
    const health = await get(`${ops.url}/healthz`);
    expect(health.status).toBe(503);
    expect(health.json.database.ok).toBe(false);
    expect(health.json.problems[0]).toMatch(/^database: /);
    expect((await get(`${ops.url}/metrics`)).status).toBe(200);
  });
});
