import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryBudgetBackend, SharedBudgetBackend } from '../../src/api/budget/index.ts';
import { closeClients, createSyncTargets, openBudgets } from '../../src/app/clients.ts';
import { resolveConfig } from '../../src/config.ts';
import { silentLogger } from '../../src/logger.ts';
import { runPool } from '../support/pool.ts';
import { tempDir } from '../support/tmp.ts';
import { BUILDINGS, DATA, TOKEN } from './support.ts';

/** src/app/clients.ts: the budget's backend follows DATABASE_URL, and every client of a key in a process shares it. */

const C1 = '6f1c0d2e-8a4b-4c1d-9e2f-0123456789ab';
const C2 = '0a0a0a0a-0000-4000-8000-00000000000a';

describe('API budgets wired from the configuration', () => {
  let server: Server | undefined;
  let dir: ReturnType<typeof tempDir> | undefined;
  afterEach(async () => {
    await new Promise((r) => (server ? server.close(r) : r(undefined)));
    dir?.remove();
    server = dir = undefined;
  });

  it('keeps the budget where the database is: Postgres, a file beside a SQLite database, or memory', async () => {
    const env = { API_BASE_URL: 'https://api.example.com', API_KEY: 'k', API_SECRET: 's', CUSTOMER_ID: C1 };
    const pg = openBudgets(resolveConfig({ ...env, DATABASE_URL: 'postgres://u@db.example.com:5432/occ?schema=s1' }), { logger: silentLogger });
    const lite = openBudgets(resolveConfig({ ...env, DATABASE_URL: 'file:/tmp/x/occupancy.db' }), { logger: silentLogger });
    const memory = openBudgets(resolveConfig({ ...env, DATABASE_URL: 'file::memory:' }), { logger: silentLogger });
    expect([pg, lite, memory].map((b) => b.constructor)).toEqual([SharedBudgetBackend, SharedBudgetBackend, MemoryBudgetBackend]);
    expect([pg, lite].map((b) => (b as SharedBudgetBackend).dialect)).toEqual(['postgres', 'sqlite']);
    // Nothing is connected until a query asks for leave.
    await Promise.all([pg, lite, memory].map((b) => b.close()));
    expect(existsSync('/tmp/x/occupancy.db-api-budget')).toBe(false);
  });

  it('two customers on one key draw on one budget, in a file beside the SQLite database, closed with the clients', async () => {
    let inFlight = 0;
    let most = 0;
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url === '/api/v1/auth') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(TOKEN));
        most = Math.max(most, ++inFlight);
        setTimeout(() => {
          inFlight--;
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(DATA));
        }, 5);
      });
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    dir = tempDir('occupancy-sync-wiring-');
    const database = join(dir.dir, 'occupancy.db');
    const config = resolveConfig({ API_BASE_URL: url, DATABASE_URL: `file:${database}`, API_IN_FLIGHT: '2' });
    const shared = { apiKey: 'one-key', apiSecret: 'secret-abcdefgh', webhookSecrets: [], webhookHeaders: {} };
    const targets = createSyncTargets(config, [{ id: C1, ...shared }, { id: C2, ...shared }], { logger: silentLogger, baseUrl: url });
    await runPool(40, 16, (i) => targets[i % 2]!.client.request(BUILDINGS));
    expect(most).toBe(2);
    expect(targets[0]!.client.stats).toMatchObject({ inFlightLimit: 2, maxInFlight: 2 });
    expect(existsSync(`${database}-api-budget`)).toBe(true);
    await closeClients(targets);
  });
});
