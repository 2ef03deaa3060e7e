import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { runMain } from '../support/cli.ts';
import { freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { DAY, HOUR, childEnv, dbRows, truthRows } from '../sync/helpers.ts';

/**
 * `now` wherever a command takes a time, as people type it, and `backfill --to` defaulting to it. A relative time
 * means the start of its hour (src/time.ts), so each check takes the hour before and after the command: a command
 * that straddles an hour boundary may mean either.
 */

const hourOf = (ms: number) => Math.floor(ms / HOUR) * HOUR;

/** Runs `command` and returns it with the start of the hour before and after it. */
async function timed<T>(command: () => Promise<T>): Promise<{ result: T; hours: number[] }> {
  const before = hourOf(Date.now());
  const result = await command();
  return { result, hours: [...new Set([before, hourOf(Date.now())])] };
}

describe('now as a time on the command line', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let env: Record<string, string>;
  let customer: string;
  beforeEach(async () => {
    sandbox = await startSandbox({ seed: 41, customers: 1, dataStart: Math.floor((Date.now() - DAY) / 300_000) * 300_000, lateArrivalMaxMs: 0 });
    db = await freshDatabase('sqlite', 'now');
    env = childEnv(sandbox, db.url, { LOG_LEVEL: 'silent', SYNC_INITIAL_HISTORY: '6h', SYNC_SETTLE_DELAY: '1s' });
    customer = sandbox.customers[0]!.id;
  });
  afterEach(async () => {
    await sandbox.close();
    await db.drop();
  });

  it('backfill without --to loads up to now (the start of this hour), and --to now names the same range', async () => {
    const { result, hours } = await timed(() => runMain(['backfill', '--from', '3h'], env));
    expect(result.code, result.stderr).toBe(ExitCode.OK);
    const store = await openTestStore(db);
    try {
      const state = (await store.getState(customer, 'occupancy#backfill'))!;
      const end = Date.parse(state.rangeEnd!);
      expect(hours).toContain(end);
      expect(Date.parse(state.rangeStart!)).toBe(end - 3 * HOUR);
      expect(await dbRows(store, customer)).toEqual(truthRows(sandbox, customer, { from: end - 3 * HOUR, to: end }));

      const again = await timed(() => runMain(['backfill', '--from', '3h', '--to', 'now'], env));
      // Still the same hour: the same range, already complete (another hour would be another range).
      if (again.hours.length === 1 && again.hours[0] === end) {
        expect(again.result.code, again.result.stderr).toBe(ExitCode.OK);
        expect(`${again.result.stdout}${again.result.stderr}`).toMatch(/already complete/);
      }
    } finally {
      await store.close();
    }
  });

  it('state rewind --to now moves the watermark back to the start of this hour', async () => {
    expect((await runMain(['sync'], env)).code).toBe(ExitCode.OK);
    const { result, hours } = await timed(() => runMain(['state', 'rewind', '--stream', 'occupancy', '--to', 'now', '--yes'], env));
    // The sync's watermark is a second before it ran: in the first second of an hour, that is before the hour.
    if (result.code === ExitCode.USAGE) expect(result.stderr).toMatch(/is not before the watermark/);
    else {
      expect(result.code, result.stderr).toBe(ExitCode.OK);
      const to = /-> (\S+) \(change/.exec(result.stdout)?.[1];
      expect(hours).toContain(Date.parse(to!));
    }
  });

  it('report takes --from and --to now', async () => {
    expect((await runMain(['sync'], env)).code).toBe(ExitCode.OK);
    const report = await runMain(['report', '--from', '2h', '--to', 'now', '--format', 'json'], env);
    expect(report.code, report.stderr).toBe(ExitCode.OK);
    expect(JSON.parse(report.stdout)).toHaveProperty('total');
  });

  it('a time that is none of the forms is a usage error that lists now among them', async () => {
    const result = await runMain(['backfill', '--from', '3h', '--to', 'soon'], env);
    expect(result.code).toBe(ExitCode.USAGE);
    expect(result.stderr).toBe(
      'occupancy-sync: --to "soon": not an ISO 8601 date or date-time with a zone, a time ago such as 36h or 7d, nor now. ' +
        'Fix: use e.g. 2026-01-01, 2026-01-01T06:00:00Z, 7d (seven days ago) or now\n',
    );
  });
});
