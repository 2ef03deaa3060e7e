import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { runMain } from '../support/cli.ts';
import { freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { DAY, HOUR, childEnv, dbRows, truthRows } from '../sync/helpers.ts';

/**
 * `now` wherever a command takes a time, as people type it, and `backfill --to` defaulting to it. A relative time
 * means the start of its hour (src/time.ts), so each check takes the hour before and after the command: a command
 * that straddles an hour boundary may mean either. `report` takes local dates, so its `now` is today's date
 * (src/report/range.ts), and each help text says which.
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

  it("report takes --from and --to now or today (its range is local dates): --to now includes today so far, --to today ends with yesterday", async () => {
    expect((await runMain(['sync'], env)).code).toBe(ExitCode.OK);
    const range = async (args: string[]) => {
      const before = new Date().toISOString().slice(0, 10);
      const report = await runMain(['report', ...args, '--format', 'json'], env);
      const after = new Date().toISOString().slice(0, 10);
      expect(report.code, report.stderr).toBe(ExitCode.OK);
      const parsed = JSON.parse(report.stdout) as { range: { from: string; to: string }; portfolios: unknown };
      expect(parsed).toHaveProperty('portfolios');
      return { ...parsed.range, days: [...new Set([before, after])] };
    };
    const dayBefore = (date: string, n: number) => new Date(Date.parse(`${date}T00:00:00Z`) - n * DAY).toISOString().slice(0, 10);
    // --to now is up to now: today so far is in, so the range ends the day after today.
    const week = await range(['--from', '7d', '--to', 'now']);
    expect(week.days.map((d) => dayBefore(d, -1))).toContain(week.to);
    expect(week.days.map((d) => dayBefore(d, 7))).toContain(week.from);
    const untilToday = await range(['--from', '7d', '--to', 'today']);
    expect(untilToday.days).toContain(untilToday.to);
    const today = await range(['--from', 'today', '--to', '2100-01-01']);
    expect(today.days).toContain(today.from);
    // Without --to the report ends today (exclusive: with yesterday).
    const byDefault = await range(['--from', '2d']);
    expect(byDefault.days).toContain(byDefault.to);
  });

  it('the help of backfill, state rewind and report says what now means there', async () => {
    const help = async (args: string[]) => {
      const result = await runMain([...args, '--help'], env);
      expect(result.code, result.stderr).toBe(ExitCode.OK);
      // Options as one line each, whatever width commander wraps them to.
      return result.stdout.replace(/\n {10,}/g, ' ').replace(/ +/g, ' ');
    };
    const backfill = await help(['backfill']);
    expect(backfill).toMatch(/--from <time> start of the range, inclusive: .*or now \(the start of this hour, as 0h, not this instant\)\n/);
    expect(backfill).toMatch(/--to <time> end of the range, exclusive: the same forms \(now: the start of this hour, as 0h, not this instant\) \(default: "now"\)\n/);
    expect(await help(['state', 'rewind'])).toMatch(/--to <time> the new watermark: .* or now \(the start of this hour, as 0h, not this instant\); before the current one\n/);
    const report = await help(['report']);
    expect(report).toMatch(/--from <date> first local date: a date such as 2026-03-23, today, or a time before now such as 7d or 2w \(the date it falls on in --tz\)\n/);
    expect(report).toMatch(/--to <date> the local date after the last one \(exclusive\): the same forms as --from; default today, so the report ends with yesterday \(now: up to now, today so far included\)\n/);
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
