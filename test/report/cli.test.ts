import { afterEach, describe, expect, it } from 'vitest';
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { main } from '../../src/cli/main.ts';
import { ExitCode } from '../../src/errors.ts';
import { freshDatabase, openTestStore } from '../support/databases.ts';
import { C, load, makeReadings, SETTINGS } from './tw-fixture.ts';

/**
 * `occupancy-sync report` as the binary runs it, against a SQLite file holding a small portfolio (tw-fixture.ts):
 * building > floor > floor space by name, working hours unless --all-hours, low coverage flagged, utilization only
 * where capacity is known; the figures are the views' (test/report/time-weighted-views.test.ts checks those against
 * an independent computation), summed over the dates as ratios of sums.
 */

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function fixtureDb(refresh = true): Promise<{ env: Record<string, string>; dir: string; file: string; query: (sql: string) => Promise<Array<Record<string, unknown>>> }> {
  const db = await freshDatabase('sqlite', 'report');
  cleanups.push(db.drop);
  const env = { DATABASE_URL: db.url, LOG_LEVEL: 'silent' };
  const store = await openTestStore(db);
  await load(store, makeReadings(), C, refresh);
  // The killed run's process had the fixture's settings: the calendar of the spaces of no known building is theirs
  // (a run records it before its streams), not what this test's environment would resolve.
  if (!refresh) await store.reconcileAggregates(C, SETTINGS);
  await store.close();
  const query = async (sql: string) => {
    const s = await openTestStore(db);
    try {
      return await s.query<Record<string, unknown>>(sql);
    } finally {
      await s.close();
    }
  };
  return { env, dir: db.dir!, file: db.path!, query };
}

function capture() {
  let text = '';
  return { write: (s: string) => void (text += s), text: () => text };
}

/** `occupancy-sync report ...` as the binary runs it: exit code, stdout and stderr. */
async function report(env: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = capture();
  const stderr = capture();
  const code = await main(['node', 'occupancy-sync', 'report', ...args], { env, stdout, stderr, signal: new AbortController().signal });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

const DATES = ['--from', '2026-03-23', '--to', '2026-03-27'];

function csvRows(text: string): Array<Record<string, string>> {
  const [head, ...lines] = text.trimEnd().split('\r\n');
  const names = head!.split(',');
  // The fixture's names hold no comma or quote.
  return lines.map((line) => Object.fromEntries(line.split(',').map((v, i) => [names[i]!, v])));
}

describe('occupancy-sync report', () => {
  it('a table by building > floor > floor space, by name, in working hours, low coverage flagged', async () => {
    const { env } = await fixtureDb();
    const { code, stdout, stderr } = await report(env, ...DATES);
    expect({ code, stderr }).toEqual({ code: ExitCode.OK, stderr: '' });
    const lines = stdout.split('\n');
    expect(lines[0]).toBe('Utilization in working hours, 2026-03-23 to 2026-03-27 (exclusive), each building in its own time zone');
    expect(lines[1]).toMatch(/^\s+TYPE\s+CAP\s+COVERAGE\s+USED\s+AVG\s+PEAK\s+UTIL\s+PEAK UTIL$/);
    const labels = lines.slice(2).filter((l) => /^\S|^ {2}\S|^ {4}\S/.test(l)).map((l) => /^(\s*\S+(?: \S+)*?)(?:\s{2,}|$)/.exec(l)![1]!);
    expect(labels.slice(0, 16)).toEqual([
      'Annex (America/New_York)',
      '  Ground floor',
      '    Lounge',
      'Harbour Hall (Europe/Berlin)',
      '  Second floor',
      '    Desk 2.14',
      '    Fjord',
      '  Third floor',
      '    Phone booth 3.01',
      '    Quiet room',
      'Lotus Tower (Asia/Kolkata)',
      '  Ground floor',
      '    Banyan',
      '    Desk 0.02',
      'No building (UTC)',
      '  No floor',
    ]);
    // The phone booth was never measured: coverage 0, flagged, nothing else known; its capacity is 1.
    expect(lines.find((l) => l.includes('Phone booth 3.01'))).toMatch(/Phone booth 3\.01\s+phone_booth\s+1\s+0\.0% !\s+-\s+-\s+-\s+-\s+-$/);
    // Presence-only, capacity unknown: time used, no people, no utilization.
    expect(lines.find((l) => l.includes('Quiet room'))).toMatch(/Quiet room\s+focus_room\s+-\s+\d+\.\d%(?: !| {2})\s+\d+\.\d%\s+-\s+-\s+-\s+-$/);
    // Harbour Hall's Fjord fell silent for hours, its desk for good: the building's coverage is flagged; the Annex's is not.
    expect(lines.find((l) => l.startsWith('Harbour Hall'))).toMatch(/^Harbour Hall \(Europe\/Berlin\)\s+\d+\.\d% !/);
    expect(lines.find((l) => l.startsWith('Annex'))).toMatch(/^Annex \(America\/New_York\)\s+100\.0% {2}/);
    expect(stdout).toContain('Portfolio c1');
    expect(stdout).toContain('! below 80%');
  });

  it('CSV and JSON carry ids, names and the same figures: ratios of the views\' sums over the dates', async () => {
    const { env, query } = await fixtureDb();
    const csv = await report(env, ...DATES, '--format', 'csv');
    expect(csv.code, csv.stderr).toBe(ExitCode.OK);
    const rows = csvRows(csv.stdout);
    expect(Object.keys(rows[0]!)).toEqual([
      'row_type', 'customer_id', 'customer_name', 'building_id', 'building_name', 'time_zone', 'floor_id', 'floor_name', 'floor_level',
      'floor_space_id', 'floor_space_name', 'space_type', 'capacity', 'scope', 'from_date', 'to_date', 'period_seconds', 'known_seconds',
      'occupied_seconds', 'coverage', 'low_coverage', 'time_used', 'avg_headcount', 'peak_headcount', 'utilization', 'peak_utilization',
    ]);
    expect(rows.map((r) => r.row_type).filter((t, i, all) => t !== all[i - 1])).toEqual([
      'building', 'floor', 'floor_space', 'building', 'floor', 'floor_space', 'floor', 'floor_space', 'building', 'floor', 'floor_space', 'building', 'floor', 'floor_space', 'portfolio',
    ]);
    const [hh] = await query(`
      SELECT SUM(working_seconds) AS w, SUM(working_known_seconds) AS k, SUM(working_occupied_seconds) AS o,
             SUM(working_capacity_headcount_seconds) AS ch, SUM(working_capacity_seconds) AS cs, MAX(working_peak_headcount) AS p
        FROM building_days WHERE building_id = 'b-hh' AND local_date >= '2026-03-23' AND local_date < '2026-03-27'`);
    const harbour = rows.find((r) => r.row_type === 'building' && r.building_id === 'b-hh')!;
    expect(harbour).toMatchObject({ building_name: 'Harbour Hall', time_zone: 'Europe/Berlin', scope: 'working', from_date: '2026-03-23', to_date: '2026-03-27' });
    expect(Number(harbour.period_seconds)).toBe(Number(hh!.w));
    expect(Number(harbour.known_seconds)).toBe(Number(hh!.k));
    expect(Number(harbour.coverage)).toBe(Math.round((Number(hh!.k) / Number(hh!.w)) * 10_000) / 10_000);
    expect(Number(harbour.time_used)).toBe(Math.round((Number(hh!.o) / Number(hh!.k)) * 10_000) / 10_000);
    expect(Number(harbour.utilization)).toBe(Math.round((Number(hh!.ch) / Number(hh!.cs)) * 10_000) / 10_000);
    expect(Number(harbour.peak_headcount)).toBe(Number(hh!.p));
    // Capacity unknown everywhere in the Annex: no utilization; the desk of capacity 0 neither.
    expect(rows.filter((r) => r.building_id === 'b-an').map((r) => r.utilization)).toEqual(['', '', '']);
    expect(rows.find((r) => r.floor_space_id === 'lt-desk')!.utilization).toBe('');
    expect(rows.find((r) => r.floor_space_id === 'hh-booth')).toMatchObject({ low_coverage: 'true', coverage: '0', time_used: '' });

    const json = JSON.parse((await report(env, ...DATES, '--format', 'json')).stdout);
    expect(json).toMatchObject({ range: { from: '2026-03-23', to: '2026-03-27' }, scope: 'working', coverageThreshold: 0.8 });
    const lotus = json.buildings.find((b: { buildingId: string }) => b.buildingId === 'b-lt');
    expect(lotus).toMatchObject({ name: 'Lotus Tower', timeZone: 'Asia/Kolkata' });
    expect(lotus.floors[0].spaces.map((s: { name: string; capacity: number }) => [s.name, s.capacity])).toEqual([['Banyan', 6], ['Desk 0.02', 0]]);
    expect(json.portfolios).toEqual([expect.objectContaining({ customerId: C, buildings: 4, spaces: 8 })]);
  });

  it('--all-hours measures against whole days; working hours leave the nights and the weekend out', async () => {
    const { env, query } = await fixtureDb();
    const all = csvRows((await report(env, '--from', '2026-03-23', '--to', '2026-03-29', '--all-hours', '--format', 'csv')).stdout);
    const working = csvRows((await report(env, '--from', '2026-03-23', '--to', '2026-03-29', '--format', 'csv')).stdout);
    const [days] = await query(`SELECT SUM(period_seconds) AS p, SUM(working_seconds) AS w FROM building_days WHERE building_id = 'b-lt' AND local_date >= '2026-03-23' AND local_date < '2026-03-29'`);
    const lotus = (rows: typeof all) => rows.find((r) => r.row_type === 'building' && r.building_id === 'b-lt')!;
    expect([lotus(all).scope, Number(lotus(all).period_seconds)]).toEqual(['all', Number(days!.p)]);
    expect([lotus(working).scope, Number(lotus(working).period_seconds)]).toEqual(['working', Number(days!.w)]);
    expect(Number(days!.w)).toBeLessThan(Number(days!.p));
  });

  it('says so when WORKING_TIME_FILE gives other working hours than the figures were computed with, and not when it gives the same', async () => {
    const { env, dir } = await fixtureDb();
    const file = (name: string, text: string) => {
      const path = join(dir, name);
      writeFileSync(path, text);
      return path;
    };
    // The calendar the fixture's aggregates were computed with (tw-fixture.ts WORKING_TIME), written again.
    const same = file('same.yaml', 'default:\n  zone: UTC\n  days: [1, 2, 3, 4, 5]\n  start: "08:00"\n  end: "18:00"\nbuildings:\n  - building: Harbour Hall\n    start: "08:30"\n    end: "17:30"\n');
    const weekends = file('weekends.yaml', 'default:\n  zone: UTC\n  days: [1, 2, 3, 4, 5, 6, 7]\n  start: "00:00"\n  end: "24:00"\n');
    const quiet = await report({ ...env, WORKING_TIME_FILE: same }, ...DATES);
    expect([quiet.code, quiet.stderr]).toEqual([ExitCode.OK, '']);
    const told = await report({ ...env, WORKING_TIME_FILE: weekends }, ...DATES);
    expect(told.code).toBe(ExitCode.OK);
    expect(told.stderr).toMatch(/^report: the figures of 4 building\(s\) \((.+, ){2}.+ and 1 more\) were computed with another working time or zone than WORKING_TIME_FILE gives now \(calendar \{.*\} -> \{.*\}\); they stay so until rebuilt\. Fix: run `(npx )?occupancy-sync aggregates rebuild` \(the next sync rebuilds them too\)\n$/);
    // Without WORKING_TIME_FILE, a reader of the database alone takes the figures as computed: nothing said.
    expect((await report(env, ...DATES)).stderr).toBe('');
  });

  it('shows the customer name configured with CUSTOMER_NAME in every format', async () => {
    const db = await freshDatabase('sqlite', 'report_names');
    cleanups.push(db.drop);
    const id = '6f1c0d2e-8a4b-4c1d-9e2f-0123456789ab';
    const env = { DATABASE_URL: db.url, LOG_LEVEL: 'silent', API_BASE_URL: 'http://127.0.0.1:9', API_KEY: 'key-1', API_SECRET: 'a-secret-of-some-length-0123456789', CUSTOMER_ID: id, CUSTOMER_NAME: 'Head office' };
    const store = await openTestStore(db);
    await load(store, makeReadings().filter((r) => r.space === 'lt-banyan'), id);
    await store.close();
    expect((await report(env, ...DATES)).stdout).toContain(`\nPortfolio Head office (${id})  `);
    expect((await report(env, ...DATES, '--format', 'csv')).stdout.split('\r\n')[1]).toMatch(new RegExp(`^building,${id},Head office,b-lt,Lotus Tower,`));
    expect(JSON.parse((await report(env, ...DATES, '--format', 'json')).stdout).portfolios[0].customerName).toBe('Head office');
    const file = join(db.dir!, 'n.html');
    await report(env, ...DATES, '--html', file);
    expect(readFileSync(file, 'utf8')).toContain(`Head office (${id})`);
    const other = await report(env, ...DATES, '--customer', 'someone-else');
    expect(other.code).toBe(ExitCode.USAGE);
    const bad = await report({ ...env, CUSTOMER_NAME: 'Head\u001b[31m office' }, ...DATES);
    expect(bad.code).toBe(ExitCode.CONFIG);
    expect(bad.stderr).toMatch(/CUSTOMER_NAME.*must be 1 to 200 characters without control characters/);
  });

  it('writes the HTML report to a file and says so on stderr', async () => {
    const { env, dir } = await fixtureDb();
    const file = join(dir, 'out.html');
    const { code, stdout, stderr } = await report(env, ...DATES, '--html', file);
    expect({ code, stdout }).toEqual({ code: ExitCode.OK, stdout: '' });
    expect(stderr).toBe(`report: wrote ${file} (4 buildings, 8 floor spaces, 2026-03-23 to 2026-03-27)\n`);
    const html = readFileSync(file, 'utf8');
    for (const name of ['Harbour Hall', 'Lotus Tower', 'Annex', 'Second floor', 'Third floor', 'Fjord', 'Desk 2.14', 'Phone booth 3.01', 'Banyan', 'Lounge']) expect(html).toContain(name);
  });

  it('shows no figures for dates nobody measured, and says why', async () => {
    const { env } = await fixtureDb();
    const { code, stdout } = await report(env, '--from', '2026-01-05', '--to', '2026-01-12');
    expect(code).toBe(ExitCode.OK);
    expect(stdout).toContain('No time-weighted figures for these dates');
  });

  it('refreshes what a killed run left stale before it reads: the same figures, and status shows the lag until then', async () => {
    const current = await fixtureDb();
    const expected = await report(current.env, ...DATES, '--format', 'csv');
    const { env } = await fixtureDb(false);
    const status = async () => {
      const stdout = capture();
      const code = await main(['node', 'occupancy-sync', 'status', '--json'], { env, stdout, stderr: capture(), signal: new AbortController().signal });
      expect(code).toBe(ExitCode.OK);
      return (JSON.parse(stdout.text()) as Array<{ stream: string; aggregatesPending?: { floorSpaces: number; since: string } }>).find((e) => e.stream === 'occupancy');
    };
    expect((await status())?.aggregatesPending?.floorSpaces).toBeGreaterThan(0);
    const got = await report(env, ...DATES, '--format', 'csv');
    expect(got).toEqual(expected);
    expect((await status())?.aggregatesPending).toBeUndefined();
  });

  it('works on a read-only database file in a read-only directory, and changes nothing', async () => {
    if (process.getuid?.() === 0) return expect(process.getuid()).toBe(0); // root ignores file modes
    const { env, dir, file } = await fixtureDb();
    const before = readFileSync(file);
    const mtime = statSync(file).mtimeMs;
    chmodSync(file, 0o444);
    chmodSync(dir, 0o555);
    cleanups.unshift(() => chmodSync(dir, 0o755));
    const { code, stdout, stderr } = await report(env, ...DATES, '--format', 'csv');
    expect({ code, stderr }).toEqual({ code: ExitCode.OK, stderr: '' });
    expect(stdout.split('\r\n').length).toBeGreaterThan(10);
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(statSync(file).mtimeMs).toBe(mtime);
  });

  it('refuses bad flag values with exit 64, naming the flag, the value and the fix', async () => {
    const { env, dir } = await fixtureDb();
    const cases: Array<[string[], RegExp]> = [
      [['--from', 'last week'], /^occupancy-sync: --from "last week": not an ISO 8601 date .*Fix:/],
      [['--from', '2026-02-31'], /^occupancy-sync: --from "2026-02-31": no such date\. Fix: use a date that exists/],
      [['--from', '2026-01-06', '--to', '2026-01-06'], /^occupancy-sync: --from 2026-01-06 is not before --to 2026-01-06 \(--to is the day after the last one reported\)\. Fix:/],
      [['--tz', 'Mars/Olympus'], /^occupancy-sync: --tz "Mars\/Olympus": not a time zone\. Fix: use an IANA zone such as Europe\/Berlin/],
      [['--format', 'xml'], /option '--format <format>' argument 'xml' is invalid\. Allowed choices are table, csv, json/],
      [['--html', join(dir, 'missing', 'x.html')], /^occupancy-sync: --html ".*": cannot write the file \(ENOENT\)\. Fix:/],
      // No customer configured (a reader of the database alone): one the database does not hold is a typing error.
      [['--customer', 'bogus'], new RegExp(`^occupancy-sync: --customer "bogus": the database holds no floor space of that customer\\. Fix: use one of ${C}\\n$`)],
    ];
    for (const [args, message] of cases) {
      const { code, stdout, stderr } = await report(env, ...args);
      expect({ args, code, stdout }).toEqual({ args, code: ExitCode.USAGE, stdout: '' });
      expect(stderr).toMatch(message);
      expect(stderr).not.toMatch(/^\s+at /m);
    }
  });
});
