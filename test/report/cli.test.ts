import { afterEach, describe, expect, it } from 'vitest';
import { chmodSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { main } from '../../src/cli/main.ts';
import { ExitCode } from '../../src/errors.ts';
import { loadFixture } from './fixture.ts';
import { freshDatabase, openTestStore } from '../support/databases.ts';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function fixtureDb(): Promise<{ env: Record<string, string>; dir: string; file: string }> {
  const db = await freshDatabase('sqlite', 'report');
  cleanups.push(db.drop);
  const env = { DATABASE_URL: db.url, LOG_LEVEL: 'silent' };
  const store = await openTestStore(db);
  await loadFixture(store);
  await store.close();
  return { env, dir: db.dir!, file: db.path! };
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

const DAY = ['--from', '2026-01-05', '--to', '2026-01-06'];

describe('occupancy-sync report', () => {
  it('prints CSV for one customer and range from the views, with a total row', async () => {
    const { env } = await fixtureDb();
    const { code, stdout } = await report(env, '--customer', 'c1', ...DAY, '--format', 'csv');
    expect(code).toBe(ExitCode.OK);
    expect(stdout).toBe(
      'row_type,customer_id,customer_name,floor_space_id,readings,occupied_readings,occupied_share,avg_headcount,peak_headcount,first_hour,last_hour,latest_observed_at,latest_status,latest_headcount\r\n' +
        'floor_space,c1,,A,4,3,0.75,3.25,7,2026-01-05T09:00:00.000Z,2026-01-05T10:00:00.000Z,2026-01-05T10:00:00.000Z,CurrentlyOccupied,7\r\n' +
        'floor_space,c1,,B,2,1,0.5,0.5,1,2026-01-05T09:00:00.000Z,2026-01-05T23:00:00.000Z,2026-01-05T23:59:00.000Z,CurrentlyOccupied,1\r\n' +
        'total,,,2 floor spaces,6,4,0.6667,2.3333,7,,,,,\r\n',
    );
  });

  it('prints JSON and a table for every customer, with the total', async () => {
    const { env } = await fixtureDb();
    const json = JSON.parse((await report(env, ...DAY, '--format', 'json')).stdout);
    expect(json.range).toEqual({ from: '2026-01-05T00:00:00.000Z', to: '2026-01-06T00:00:00.000Z' });
    expect(json.timeZone).toBe('UTC');
    expect(json.floorSpaces.map((r: { customerId: string; floorSpaceId: string; readings: number }) => `${r.customerId}/${r.floorSpaceId}=${r.readings}`)).toEqual([
      'c1/A=4',
      'c1/B=2',
      'c2/A=1',
    ]);
    expect(json.total).toMatchObject({ floorSpaces: 3, readings: 7, peakHeadcount: 10 });
    const table = (await report(env, ...DAY)).stdout.split('\n');
    expect(table[0]).toBe('Occupancy per floor space, 2026-01-05 00:00Z to 2026-01-06 00:00Z (hours in UTC)');
    expect(table[1]).toMatch(/^CUSTOMER\s+FLOOR SPACE\s+READINGS\s+OCCUPIED\s+AVG\s+PEAK\s+LATEST$/);
    expect(table[2]).toMatch(/^c1\s+A\s+4\s+75\.0%\s+3\.25\s+7\s+CurrentlyOccupied 7 @ 2026-01-05 10:00Z$/);
    expect(table[6]).toMatch(/^all\s+3 floor space\(s\)\s+7\s/);
    expect(table.join('\n')).not.toMatch(/building|unknown/i);
  });

  it('--tz reads dates on the local wall clock and shows local hours', async () => {
    const { env } = await fixtureDb();
    // Midnight to midnight in Berlin is 23:00 to 23:00 UTC: c1's reading at 23:59 UTC on the 5th falls on the 6th.
    const csv = (await report(env, '--customer', 'c1', '--tz', 'Europe/Berlin', ...DAY, '--format', 'csv')).stdout;
    expect(csv.split('\r\n').slice(1, 4).map((line) => line.split(',').slice(0, 5).join(','))).toEqual([
      'floor_space,c1,,A,4',
      'floor_space,c1,,B,1',
      'total,,,2 floor spaces,5',
    ]);
    const table = (await report(env, '--customer', 'c1', '--tz', 'Europe/Berlin', ...DAY)).stdout;
    expect(table.split('\n')[0]).toBe('Occupancy per floor space, 2026-01-05 00:00 to 2026-01-06 00:00 (hours in Europe/Berlin), customer c1');
    expect(table).toContain('CurrentlyOccupied 7 @ 2026-01-05 11:00');
  });

  it('shows the customer name configured with CUSTOMER_NAME in every format', async () => {
    const db = await freshDatabase('sqlite', 'report_names');
    cleanups.push(db.drop);
    const id = '6f1c0d2e-8a4b-4c1d-9e2f-0123456789ab';
    const env = {
      DATABASE_URL: db.url,
      LOG_LEVEL: 'silent',
      API_BASE_URL: 'http://127.0.0.1:9',
      API_KEY: 'key-1',
      API_SECRET: 'a-secret-of-some-length-0123456789',
      CUSTOMER_ID: id,
      CUSTOMER_NAME: 'Head office',
    };
    const store = await openTestStore(db);
    await store.commitPage({
      customerId: id,
      sink: 'occupancy',
      at: '2026-01-05T10:00:00.000Z',
      records: [{ floorSpaceId: 'A', observedAt: '2026-01-05T09:00:00.000Z', occupancyStatus: 'CurrentlyOccupied', headcount: 3, eventId: null }],
      checkpoint: { customerId: id, stateKey: 'occupancy', watermark: '2026-01-05T09:00:00.000Z', windowStart: null, windowEnd: null, pageCursor: null, rangeStart: null, rangeEnd: null },
    });
    await store.close();
    expect((await report(env, ...DAY)).stdout.split('\n')[2]).toMatch(new RegExp(`^Head office \\(${id}\\)\\s+A\\s+1\\s`));
    expect((await report(env, ...DAY, '--format', 'csv')).stdout.split('\r\n')[1]).toMatch(new RegExp(`^floor_space,${id},Head office,A,1,`));
    expect(JSON.parse((await report(env, ...DAY, '--format', 'json')).stdout).floorSpaces[0].customerName).toBe('Head office');
    const file = join(db.dir!, 'n.html');
    await report(env, ...DAY, '--html', file);
    expect(readFileSync(file, 'utf8')).toContain(`Head office (${id})`);
    const bad = await report({ ...env, CUSTOMER_NAME: 'Head\u001b[31m office' }, ...DAY);
    expect(bad.code).toBe(ExitCode.CONFIG);
    expect(bad.stderr).toMatch(/CUSTOMER_NAME.*must be 1 to 200 characters without control characters/);
  });

  it('writes the HTML report to a file and says so on stderr', async () => {
    const { env, dir } = await fixtureDb();
    const file = join(dir, 'out.html');
    const { code, stdout, stderr } = await report(env, ...DAY, '--html', file, '--show', 'emptiest', '--top', '2');
    expect(code).toBe(ExitCode.OK);
    expect(stdout).toBe('');
    expect(stderr).toBe(`report: wrote ${file} (3 floor spaces, 7 readings, 2026-01-05T00:00:00.000Z to 2026-01-06T00:00:00.000Z)\n`);
    const html = readFileSync(file, 'utf8');
    expect(html.split('<path class="line" ').length - 1).toBe(2);
    expect(html.split('<path class="line total" ').length - 1).toBe(1);
    expect(html).toContain('the 2 emptiest of 3 floor spaces by average headcount');
    expect(html.split('<rect class="cell').length - 1).toBe(3 * 7 * 24);
  });

  it('works on a read-only database file in a read-only directory, and changes nothing', async () => {
    if (process.getuid?.() === 0) return expect(process.getuid()).toBe(0); // root ignores file modes
    const { env, dir, file } = await fixtureDb();
    const before = readFileSync(file);
    const mtime = statSync(file).mtimeMs;
    chmodSync(file, 0o444);
    chmodSync(dir, 0o555);
    cleanups.unshift(() => chmodSync(dir, 0o755));
    const { code, stdout, stderr } = await report(env, ...DAY, '--format', 'csv');
    expect({ code, stderr }).toEqual({ code: ExitCode.OK, stderr: '' });
    expect(stdout.split('\r\n')).toHaveLength(6);
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(statSync(file).mtimeMs).toBe(mtime);
  });

  it('refuses bad flag values with exit 64, naming the flag, the value and the fix', async () => {
    const { env, dir } = await fixtureDb();
    const cases: Array<[string[], RegExp]> = [
      [['--from', 'last week'], /^occupancy-sync: --from "last week": not an ISO 8601 date .*Fix:/],
      [['--from', '2026-02-31'], /^occupancy-sync: --from "2026-02-31": no such date\. Fix: use a date that exists/],
      [['--from', '2026-01-06', '--to', '2026-01-05'], /^occupancy-sync: --from 2026-01-06T00:00:00.000Z is not before --to 2026-01-05T00:00:00.000Z\. Fix:/],
      [['--tz', 'Mars/Olympus'], /^occupancy-sync: --tz "Mars\/Olympus": not a time zone\. Fix: use an IANA zone such as Europe\/Berlin/],
      [['--top', '0'], /^occupancy-sync: --top "0": not a whole number from 1 to 10\. Fix:/],
      [['--top', '11'], /--top "11": not a whole number from 1 to 10/],
      [['--show', 'loudest'], /option '--show <rule>' argument 'loudest' is invalid\. Allowed choices are busiest, emptiest, change/],
      [['--html', join(dir, 'missing', 'x.html')], /^occupancy-sync: --html ".*": cannot write the file \(ENOENT\)\. Fix:/],
    ];
    for (const [args, message] of cases) {
      const { code, stdout, stderr } = await report(env, ...args);
      expect({ args, code, stdout }).toEqual({ args, code: ExitCode.USAGE, stdout: '' });
      expect(stderr).toMatch(message);
      expect(stderr).not.toMatch(/^\s+at /m);
    }
  });
});
