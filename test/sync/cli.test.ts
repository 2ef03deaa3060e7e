import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { ExitCode } from '../../src/errors.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { tempDir } from '../helpers/tmp.ts';
import { childEnv } from './child.ts';
import { DAY, countRows, dbRows, openTestStore, testDatabase, truthRows, type TestDatabase } from './helpers.ts';

function capture() {
  let text = '';
  return { write: (s: string) => void (text += s), text: () => text };
}

async function cli(args: string[], env: Record<string, string | undefined>, signal = new AbortController().signal) {
  const stdout = capture();
  const stderr = capture();
  const code = await main(['node', 'occupancy-sync', ...args], { env: { LOG_LEVEL: 'silent', ...env }, stdout, stderr, signal });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

describe('sync, backfill, status commands (SQLite)', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let env: Record<string, string>;

  beforeEach(async () => {
    sandbox = await startSandbox({ seed: 5, customers: 2, dataStart: Math.floor((Date.now() - DAY) / 300_000) * 300_000, lateArrivalMaxMs: 0 });
    db = await testDatabase('sqlite', 'cli');
    env = childEnv(sandbox, db.url, { LOG_LEVEL: 'silent', SYNC_INITIAL_HISTORY: '2d', SYNC_SETTLE_DELAY: '1s', SYNC_PAGE_SIZE: '500' });
  });
  afterEach(async () => {
    await sandbox.close();
    await db.cleanup();
  });

  it('sync prints the one-line summary, exits 0 and stores the ground truth', async () => {
    const result = await cli(['sync'], env);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(ExitCode.OK);
    expect(result.stdout).toMatch(/^sync: 1 customer, 2 streams, \d+ pages, [\d,]+ records, 0 failed in \d+\.\ds\n$/);
    const store = await openTestStore(db);
    try {
      const customer = sandbox.customers[0]!.id;
      const to = Date.parse((await store.getState(customer, 'occupancy'))!.watermark!);
      expect(await dbRows(store, customer)).toEqual(truthRows(sandbox, customer, { to }));
    } finally {
      await store.close();
    }
  });

  it('sync --stream limits the run to one stream; an unknown stream is a config error naming the valid ones', async () => {
    const one = await cli(['sync', '--stream', 'buildings'], env);
    expect(one.stdout).toMatch(/^sync: 1 customer, 1 stream, 1 page, 3 records, 0 failed/);
    const bad = await cli(['sync', '--stream', 'floors'], env);
    expect(bad.code).toBe(ExitCode.CONFIG);
    expect(bad.stderr).toContain('--stream "floors": no such stream. Fix: use one of buildings, occupancy');
  });

  it('with several customers, a wrong secret fails that customer only and the exit code says authentication', async () => {
    const [good, bad] = sandbox.customers;
    const file = join(tempDir().dir, 'customers.json');
    writeFileSync(file, JSON.stringify([
      { id: good!.id, apiKey: good!.readKey.key, apiSecretEnv: 'GOOD_SECRET' },
      { id: bad!.id, apiKey: bad!.readKey.key, apiSecretEnv: 'BAD_SECRET' },
    ]));
    const { API_KEY: _k, API_SECRET: _s, CUSTOMER_ID: _c, ...rest } = env;
    const result = await cli(['sync'], { ...rest, CUSTOMERS_FILE: file, GOOD_SECRET: good!.readKey.secret, BAD_SECRET: 'wrong-secret-for-this-key' });
    expect(result.code).toBe(ExitCode.AUTH);
    expect(result.stdout).toMatch(/^sync: 2 customers, 2 streams, .* 1 failed in/);
    expect(result.stderr).toContain(`${bad!.id} buildings: failed:`);
    expect(result.stderr).not.toContain('wrong-secret-for-this-key');
    const store = await openTestStore(db);
    try {
      expect(await countRows(store, good!.id)).toBeGreaterThan(0);
      expect(await countRows(store, bad!.id)).toBe(0);
    } finally {
      await store.close();
    }
  });

  it('exits 75 and says so when another run holds the lock', async () => {
    const store = await openTestStore(db);
    const lock = await store.tryLock(sandbox.customers[0]!.id, 'buildings');
    try {
      const result = await cli(['sync'], env);
      expect(result.code).toBe(ExitCode.LOCKED);
      expect(result.stderr).toContain('locked by another run');
      expect(result.stdout).toMatch(/0 failed, 1 locked in/);
    } finally {
      await lock!.release();
      await store.close();
    }
  });

  it('backfill validates its timestamps with a clear error', async () => {
    const noZone = await cli(['backfill', '--from', '2026-01-01T00:00', '--to', '2026-01-02'], env);
    expect(noZone.code).toBe(ExitCode.CONFIG);
    expect(noZone.stderr).toContain('--from "2026-01-01T00:00": not an ISO 8601 date or date-time with a zone (a time needs a zone: add Z for UTC)');
    const reversed = await cli(['backfill', '--from', '2026-01-02', '--to', '2026-01-01'], env);
    expect(reversed.code).toBe(ExitCode.CONFIG);
    expect(reversed.stderr).toContain('is not before --to');
    const garbage = await cli(['backfill', '--from', 'yesterday', '--to', '2026-01-01'], env);
    expect(garbage.stderr).toContain('--from "yesterday"');
    const notBackfillable = await cli(['backfill', '--from', '2026-01-01', '--to', '2026-01-02', '--stream', 'buildings'], env);
    expect(notBackfillable.stderr).toContain('no such stream that can be backfilled');
  });

  it('backfill loads its range, logs progress when not on a TTY, and leaves the incremental state alone', async () => {
    const from = new Date(Math.ceil((Date.now() - DAY) / 3_600_000) * 3_600_000);
    const to = new Date(from.getTime() + 6 * 3_600_000);
    const result = await cli(['backfill', '--from', from.toISOString(), '--to', to.toISOString()], { ...env, SYNC_STEP: '1h' });
    expect(result.code).toBe(ExitCode.OK);
    expect(result.stdout).toMatch(/^backfill: 1 customer, 1 stream, 6 pages, [\d,]+ records, 0 failed/);
    const store = await openTestStore(db);
    try {
      const customer = sandbox.customers[0]!.id;
      const range = { from: from.getTime(), to: to.getTime() };
      expect(await dbRows(store, customer)).toEqual(truthRows(sandbox, customer, range));
      expect(await store.getState(customer, 'occupancy')).toBeUndefined();
      expect(await store.getState(customer, 'occupancy#backfill')).toMatchObject({ rangeEnd: to.toISOString(), windowStart: null });
    } finally {
      await store.close();
    }
  });

  it('status shows watermark, lag and last run per customer and stream, as a table or JSON', async () => {
    const empty = await cli(['status'], env);
    expect(empty.stdout).toContain('No sync state yet');
    await cli(['sync'], env);
    const table = await cli(['status'], env);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/CUSTOMER\s+STREAM\s+WATERMARK\s+LAG\s+LAST RUN\s+OUTCOME/);
    expect(table.stdout).toMatch(/occupancy\s+\S+Z\s+\d+s\s+\S+ \(incremental\)\s+succeeded/);
    const json = JSON.parse((await cli(['status', '--json'], env)).stdout);
    expect(json.map((e: { stream: string }) => e.stream)).toEqual(['buildings', 'occupancy']);
    expect(json[1]).toMatchObject({ customerId: sandbox.customers[0]!.id, lastRun: { status: 'succeeded', mode: 'incremental' }, inFlight: null });
    expect(json[1].lagMs).toBeGreaterThanOrEqual(1000);
  });

  it('schedule runs on start with --now, then stops on SIGTERM with exit 0', async () => {
    const controller = new AbortController();
    let output = '';
    const stdout = {
      write: (s: string) => {
        output += s;
        if (output.includes('sync: ')) controller.abort(new Error('received SIGTERM'));
      },
    };
    const code = await main(['node', 'occupancy-sync', 'schedule', '--now'], { env: { ...env, SYNC_CRON: '0 0 1 1 *' }, stdout, stderr: capture(), signal: controller.signal });
    expect(code).toBe(ExitCode.OK);
    expect(output).toMatch(/^sync: 1 customer, 2 streams, \d+ pages/);
  });

  it('schedule refuses an invalid SYNC_CRON with exit 78', async () => {
    const result = await cli(['schedule'], { ...env, SYNC_CRON: '*/5 * * *  banana' });
    expect(result.code).toBe(ExitCode.CONFIG);
    expect(result.stderr).toContain('SYNC_CRON="*/5 * * *  banana": not a valid cron expression');
  });

  it('every command has help with examples', async () => {
    for (const command of ['sync', 'backfill', 'schedule', 'status', 'demo']) {
      const result = await cli([command, '--help'], {});
      expect(result.code).toBe(0);
      expect(result.stdout).toContain('Examples:');
    }
  });
});

describe('demo command', () => {
  it('starts the sandbox, syncs two customers into the database and prints what landed', async () => {
    const tmp = tempDir();
    try {
      const url = `file:${join(tmp.dir, 'nested', 'demo.db')}`;
      const result = await cli(['demo', '--database', url, '--days', '1'], {});
      expect(result.stderr).toBe('');
      expect(result.code).toBe(ExitCode.OK);
      expect(result.stdout).toMatch(/^demo: 2 customers, 2 streams, \d+ pages, [\d,]+ records, 0 failed/);
      expect(result.stdout.match(/customer \S+: 3 buildings, [\d,]+ observations from \S+ to \S+, watermark \S+/g)).toHaveLength(2);
      const store = await openTestStore({ url, database: { url, dialect: 'sqlite', sqlitePath: join(tmp.dir, 'nested', 'demo.db') }, cleanup: async () => {} });
      try {
        expect(await countRows(store)).toBeGreaterThan(2 * 12 * 250);
      } finally {
        await store.close();
      }
    } finally {
      tmp.remove();
    }
  });
});
