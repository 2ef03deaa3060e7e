import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '../src/clock.ts';
import { resolveConfig, type Config } from '../src/config.ts';
import { silentLogger } from '../src/logger.ts';
import { createMetrics } from '../src/metrics.ts';
import { startSandbox, type Sandbox } from '../src/sandbox/index.ts';
import { createSyncPass } from '../src/serve/sync-pass.ts';
import { openDatabase, runOnce, selectStreams } from '../src/sync/runner.ts';
import type { SyncReport } from '../src/sync/engine.ts';

/**
 * Auth economy: POSTs to the auth endpoint per simulated hour of continuous syncing, tokens living expiresIn 900 s.
 * The sandbox and the client share one FakeClock; each pass syncs every stream and then the clock moves on by
 * `everyMs`. Measured for each way the product runs passes back to back:
 *  - `serve`: one long-lived client per customer across passes (src/serve/sync-pass.ts);
 *  - `schedule` / cron `sync`: a fresh client per pass (runOnce), without and with TOKEN_CACHE_FILE.
 */

export interface AuthEconomy {
  path: 'serve' | 'runOnce' | 'runOnce+cache';
  label: string;
  passes: number;
  authCalls: number;
  /** Auth calls scaled to one hour of passes. */
  perHour: number;
}

const HOUR = 3_600_000;

interface Harness {
  sandbox: Sandbox;
  clock: FakeClock;
  config: Config;
  dir: string;
}

async function harness(cacheFile: boolean): Promise<Harness> {
  const clock = new FakeClock('2026-03-02T08:00:00.000Z');
  const sandbox = await startSandbox({ clock, seed: 3, customers: 1, buildingsPerCustomer: 1, floorSpacesPerBuilding: 2, expiresIn: 900 });
  const dir = mkdtempSync(join(tmpdir(), 'occupancy-bench-auth-'));
  const customer = sandbox.customers[0]!;
  const config = resolveConfig({
    API_BASE_URL: sandbox.url,
    API_KEY: customer.readKey.key,
    API_SECRET: customer.readKey.secret,
    CUSTOMER_ID: customer.id,
    DATABASE_URL: `file:${join(dir, 'auth.db')}`,
    SYNC_INITIAL_HISTORY: '1h',
    ...(cacheFile ? { TOKEN_CACHE_FILE: join(dir, 'tokens.json') } : {}),
  });
  return { sandbox, clock, config, dir };
}

function check(report: SyncReport): void {
  const bad = report.outcomes.find((o) => o.status !== 'succeeded');
  if (bad) throw new Error(`auth economy: a pass ended ${bad.status}: ${String((bad.error as Error | undefined)?.message ?? bad.note)}`);
}

export async function measureAuthEconomy(options: { passes: number; everyMs: number }): Promise<AuthEconomy[]> {
  const results: AuthEconomy[] = [];
  const scale = HOUR / (options.passes * options.everyMs);
  const kinds: Array<[AuthEconomy['path'], string, boolean]> = [
    ['serve', 'serve daemon (long-lived clients)', false],
    ['runOnce', 'schedule / cron sync (client per pass)', false],
    ['runOnce+cache', 'cron sync with TOKEN_CACHE_FILE', true],
  ];
  for (const [path, label, cacheFile] of kinds) {
    const h = await harness(cacheFile);
    const store = await openDatabase(h.config.database);
    const streams = selectStreams(undefined);
    const pass = path === 'serve'
      ? createSyncPass({ config: h.config, store, logger: silentLogger, metrics: createMetrics({ processMetrics: false }), clock: h.clock, customers: h.config.customers, streams })
      : undefined;
    try {
      for (let i = 0; i < options.passes; i++) {
        const report = pass
          ? await pass.run(new AbortController().signal)
          : await runOnce({ config: h.config, store, logger: silentLogger, customers: h.config.customers, streams, clock: h.clock });
        check(report);
        h.clock.advance(options.everyMs);
      }
      const authCalls = h.sandbox.stats.authCalls;
      results.push({ path, label, passes: options.passes, authCalls, perHour: authCalls * scale });
    } finally {
      await pass?.close();
      await store.close();
      await h.sandbox.close();
      rmSync(h.dir, { recursive: true, force: true });
    }
  }
  return results;
}
