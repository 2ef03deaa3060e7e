import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { DAY, HOUR, MIN, againstTruth, dbRows, truthRows, childEnv } from '../sync/helpers.ts';
import { DIALECTS, openTestStore, freshDatabase, type TestDatabase } from '../support/databases.ts';
import { runMain } from '../support/cli.ts';
import { formatStates } from '../../src/cli/commands/state.ts';
import type { SyncState } from '../../src/store/types.ts';

const cli = runMain;

describe.each(DIALECTS)('state show, rewind and reset on %s', (dialect) => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let env: Record<string, string>;
  beforeEach(async () => {
    sandbox = await startSandbox({ seed: 21, customers: 1, dataStart: Math.floor((Date.now() - DAY) / 300_000) * 300_000, lateArrivalMaxMs: 0 });
    db = await freshDatabase(dialect, 'state');
    env = childEnv(sandbox, db.url, { LOG_LEVEL: 'silent', SYNC_INITIAL_HISTORY: '12h', SYNC_STEP: '2h', SYNC_SETTLE_DELAY: '1s', SYNC_LOOKBACK: '15m' });
  });
  afterEach(async () => {
    await sandbox.close();
    await db.drop();
  });

  it('a rewind needs --yes, is recorded with who and when, and the next sync re-reads exactly the rewound period', async () => {
    expect((await cli(['sync'], env)).code).toBe(ExitCode.OK);
    const customer = sandbox.customers[0]!.id;
    const store = await openTestStore(db);
    try {
      const before = (await store.getState(customer, 'occupancy'))!;
      const to = new Date(Math.floor((Date.parse(before.watermark!) - 3 * HOUR) / MIN) * MIN).toISOString();

      const dry = await cli(['state', 'rewind', '--stream', 'occupancy', '--to', to], env);
      expect(dry.code).toBe(ExitCode.USAGE);
      expect(dry.stdout).toBe(`would move the watermark of ${customer} occupancy from ${before.watermark} back to ${to}; nothing changed. Add --yes to do it.\n`);
      expect(await store.getState(customer, 'occupancy')).toEqual(before);

      const forward = await cli(['state', 'rewind', '--stream', 'occupancy', '--to', before.watermark!, '--yes'], env);
      expect(forward.code).toBe(ExitCode.USAGE);
      expect(forward.stderr).toMatch(/is not before the watermark of .* occupancy \(.*\)\. Fix: give an earlier time/);

      const done = await cli(['state', 'rewind', '--stream', 'occupancy', '--to', to, '--yes'], env);
      expect(done.code, done.stderr).toBe(ExitCode.OK);
      expect(done.stdout).toMatch(new RegExp(`^${customer} occupancy: watermark ${before.watermark} -> ${to} \\(change \\d+\\); the next run reads from ${to} minus SYNC_LOOKBACK\\n$`));
      expect((await store.getState(customer, 'occupancy'))!.watermark).toBe(to);
      const [change] = await store.stateChanges({ customerId: customer });
      expect(change).toMatchObject({ action: 'rewind', stateKey: 'occupancy', oldWatermark: before.watermark, newWatermark: to, before: { watermark: before.watermark }, after: { watermark: to } });
      expect(change!.actor).toMatch(/^\S+@\S+$/);

      const shown = await cli(['state', 'show', '--stream', 'occupancy'], env);
      expect(shown.stdout).toMatch(new RegExp(`${customer}\\s+occupancy\\s+${to}`));
      expect(shown.stdout).toContain(`rewind ${customer} occupancy: watermark ${before.watermark} -> ${to}`);
      const json = JSON.parse((await cli(['state', 'show', '--json'], env)).stdout);
      expect(json.changes).toHaveLength(1);
      // The state key is printed as `stream`, the name --stream and the tables give it (the store's code says stateKey).
      expect(json.states).toContainEqual(expect.objectContaining({ customerId: customer, stream: 'occupancy', watermark: to }));
      expect(json.changes[0]).toMatchObject({ customerId: customer, stream: 'occupancy', before: { stream: 'occupancy' }, after: { stream: 'occupancy', watermark: to } });
      expect(JSON.stringify(json)).not.toContain('stateKey');

      // The next run reads [to - lookback, now - settle) and nothing else; the rows it upserts are the same ones.
      const rowsBefore = await dbRows(store, customer);
      expect((await cli(['sync', '--stream', 'occupancy'], env)).code).toBe(ExitCode.OK);
      const [run] = (await store.lastRuns(customer)).filter((r) => r.stateKey === 'occupancy');
      const after = (await store.getState(customer, 'occupancy'))!.watermark!;
      // The run's last window may end after the watermark (capped by the platform's Date header, whole seconds):
      // what it read lies between the rewound period up to the watermark and up to the run's end.
      const reread = truthRows(sandbox, customer, { from: Date.parse(to) - 15 * MIN, to: Date.parse(after) });
      const readable = truthRows(sandbox, customer, { from: Date.parse(to) - 15 * MIN, to: Date.parse(run!.finishedAt!) });
      expect(run!.records).toBeGreaterThanOrEqual(reread.length);
      expect(run!.records).toBeLessThanOrEqual(readable.length);
      const all = await dbRows(store, customer);
      expect(all.slice(0, rowsBefore.length)).toEqual(rowsBefore);
      // Rows before the watermark are the truth; the tick at it, stored when the run ended within its second, the truth's.
      const held = againstTruth(all, sandbox, customer, after);
      expect(held.stored).toEqual(held.truth);
      expect(held.strays).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('a rewind waits for no one: a run holding the lock makes it exit 75 and change nothing', async () => {
    await cli(['sync'], env);
    const customer = sandbox.customers[0]!.id;
    const store = await openTestStore(db);
    const lock = await store.tryLock(customer, 'occupancy');
    try {
      const before = await store.getState(customer, 'occupancy');
      const result = await cli(['state', 'rewind', '--stream', 'occupancy', '--to', new Date(Date.now() - 6 * HOUR).toISOString(), '--yes'], env);
      expect(result.code).toBe(ExitCode.LOCKED);
      expect(result.stderr).toContain(`${customer} occupancy: a run holds its lock; nothing changed`);
      expect(await store.getState(customer, 'occupancy')).toEqual(before);
    } finally {
      await lock!.release();
      await store.close();
    }
  });

  it('reset removes a stream state (a backfill starts over), recorded; rewind refuses streams without a watermark', async () => {
    const from = new Date(Math.ceil((Date.now() - 20 * HOUR) / HOUR) * HOUR).toISOString();
    const to = new Date(Date.parse(from) + 4 * HOUR).toISOString();
    expect((await cli(['backfill', '--from', from, '--to', to], env)).code).toBe(ExitCode.OK);
    const customer = sandbox.customers[0]!.id;
    const notIncremental = await cli(['state', 'rewind', '--stream', 'occupancy#backfill', '--to', from, '--yes'], env);
    expect(notIncremental.code).toBe(ExitCode.USAGE);
    expect(notIncremental.stderr).toContain('only the watermark of an incremental stream can be rewound');
    const reset = await cli(['state', 'reset', '--stream', 'occupancy#backfill', '--yes'], env);
    expect(reset.code).toBe(ExitCode.OK);
    expect(reset.stdout).toMatch(/occupancy#backfill: state removed \(change \d+\); the next run starts the backfill over/);
    const store = await openTestStore(db);
    try {
      expect(await store.getState(customer, 'occupancy#backfill')).toBeUndefined();
      expect((await store.stateChanges())[0]).toMatchObject({ action: 'reset', stateKey: 'occupancy#backfill', after: undefined });
    } finally {
      await store.close();
    }
    // With the state gone, another range needs no --restart.
    const other = await cli(['backfill', '--from', from, '--to', new Date(Date.parse(to) + HOUR).toISOString()], env);
    expect(other.code).toBe(ExitCode.OK);

    // A stream or customer that names nothing is a typing error (exit 64 and the names there are), not an empty answer.
    const noStream = 'occupancy-sync: --stream "ocupancy": no stream of that name, and no state stored under it. Fix: use one of buildings, floors, floor-spaces, occupancy (`npx occupancy-sync state show` lists the stored keys)\n';
    for (const args of [['state', 'reset', '--stream', 'ocupancy', '--yes'], ['state', 'show', '--stream', 'ocupancy']]) {
      const typo = await cli(args, env);
      expect([typo.code, typo.stderr], args.join(' ')).toEqual([ExitCode.USAGE, noStream]);
    }
    for (const args of [['status', '--customer', 'nope'], ['state', 'show', '--customer', 'nope']]) {
      const typo = await cli(args, env);
      expect([typo.code, typo.stderr], args.join(' ')).toEqual([ExitCode.USAGE, `occupancy-sync: --customer "nope": no such customer is configured. Fix: use one of ${customer}\n`]);
    }
    // A key stored for a stream no longer defined can still be shown and reset; a known stream with no state is no error.
    expect((await cli(['state', 'show', '--stream', 'occupancy#backfill'], env)).code).toBe(ExitCode.OK);
  });
});

describe('state show as a table', () => {
  const base = {
    customerId: 'c1',
    stateKey: 'occupancy#backfill',
    watermark: '2026-01-05T03:00:00.000Z',
    windowStart: '2026-01-05T03:00:00.000Z',
    windowEnd: '2026-01-05T04:00:00.000Z',
    pageCursor: 'abc',
    rangeStart: '2026-01-05T00:00:00.000Z',
    rangeEnd: '2026-01-06T00:00:00.000Z',
    updatedAt: '2026-01-05T05:00:00.000Z',
  } as SyncState;

  it('shows the windows read ahead of the one in flight, how many of them complete', () => {
    const windows = [
      { from: '2026-01-05T04:00:00.000Z', to: '2026-01-05T05:00:00.000Z', cursor: null, done: true },
      { from: '2026-01-05T05:00:00.000Z', to: '2026-01-05T06:00:00.000Z', cursor: 'p2', done: false },
    ];
    const [header, row] = formatStates([{ ...base, windows }], []).split('\n');
    expect(header).toMatch(/PAGE CURSOR +READ AHEAD +RANGE/);
    expect(row).toContain('2 windows, 1 complete');
    expect(formatStates([base], []).split('\n')[1]).toMatch(/abc +- +\[2026-01-05T00/);
  });
});
