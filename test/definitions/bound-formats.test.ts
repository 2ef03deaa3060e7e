import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { failures, sandboxFor, type Target } from '../check/support.ts';
import { runMain } from '../support/cli.ts';
import { DIALECTS, freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { ROOT } from '../support/process.ts';
import { tempDir } from '../support/tmp.ts';
import { DAY, HOUR, againstTruth, childEnv, dbRows, truthRows } from '../sync/helpers.ts';

/**
 * Window bounds sent as `iso-seconds` and as `date`, against the assumed API (v1), whose `DateTime` bounds take both
 * (a date as `'{{window.from | date}}T00:00:00Z'`, a placeholder inside a longer string). The windows must lie on the
 * bounds' grid (a second, a day): a window that did not would be sent a bound before its start, and the records the
 * API answers there would break the page contract (rule window). Each ends in a database equal to the sandbox's truth.
 */

/** The built-in occupancy stream, its bounds sent in another format (and with `extra` lines appended). */
function occupancyWith(from: string, to: string, extra = ''): string {
  const builtIn = readFileSync(join(ROOT, 'jobs/streams.yaml'), 'utf8');
  const stream = builtIn.slice(builtIn.indexOf('  - name: occupancy'));
  const variables = "      from: '{{window.from}}'\n      to: '{{window.to}}'\n";
  expect(stream).toContain(variables);
  return `version: 2\nstreams:\n${stream.replace(variables, `      from: '${from}'\n      to: '${to}'\n`)}${extra}`;
}

function writeDefinitions(dir: string, text: string): void {
  cpSync(join(ROOT, 'jobs/occupancy.graphql'), join(dir, 'occupancy.graphql'));
  writeFileSync(join(dir, 'occupancy-sync.streams.yaml'), text);
}

const DATE_BOUNDS = ['{{window.from | date}}T00:00:00Z', '{{window.to | date}}T00:00:00Z'] as const;

describe.each(DIALECTS)('window bounds in iso-seconds and date formats (%s)', (dialect) => {
  // Four days of data: whole UTC days lie inside it.
  const dataStart = Math.floor((Date.now() - 4 * DAY) / 300_000) * 300_000;
  let sandbox: Sandbox;
  let db: TestDatabase;
  let dir: { dir: string; remove(): void };

  beforeEach(() => {
    dir = tempDir('bound-formats-');
  });
  afterEach(async () => {
    await sandbox?.close();
    await db?.drop();
    dir.remove();
  });

  async function start(name: string, definitions: string) {
    sandbox = await startSandbox({ seed: 13, customers: 1, dataStart, lateArrivalMaxMs: 0 });
    db = await freshDatabase(dialect, name);
    writeDefinitions(dir.dir, definitions);
    const env = childEnv(sandbox, db.url, { LOG_LEVEL: 'silent', SYNC_INITIAL_HISTORY: '2d', SYNC_SETTLE_DELAY: '1s', SYNC_PAGE_SIZE: '250', DEFINITIONS_FILE: dir.dir });
    return { env, customer: sandbox.customers[0]!.id };
  }
  async function rowsAndWatermark(customer: string) {
    const store = await openTestStore(db);
    try {
      return { rows: await dbRows(store, customer), watermark: (await store.getState(customer, 'occupancy'))?.watermark ?? null };
    } finally {
      await store.close();
    }
  }

  it('iso-seconds: a backfill between sub-second instants reads whole seconds, and a sync equals the truth', async () => {
    const { env, customer } = await start('bounds-iso-seconds', occupancyWith('{{window.from | iso-seconds}}', '{{window.to | iso-seconds}}'));
    // A reading tick 400 ms before --from: on a grid of 1 ms the API (sent "…:00Z") would answer it outside the window.
    // Inside the sync's first run (SYNC_INITIAL_HISTORY 2d), so the two cover one stretch of time.
    const tick = Math.floor((Date.now() - 30 * HOUR) / 300_000) * 300_000;
    const from = tick + 400;
    const to = tick + 3 * HOUR + 1;
    const backfill = await runMain(['backfill', '--from', new Date(from).toISOString(), '--to', new Date(to).toISOString()], env);
    expect(backfill.stderr).toBe('');
    expect(backfill.code).toBe(ExitCode.OK);
    // The range widened to whole seconds: [tick, tick + 3h + 1s).
    expect((await rowsAndWatermark(customer)).rows).toEqual(truthRows(sandbox, customer, { from: tick, to: tick + 3 * HOUR + 1000 }));
    expect((await rowsAndWatermark(customer)).rows[0]!.observedAt).toBe(new Date(tick).toISOString());

    const sync = await runMain(['sync'], env);
    expect(sync.stderr).toBe('');
    expect(sync.code).toBe(ExitCode.OK);
    const { rows, watermark } = await rowsAndWatermark(customer);
    expect(Date.parse(watermark!) % 1000).toBe(0);
    const first = Date.parse(rows[0]!.observedAt);
    expect(first).toBeLessThanOrEqual(Date.now() - 47 * HOUR);
    expect(rows.length).toBeGreaterThan(5000);
    const held = againstTruth(rows, sandbox, customer, watermark!, first);
    expect(held.stored).toEqual(held.truth);
    expect(held.strays).toEqual([]);
  });

  it('date: windows are whole days (backfill and sync), sent as the day inside a longer string, equal to the truth', async () => {
    const { env, customer } = await start('bounds-date', occupancyWith(...DATE_BOUNDS, '    window: { step: 1d }\n'));
    const day = Math.ceil(dataStart / DAY) * DAY;
    // Neither end on a midnight: the backfill reads the two whole days around them.
    const backfill = await runMain(['backfill', '--from', new Date(day + 3 * HOUR).toISOString(), '--to', new Date(day + DAY + HOUR).toISOString()], env);
    expect(backfill.stderr).toBe('');
    expect(backfill.code).toBe(ExitCode.OK);
    const filled = (await rowsAndWatermark(customer)).rows;
    expect(filled).toEqual(truthRows(sandbox, customer, { from: day, to: day + 2 * DAY }));
    expect(filled.length).toBe(2 * 288 * 12);

    const sync = await runMain(['sync'], env);
    expect(sync.stderr).toBe('');
    expect(sync.code).toBe(ExitCode.OK);
    const { rows, watermark } = await rowsAndWatermark(customer);
    // A sync reads up to the last midnight, never part of a day.
    expect(watermark).toBe(new Date(Math.floor((Date.now() - 1000) / DAY) * DAY).toISOString());
    const held = againstTruth(rows, sandbox, customer, watermark!, day);
    expect(held.stored).toEqual(held.truth);
    expect(held.strays).toEqual([]);
  });
});

describe('a step that does not cut whole days for bounds sent as dates', () => {
  let dir: { dir: string; remove(): void };
  let target: Target | undefined;
  beforeEach(() => {
    dir = tempDir('bound-grid-');
  });
  afterEach(async () => {
    await target?.sandbox.close();
    dir.remove();
    target = undefined;
  });

  it('window.step in the file is refused when it is loaded, at its line', async () => {
    writeDefinitions(dir.dir, occupancyWith(...DATE_BOUNDS, '    window: { step: 12h }\n'));
    const result = await runMain(['sync'], { DEFINITIONS_FILE: dir.dir, DATABASE_URL: 'file:/nonexistent/x.db', API_BASE_URL: 'http://127.0.0.1:9', API_KEY: 'k', API_SECRET: 's', CUSTOMER_ID: '6f1c0d2e-0000-4000-8000-000000000001' });
    expect(result.code).toBe(ExitCode.CONFIG);
    const lines = readFileSync(join(dir.dir, 'occupancy-sync.streams.yaml'), 'utf8').split('\n');
    const line = lines.findIndex((l) => l.includes('step: 12h')) + 1;
    expect(result.stderr).toMatch(new RegExp(`occupancy-sync\\.streams\\.yaml:${line}:\\d+: step 12h is not a whole number of the bounds' unit \\(86400000 ms: a bound sent as a date needs whole days\\)`));
  });

  it('window.step longer than SYNC_STEP may be (7d) is refused when it is loaded, at its line', async () => {
    writeDefinitions(dir.dir, occupancyWith(...DATE_BOUNDS, '    window: { step: 8d }\n'));
    const result = await runMain(['sync'], { DEFINITIONS_FILE: dir.dir, DATABASE_URL: 'file:/nonexistent/x.db', API_BASE_URL: 'http://127.0.0.1:9', API_KEY: 'k', API_SECRET: 's', CUSTOMER_ID: '6f1c0d2e-0000-4000-8000-000000000001' });
    expect(result.code).toBe(ExitCode.CONFIG);
    const lines = readFileSync(join(dir.dir, 'occupancy-sync.streams.yaml'), 'utf8').split('\n');
    const line = lines.findIndex((l) => l.includes('step: 8d')) + 1;
    expect(result.stderr).toMatch(new RegExp(`occupancy-sync\\.streams\\.yaml:${line}:\\d+: step 8d is longer than 7d \\(as SYNC_STEP: .+\\)\\. Fix: write e\\.g\\. step: 1h or step: 1d`));
  });

  it('SYNC_STEP (known only at run time): sync refuses before any request, and check names it for the stream', async () => {
    writeDefinitions(dir.dir, occupancyWith(...DATE_BOUNDS));
    target = await sandboxFor('v1', { customers: 1 });
    const db = tempDir('bound-grid-db-');
    try {
      const before = target.sandbox.stats.queries;
      const sync = await target.run(['sync', '--stream', 'occupancy'], { DEFINITIONS_FILE: dir.dir, DATABASE_URL: `file:${join(db.dir, 'x.db')}`, SYNC_STEP: '1h' });
      expect(sync.code).toBe(ExitCode.CONFIG);
      expect(sync.stderr).toContain(
        'stream occupancy: its window bounds lie on a grid of 86400000 ms (a date is a whole day), and its windows are 3600000 ms long. Fix: set `window: { step: ... }` for the stream to a multiple of it (e.g. 1d)',
      );
      expect(target.sandbox.stats.queries).toBe(before);
    } finally {
      db.remove();
    }
    const check = await target.run(['check'], { DEFINITIONS_FILE: dir.dir, SYNC_STEP: '1h' });
    expect(check.code).toBe(ExitCode.FAILURE);
    expect(failures(check.stdout)).toEqual([
      expect.stringMatching(/occupancy-sync\.streams\.yaml:\d+:\d+: stream occupancy: .*its window bounds lie on a grid of 86400000 ms \(a date is a whole day\), and its windows are 3600000 ms long\. Fix: set `window: \{ step: \.\.\. \}` for the stream to a multiple of it \(e\.g\. 1d\)$/),
    ]);
  });
});
