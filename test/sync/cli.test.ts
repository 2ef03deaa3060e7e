import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { ExitCode } from '../../src/errors.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { DAY, againstTruth, countRows, dbRows, truthRows, childEnv } from './helpers.ts';
import { tempDir } from '../support/tmp.ts';
import { openTestStore, freshDatabase, type TestDatabase } from '../support/databases.ts';

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
    db = await freshDatabase('sqlite', 'cli');
    env = childEnv(sandbox, db.url, { LOG_LEVEL: 'silent', SYNC_INITIAL_HISTORY: '2d', SYNC_SETTLE_DELAY: '1s', SYNC_PAGE_SIZE: '500' });
  });
  afterEach(async () => {
    await sandbox.close();
    await db.drop();
  });

  it('sync prints the one-line summary, exits 0 and stores the ground truth', async () => {
    const result = await cli(['sync'], env);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(ExitCode.OK);
    expect(result.stdout).toMatch(/^sync: 1 customer, 4 streams, \d+ pages, [\d,]+ records, 0 failed in \d+\.\ds\n$/);
    const store = await openTestStore(db);
    try {
      const customer = sandbox.customers[0]!.id;
      const held = againstTruth(await dbRows(store, customer), sandbox, customer, (await store.getState(customer, 'occupancy'))!.watermark!, 0);
      expect(held.stored).toEqual(held.truth);
      expect(held.strays).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it("the summary's time is the time the user waited since the command started, not the run's own", async () => {
    // As if start-up (loading, migrating) had taken 4 s before the run: the executable counts from the process's start.
    const startedAtMs = performance.now() - 4_000;
    const run = async (args: string[]) => {
      const stdout = capture();
      await main(['node', 'occupancy-sync', ...args], { env: { ...env, LOG_LEVEL: 'silent' }, stdout, stderr: capture(), startedAtMs });
      return stdout.text();
    };
    const line = await run(['sync']);
    expect(Number(/ in (\d+\.\d)s\n$/.exec(line)?.[1])).toBeGreaterThanOrEqual(4);
    const json = JSON.parse(await run(['sync', '--json'])) as { seconds: number };
    expect(json.seconds).toBeGreaterThanOrEqual(4);
  });

  it('sync --stream limits the run to one stream; an unknown stream is a usage error (64) naming the valid ones', async () => {
    const one = await cli(['sync', '--stream', 'buildings'], env);
    expect(one.stdout).toMatch(/^sync: 1 customer, 1 stream, 1 page, 3 records, 0 failed/);
    const bad = await cli(['sync', '--stream', 'rooms'], env);
    expect(bad.code).toBe(ExitCode.USAGE);
    expect(bad.stderr).toBe('occupancy-sync: --stream "rooms": no such stream. Fix: use one of buildings, floors, floor-spaces, occupancy\n');
    const customer = await cli(['sync', '--customer', 'nobody'], env);
    expect(customer.code).toBe(ExitCode.USAGE);
    expect(customer.stderr).toBe(`occupancy-sync: --customer "nobody": no such customer is configured. Fix: use one of ${sandbox.customers[0]!.id}\n`);
  });

  it('sync --json prints the summary as one JSON object with every stream and the exit code', async () => {
    const result = await cli(['sync', '--json'], env);
    expect(result.code).toBe(ExitCode.OK);
    const summary = JSON.parse(result.stdout);
    expect(summary).toMatchObject({ command: 'sync', customers: 1, streams: 4, failed: 0, locked: 0, rejected: 0, interrupted: false, exitCode: 0 });
    expect(summary.records).toBeGreaterThan(0);
    expect(summary.outcomes.map((o: { stream: string; status: string }) => [o.stream, o.status])).toEqual([['buildings', 'succeeded'], ['floors', 'succeeded'], ['floor-spaces', 'succeeded'], ['occupancy', 'succeeded']]);
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
    expect(result.stdout).toMatch(/^sync: 2 customers, 4 streams, .* 1 failed in/);
    // One line for the customer and its cause, naming both streams; no stack trace.
    const lines = result.stderr.split('\n').filter((l) => l.includes(bad!.id) && l.includes('failed:'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^  ${bad!.id} buildings, floors, floor-spaces, occupancy: failed: the platform refused API key "${bad!.readKey.key}" at http://\\S+/api/v1/auth \\(HTTP 401\\)\\. Check that API_KEY`));
    expect(result.stderr).not.toMatch(/^\s+at /m);
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

  it('backfill refuses bad dates with a usage error (64) quoting what was typed', async () => {
    const cases: Array<[string[], string]> = [
      [['--from', '2026-01-01T00:00', '--to', '2026-01-02'], '--from "2026-01-01T00:00": a time needs a zone (add Z for UTC). Fix: use e.g. 2026-01-01, 2026-01-01T06:00:00Z, 7d (seven days ago) or now'],
      [['--from', '2026-11-31', '--to', '2026-12-02'], '--from "2026-11-31": no such date or time. Fix: use e.g. 2026-01-01, 2026-01-01T06:00:00Z, 7d (seven days ago) or now'],
      [['--from', '2026-02-01', '--to', '2026-02-30T00:00:00Z'], '--to "2026-02-30T00:00:00Z": no such date or time. Fix: use e.g. 2026-01-01, 2026-01-01T06:00:00Z, 7d (seven days ago) or now'],
      [['--from', 'yesterday', '--to', '2026-01-01'], '--from "yesterday": not an ISO 8601 date or date-time with a zone, a time ago such as 36h or 7d, nor now. Fix: use e.g. 2026-01-01, 2026-01-01T06:00:00Z, 7d (seven days ago) or now'],
      [['--from', '2026-01-02', '--to', '2026-01-01'], '--from "2026-01-02" is not before --to "2026-01-01". Fix: give a range with --from earlier than --to'],
      [['--from', '2026-01-01', '--to', '2026-01-02', '--stream', 'buildings'], '--stream "buildings": a full stream (kind: full): every run reads it whole, there is no range to backfill (`sync --stream buildings` refreshes it). Fix: use one of occupancy'],
    ];
    for (const [args, message] of cases) {
      const result = await cli(['backfill', ...args], env);
      expect(result.code, args.join(' ')).toBe(ExitCode.USAGE);
      expect(result.stderr).toBe(`occupancy-sync: ${message}\n`);
    }
    const future = await cli(['backfill', '--from', '2199-01-01', '--to', '2199-02-01'], env);
    expect(future.code).toBe(ExitCode.USAGE);
    expect(future.stderr).toMatch(/^occupancy-sync: --from "2199-01-01" is in the future, or within SYNC_SETTLE_DELAY of now \(\S+\): there is nothing to load yet\. Fix: /);
  });

  it('backfill loads its range, logs progress when not on a TTY, and leaves the incremental state alone', async () => {
    const from = new Date(Math.ceil((Date.now() - DAY) / 3_600_000) * 3_600_000);
    const to = new Date(from.getTime() + 6 * 3_600_000);
    const result = await cli(['backfill', '--from', from.toISOString(), '--to', to.toISOString()], { ...env, SYNC_STEP: '1h' });
    expect(result.code).toBe(ExitCode.OK);
    // The range of occupancy, and buildings, floors and floor spaces refreshed whole (a page each): a backfill into an
    // empty database leaves a complete one.
    expect(result.stdout).toMatch(/^backfill: 1 customer, 4 streams, 9 pages, [\d,]+ records, 0 failed/);
    const store = await openTestStore(db);
    try {
      const customer = sandbox.customers[0]!.id;
      const range = { from: from.getTime(), to: to.getTime() };
      expect(await dbRows(store, customer)).toEqual(truthRows(sandbox, customer, range));
      const [buildings] = await store.query<{ n: unknown }>('SELECT count(*) AS n FROM buildings WHERE customer_id = $1', [customer]);
      expect(Number(buildings!.n)).toBe(sandbox.truth.buildings(customer).length);
      expect(await store.getState(customer, 'occupancy')).toBeUndefined();
      expect(await store.getState(customer, 'occupancy#backfill')).toMatchObject({ rangeEnd: to.toISOString(), windowStart: null });
      const runs = await store.lastRuns(customer);

      // Asked again: it says the range is complete, names the run that loaded it, and records no new run.
      const again = await cli(['backfill', '--from', from.toISOString(), '--to', to.toISOString()], { ...env, SYNC_STEP: '1h' });
      expect(again.code).toBe(ExitCode.OK);
      const backfillRun = runs.find((r) => r.stateKey === 'occupancy#backfill')!;
      expect(again.stderr).toContain(
        `  ${customer} occupancy#backfill: [${from.toISOString()}, ${to.toISOString()}) is already complete (run ${backfillRun.id}, finished ${backfillRun.finishedAt}, ${backfillRun.records.toLocaleString('en-US')} records); nothing to do. Add --restart to load it again`,
      );
      expect((await store.lastRuns(customer)).find((r) => r.stateKey === 'occupancy#backfill')).toEqual(backfillRun);

      // Another range needs --restart.
      const other = await cli(['backfill', '--from', from.toISOString(), '--to', new Date(to.getTime() + 3_600_000).toISOString()], { ...env, SYNC_STEP: '1h' });
      expect(other.code).toBe(ExitCode.USAGE);
      expect(other.stderr).toMatch(/occupancy#backfill: failed: a backfill of \[.*\) is stored \(complete\); this one asks for \[.*\)\. Fix: add --restart/);
      const restarted = await cli(['backfill', '--restart', '--from', from.toISOString(), '--to', new Date(to.getTime() + 3_600_000).toISOString()], { ...env, SYNC_STEP: '1h' });
      expect(restarted.code).toBe(ExitCode.OK);
    } finally {
      await store.close();
    }
  });

  it('status shows watermark, lag and last run per customer and stream, as a table or JSON', async () => {
    const missing = await cli(['status'], env);
    // A read-only command finds no database where DATABASE_URL points: a configuration error (78) naming the path.
    expect(missing.code).toBe(ExitCode.CONFIG);
    expect(missing.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    expect(missing.stderr).toContain(`DATABASE_URL="file:${db.database.sqlitePath}": there is no SQLite database there yet. Fix: run \`npx occupancy-sync sync\` (or \`migrate\`), which creates it`);
    await cli(['migrate'], env);
    expect((await cli(['status'], env)).stdout).toContain('No sync state yet');
    await cli(['sync'], env);
    const table = await cli(['status'], env);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/CUSTOMER\s+STREAM\s+WATERMARK\s+LAG\s+LAST RUN\s+OUTCOME/);
    expect(table.stdout).toMatch(/occupancy\s+\S+Z\s+\d+s\s+\S+ \(incremental\)\s+succeeded/);
    const json = JSON.parse((await cli(['status', '--json'], env)).stdout);
    expect(json.map((e: { stream: string }) => e.stream)).toEqual(['buildings', 'floor-spaces', 'floors', 'occupancy']);
    expect(json[3]).toMatchObject({ customerId: sandbox.customers[0]!.id, lastRun: { status: 'succeeded', mode: 'incremental' }, inFlight: null });
    expect(json[3].lagMs).toBeGreaterThanOrEqual(1000);
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
    expect(output).toMatch(/^sync: 1 customer, 4 streams, \d+ pages/);
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
      expect(result.stdout).toMatch(/^demo: 2 customers, 4 streams, \d+ pages, [\d,]+ records, 0 failed/);
      expect(result.stdout.match(/customer \S+: 3 buildings, 6 floors, 12 floor spaces, [\d,]+ observations from \S+ to \S+, watermark \S+/g)).toHaveLength(2);
      const store = await openTestStore({ database: { url, dialect: 'sqlite', sqlitePath: join(tmp.dir, 'nested', 'demo.db') } });
      try {
        expect(await countRows(store)).toBeGreaterThan(2 * 12 * 250);
      } finally {
        await store.close();
      }
      // The hints work as printed: `DATABASE_URL=... npx occupancy-sync status` from a clone.
      const hints = result.stdout.slice(result.stdout.indexOf('Next:')).split('\n').slice(1).map((l) => l.trim()).filter(Boolean);
      expect(hints).toHaveLength(2);
      for (const hint of hints) {
        const match = /^DATABASE_URL=(\S+) npx occupancy-sync (.+)$/.exec(hint);
        expect(match, hint).not.toBeNull();
        const run = await cli(match![2]!.split(' '), { DATABASE_URL: match![1]! });
        expect(run.code, `${hint}\n${run.stderr}`).toBe(ExitCode.OK);
      }
    } finally {
      tmp.remove();
    }
  });
});
