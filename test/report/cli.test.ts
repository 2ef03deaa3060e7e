import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildProgram } from '../../src/cli/main.ts';
import { createContext } from '../../src/cli/context.ts';
import { reportCommand } from '../../src/cli/commands/report.ts';
import { resolveConfig } from '../../src/config.ts';
import { ConfigError } from '../../src/errors.ts';
import { openStore } from '../../src/store/index.ts';
import { tempDir } from '../helpers/tmp.ts';
import { loadFixture } from './fixture.ts';

const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

async function fixtureDb(): Promise<{ env: Record<string, string>; dir: string }> {
  const tmp = tempDir('report-cli-');
  cleanups.push(tmp.remove);
  const env = { DATABASE_URL: `file:${join(tmp.dir, 'r.db')}`, LOG_LEVEL: 'silent' };
  const store = await openStore(resolveConfig(env).database);
  await store.migrate();
  await loadFixture(store);
  await store.close();
  return { env, dir: tmp.dir };
}

/** Runs `occupancy-sync report ...` through commander with captured output (the lead registers the command in main). */
async function report(env: Record<string, string>, ...args: string[]): Promise<{ stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const ctx = createContext(env, { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) } }, new AbortController().signal);
  await buildProgram(ctx, [reportCommand]).parseAsync(['node', 'occupancy-sync', 'report', ...args]);
  return { stdout, stderr };
}

describe('occupancy-sync report', () => {
  it('prints CSV for one customer and range from the views', async () => {
    const { env } = await fixtureDb();
    const { stdout } = await report(env, '--customer', 'c1', '--from', '2026-01-05', '--to', '2026-01-06', '--format', 'csv');
    expect(stdout).toBe(
      'customer_id,building,floor_space_id,readings,occupied_readings,occupied_share,avg_headcount,peak_headcount,first_hour,last_hour,latest_observed_at,latest_status,latest_headcount\r\n' +
        'c1,unknown,A,4,3,0.75,3.25,7,2026-01-05T09:00:00.000Z,2026-01-05T10:00:00.000Z,2026-01-05T10:00:00.000Z,CurrentlyOccupied,7\r\n' +
        'c1,unknown,B,2,1,0.5,0.5,1,2026-01-05T09:00:00.000Z,2026-01-05T23:00:00.000Z,2026-01-05T23:59:00.000Z,CurrentlyOccupied,1\r\n',
    );
  });

  it('prints JSON and a table for every customer', async () => {
    const { env } = await fixtureDb();
    const json = JSON.parse((await report(env, '--from', '2026-01-05', '--to', '2026-01-06', '--format', 'json')).stdout);
    expect(json.range).toEqual({ from: '2026-01-05T00:00:00.000Z', to: '2026-01-06T00:00:00.000Z' });
    expect(json.floorSpaces.map((r: { customerId: string; floorSpaceId: string; readings: number }) => `${r.customerId}/${r.floorSpaceId}=${r.readings}`)).toEqual([
      'c1/A=4',
      'c1/B=2',
      'c2/A=1',
    ]);
    const table = (await report(env, '--from', '2026-01-05', '--to', '2026-01-06')).stdout.split('\n');
    expect(table[1]).toMatch(/^CUSTOMER\s+BUILDING\s+FLOOR SPACE\s+READINGS\s+OCCUPIED\s+AVG\s+PEAK\s+LATEST$/);
    expect(table[2]).toMatch(/^c1\s+unknown\s+A\s+4\s+75\.0%\s+3\.25\s+7\s+CurrentlyOccupied 7 @ 2026-01-05 10:00Z$/);
  });

  it('writes the HTML report to a file and says so on stderr', async () => {
    const { env, dir } = await fixtureDb();
    const file = join(dir, 'out.html');
    const { stdout, stderr } = await report(env, '--from', '2026-01-05', '--to', '2026-01-06', '--html', file);
    expect(stdout).toBe('');
    expect(stderr).toContain(`report: wrote ${file} (3 floor spaces, 7 readings`);
    const html = readFileSync(file, 'utf8');
    expect(html.split('<path class="line"').length - 1).toBe(3);
    expect(html.split('<rect class="cell').length - 1).toBe(4 * 7 * 24);
  });

  it('refuses a bad time, and an HTML path in a missing directory, naming the flag and the fix', async () => {
    const { env, dir } = await fixtureDb();
    await expect(report(env, '--from', 'last week')).rejects.toThrow(ConfigError);
    await expect(report(env, '--from', 'last week')).rejects.toThrow(/--from "last week": not a time/);
    await expect(report(env, '--html', join(dir, 'missing', 'x.html'))).rejects.toThrow(/--html .*cannot write the file \(ENOENT\)\. Fix:/);
  });
});
