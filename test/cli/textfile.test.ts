import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { freshDatabase, type TestDatabase } from '../support/databases.ts';
import { tempDir } from '../support/tmp.ts';
import { childEnv } from '../sync/helpers.ts';
import { runMain } from '../support/cli.ts';

/** A cron `sync` leaves its metrics for node_exporter's textfile collector (METRICS_TEXTFILE). */

const cli = runMain;

let sandbox: Sandbox;
let db: TestDatabase;
const dir = tempDir('textfile-');
beforeAll(async () => {
  sandbox = await startSandbox({ customers: 1, buildingsPerCustomer: 1, floorSpacesPerBuilding: 2, dataStart: Date.now() - 3_600_000 });
  db = await freshDatabase('sqlite', 'textfile');
});
afterAll(async () => {
  await sandbox?.close();
  await db?.drop();
  dir.remove();
});

it('sync writes its run, each stream\'s lag and last success to METRICS_TEXTFILE, whole (renamed into place)', async () => {
  const path = join(dir.dir, 'occupancy_sync.prom');
  const env = childEnv(sandbox, db.url, { SYNC_INITIAL_HISTORY: '2h', METRICS_TEXTFILE: path, LOG_LEVEL: 'warn' });
  const result = await cli(['sync'], env);
  expect(result.code, result.stderr).toBe(0);
  const text = readFileSync(path, 'utf8');
  const value = (series: string) => Number(text.split('\n').find((l) => l.startsWith(`${series} `))?.slice(series.length + 1));
  expect(value('occupancy_sync_runs_total{stream="occupancy",status="succeeded"}')).toBe(1);
  expect(value('occupancy_sync_run_duration_seconds_count{stream="buildings",status="succeeded"}')).toBe(1);
  expect(value('occupancy_sync_last_success_timestamp_seconds{stream="occupancy"}')).toBeGreaterThan(Date.now() / 1000 - 300);
  expect(value('occupancy_sync_lag_seconds{stream="occupancy"}')).toBeGreaterThanOrEqual(0);
  // Valid exposition text: every sample line is `name{labels} number`, every family has HELP and TYPE.
  for (const line of text.split('\n').filter((l) => l && !l.startsWith('#'))) expect(line).toMatch(/^[a-z_]+(\{[^}]*\})? -?[0-9.e+-]+$/);
  expect(text).toContain('# TYPE occupancy_sync_run_duration_seconds histogram');
  // No temporary file left beside it: the collector only ever sees whole files.
  expect(readdirSync(dir.dir)).toEqual(['occupancy_sync.prom']);
});

it('a metrics file that cannot be written is one line on stderr and leaves the exit code alone; a path without .prom is refused', async () => {
  const missing = join(dir.dir, 'no-such-dir', 'occupancy_sync.prom');
  const result = await cli(['sync'], childEnv(sandbox, db.url, { METRICS_TEXTFILE: missing, LOG_LEVEL: 'warn' }));
  expect(result.code).toBe(0);
  expect(result.stderr).toBe(`occupancy-sync: METRICS_TEXTFILE="${missing}": cannot write the metrics file (ENOENT). Fix: point it at a writable directory, e.g. the textfile collector's\n`);
  expect(existsSync(missing)).toBe(false);
  const wrong = await cli(['sync'], childEnv(sandbox, db.url, { METRICS_TEXTFILE: join(dir.dir, 'metrics.txt') }));
  expect(wrong.code).toBe(78);
  expect(wrong.stderr).toMatch(/METRICS_TEXTFILE=.*must end in \.prom/);
});
