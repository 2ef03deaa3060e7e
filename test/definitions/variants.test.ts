import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.ts';
import { startSandbox, type ApiVariant, type Sandbox } from '../../src/sandbox/index.ts';
import { runMain } from '../support/cli.ts';
import { DIALECTS, freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { ROOT } from '../support/process.ts';
import { tempDir } from '../support/tmp.ts';
import { DAY, HOUR, againstTruth, childEnv, dbRows, truthRows } from '../sync/helpers.ts';

/**
 * The worked definitions files of docs/examples/, one per API shape the sandbox serves (docs/sandbox.md, "API
 * variants"), each copied as a user would and used with no change to the code: a sync and a backfill end equal to the
 * sandbox's truth, with statuses stored in their canonical spelling, on both dialects. The truth of the presence and
 * change variants is itself checked against an independent computation in test/sandbox/variant-sensors.test.ts.
 */
const EXAMPLES: Array<{ variant: ApiVariant; dir: string; env?: Record<string, string> }> = [
  { variant: 'v2', dir: 'api-v2' },
  { variant: 'edges', dir: 'api-edges' },
  { variant: 'token', dir: 'api-token' },
  { variant: 'pages', dir: 'api-pages' },
  { variant: 'capped', dir: 'api-capped' },
  { variant: 'presence', dir: 'api-presence' },
  { variant: 'change', dir: 'api-change' },
];

describe.each(DIALECTS)('the worked definitions of docs/examples (%s)', (dialect) => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let dir: { dir: string; remove(): void };
  const dataStart = Math.floor((Date.now() - DAY) / 300_000) * 300_000;

  beforeEach(async () => {
    dir = tempDir('examples-');
  });
  afterEach(async () => {
    await sandbox?.close();
    await db?.drop();
    dir.remove();
  });

  it.each(EXAMPLES)('$dir: backfill and sync store exactly the truth of the $variant variant', async ({ variant, dir: example }) => {
    sandbox = await startSandbox({ apiVariant: variant, seed: 11, customers: 1, dataStart, lateArrivalMaxMs: 0 });
    db = await freshDatabase(dialect, `example-${variant}`);
    cpSync(join(ROOT, 'docs/examples', example), dir.dir, { recursive: true });
    // Pages smaller than a window, so every style pages; the defaults otherwise, as a user starts.
    const env = childEnv(sandbox, db.url, { LOG_LEVEL: 'silent', SYNC_INITIAL_HISTORY: '2d', SYNC_SETTLE_DELAY: '1s', SYNC_PAGE_SIZE: '37', DEFINITIONS_FILE: dir.dir });
    const customer = sandbox.customers[0]!.id;

    const range = { from: dataStart + 3 * HOUR, to: dataStart + 7 * HOUR };
    const backfill = await runMain(['backfill', '--from', new Date(range.from).toISOString(), '--to', new Date(range.to).toISOString()], env);
    expect(backfill.stderr).toBe('');
    expect(backfill.code).toBe(ExitCode.OK);
    let store = await openTestStore(db);
    try {
      expect(await dbRows(store, customer)).toEqual(truthRows(sandbox, customer, range));
    } finally {
      await store.close();
    }

    const sync = await runMain(['sync'], env);
    expect(sync.stderr).toBe('');
    expect(sync.code).toBe(ExitCode.OK);
    store = await openTestStore(db);
    try {
      const rows = await dbRows(store, customer);
      const held = againstTruth(rows, sandbox, customer, (await store.getState(customer, 'occupancy'))!.watermark!, 0);
      // A day of 12 spaces: 3,456 readings every 5 minutes, far fewer status changes.
      expect(held.truth.length).toBeGreaterThan(variant === 'change' ? 500 : 1000);
      expect(held.stored).toEqual(held.truth);
      expect(held.strays).toEqual([]);
      expect(new Set(rows.map((r) => r.occupancyStatus))).toEqual(new Set(['CurrentlyOccupied', 'Unoccupied']));
      // A presence-only sensor sent no headcount: stored NULL, never 0; every other variant counted people.
      const counts = rows.map((r) => r.headcount);
      if (variant === 'presence') expect(counts.every((h) => h === null)).toBe(true);
      else expect(counts.some((h) => h === null)).toBe(false);
    } finally {
      await store.close();
    }
  });
});

describe('the webhook operations of the edges example (subscriptions, userErrors, no test event)', () => {
  let sandbox: Sandbox;
  let dir: { dir: string; remove(): void };
  beforeEach(async () => {
    sandbox = await startSandbox({ apiVariant: 'edges', customers: 1 });
    dir = tempDir('examples-hooks-');
    cpSync(join(ROOT, 'docs/examples/api-edges'), dir.dir, { recursive: true });
  });
  afterEach(async () => {
    await sandbox.close();
    dir.remove();
  });

  it('register, update and list run through the platform\'s own mutations; a refusal and the absent test event are one line each', async () => {
    const customer = sandbox.customers[0]!;
    const env = { ...childEnv(sandbox, 'file:/dev/null', { LOG_LEVEL: 'silent', DEFINITIONS_FILE: dir.dir }), API_KEY: customer.writeKey.key, API_SECRET: customer.writeKey.secret };
    const registered = await runMain(['webhook', 'register', '--url', 'https://hooks.example.test/occupancy', '--events', 'Occupancy'], env);
    expect(registered.stderr).toMatch(/^Warning: deliveries are not signed/);
    expect(registered.code).toBe(ExitCode.OK);
    const hook = { id: /id:\s+(\S+)/.exec(registered.stdout)![1]!, url: /url:\s+(\S+)/.exec(registered.stdout)![1]! };
    expect(hook.url).toBe('https://hooks.example.test/occupancy');
    expect(sandbox.webhooks(customer.id)).toMatchObject([{ id: hook.id, url: hook.url }]);

    const updated = await runMain(['webhook', 'update', '--id', hook.id, '--url', 'https://hooks.example.test/v2'], env);
    expect(updated.code).toBe(ExitCode.OK);
    const listed = await runMain(['webhook', 'list', '--json'], env);
    expect(JSON.parse(listed.stdout)).toMatchObject([{ webhooks: [{ id: hook.id, url: 'https://hooks.example.test/v2' }] }]);

    const refused = await runMain(['webhook', 'update', '--id', 'no-such-subscription', '--url', 'https://hooks.example.test/v3'], env);
    expect(refused.code).not.toBe(ExitCode.OK);
    expect(refused.stderr).toMatch(/the platform refused updateWebhook: .+\. Fix: /);

    const test = await runMain(['webhook', 'test', '--id', hook.id], env);
    expect(test.code).toBe(ExitCode.USAGE);
    expect(test.stderr).toContain(`the platform has no sendTestEvent operation (declared absent in ${join(dir.dir, 'occupancy-sync.streams.yaml')})`);
  });
});
