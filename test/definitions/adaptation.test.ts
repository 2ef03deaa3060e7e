import { cpSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/client.ts';
import { loadStreams } from '../../src/app/streams.ts';
import { parseDocumentSource } from '../../src/api/documents.ts';
import { loadDefinitionsFile } from '../../src/sync/definitions.ts';
import { buildings } from '../../jobs/index.ts';
import { resolveConfig } from '../../src/config.ts';
import { ExitCode, GraphQLResponseError } from '../../src/errors.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { systemClock } from '../../src/clock.ts';
import { createWebhookAdmin } from '../../src/webhooks/admin.ts';
import { runMain } from '../support/cli.ts';
import { DIALECTS, freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { ROOT } from '../support/process.ts';
import { tempDir } from '../support/tmp.ts';
import { DAY, FAST_HTTP, HOUR, againstTruth, childEnv, dbRows, syncOnce, syncSettings, truthRows } from '../sync/helpers.ts';

/**
 * The worked adaptation of docs/api-assumptions.md ("Adapting to the real API"), from the repository's sources (the
 * package test runs it from the installed tarball): the sandbox serves its second API variant; `check` names what the
 * built-in definitions assume wrongly; the example definitions file (docs/examples/api-v2/) fixes it with no change to
 * the code; `sync` then stores exactly the sandbox's truth.
 */
const EXAMPLE = join(ROOT, 'docs/examples/api-v2');

describe.each(DIALECTS)('adapting to the sandbox API variant v2 with a definitions file alone (%s)', (dialect) => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let env: Record<string, string>;
  let dir: { dir: string; remove(): void };
  let dataStart: number;

  beforeEach(async () => {
    dataStart = Math.floor((Date.now() - DAY) / 300_000) * 300_000;
    sandbox = await startSandbox({ apiVariant: 'v2', seed: 7, customers: 1, dataStart, lateArrivalMaxMs: 0 });
    db = await freshDatabase(dialect, 'adapt');
    env = childEnv(sandbox, db.url, { LOG_LEVEL: 'silent', SYNC_INITIAL_HISTORY: '2d', SYNC_SETTLE_DELAY: '1s', SYNC_PAGE_SIZE: '97', SYNC_STEP: '6h' });
    dir = tempDir('definitions-');
    cpSync(EXAMPLE, dir.dir, { recursive: true });
  });
  afterEach(async () => {
    await sandbox.close();
    await db.drop();
    dir.remove();
  });

  it('check names each assumption the API breaks; with the definitions check passes and sync stores exactly the truth', async () => {
    const before = await runMain(['check'], env);
    expect(before.code).toBe(ExitCode.FAILURE);
    const mismatches = before.stdout.split('\n').filter((line) => /^  FAIL  \S+\.graphql:\d+:\d+: /.test(line)).map((line) => line.slice(8).replace(/ Fix: .*$/, ''));
    expect(mismatches).toEqual([
      'jobs/occupancy.graphql:3:3: Cannot query field "occupancy" on type "Query".',
      'src/webhooks/graphql/registerWebhook.graphql:3:3: Cannot query field "registerWebhook" on type "Mutation". Did you mean "createWebhook" or "updateWebhook"?',
    ]);
    const refused = await runMain(['sync'], env);
    expect(refused.code).not.toBe(ExitCode.OK);

    const adapted = { ...env, DEFINITIONS_FILE: dir.dir };
    const check = await runMain(['check'], adapted);
    expect(check.stdout).toContain(`definitions: ${join(dir.dir, 'occupancy-sync.streams.yaml')} (streams buildings, floors, floor-spaces, occupancy; 1 webhook document(s) replaced)`);
    expect(check.stdout).toContain('schema (introspection): 6 job document(s) valid');
    expect(check.code).toBe(ExitCode.OK);

    // A backfill through the user's offset-paged stream lands exactly its range.
    const range = { from: dataStart + 6 * HOUR, to: dataStart + 12 * HOUR };
    const backfill = await runMain(['backfill', '--from', new Date(range.from).toISOString(), '--to', new Date(range.to).toISOString()], adapted);
    expect(backfill.stderr).toBe('');
    expect(backfill.code).toBe(ExitCode.OK);
    const loaded = await openTestStore(db);
    try {
      const customer = sandbox.customers[0]!.id;
      expect(await dbRows(loaded, customer)).toEqual(truthRows(sandbox, customer, range));
    } finally {
      await loaded.close();
    }

    const sync = await runMain(['sync'], adapted);
    expect(sync.stderr).toBe('');
    expect(sync.code).toBe(ExitCode.OK);
    const store = await openTestStore(db);
    try {
      const customer = sandbox.customers[0]!.id;
      const held = againstTruth(await dbRows(store, customer), sandbox, customer, (await store.getState(customer, 'occupancy'))!.watermark!, 0);
      expect(held.truth.length).toBeGreaterThan(1000);
      expect(held.stored).toEqual(held.truth);
      expect(held.strays).toEqual([]);
    } finally {
      await store.close();
    }
  });
});

describe('an offset-paged user stream stopped mid-window', () => {
  it('keeps the offset as its checkpoint and resumes there: the rerun ends equal to the truth (sqlite)', async () => {
    const sandbox = await startSandbox({ apiVariant: 'v2', seed: 3, customers: 1, dataStart: Math.floor((Date.now() - DAY) / 300_000) * 300_000, lateArrivalMaxMs: 0 });
    const db = await freshDatabase('sqlite', 'adapt-resume', { migrate: true });
    const store = await openTestStore(db);
    try {
      const user = loadDefinitionsFile(join(EXAMPLE, 'occupancy-sync.streams.yaml'), { parseDocument: parseDocumentSource });
      const streams = [buildings, user.streams.find((s) => s.name === 'occupancy')!];
      const settings = syncSettings({ pageSize: 50 });
      const controller = new AbortController();
      const report = await syncOnce({
        store,
        sandbox,
        clock: systemClock,
        settings,
        streams,
        signal: controller.signal,
        onProgress: (e) => {
          if (e.stream === 'occupancy' && e.records >= 150) controller.abort(new Error('SIGTERM'));
        },
      });
      const customer = sandbox.customers[0]!.id;
      expect(report.outcomes.find((o) => o.stream === 'occupancy')?.status).toBe('interrupted');
      const state = await store.getState(customer, 'occupancy');
      expect(state?.pageCursor).toMatch(/^[1-9]\d*$/);
      expect(Number(state!.pageCursor) % 50).toBe(0);
      expect(state?.windowStart).toBeTruthy();

      const rerun = await syncOnce({ store, sandbox, clock: systemClock, settings, streams });
      const rows = await dbRows(store, customer);
      const held = againstTruth(rows, sandbox, customer, (await store.getState(customer, 'occupancy'))!.watermark!, 0);
      expect(held.stored).toEqual(held.truth);
      expect(held.strays).toEqual([]);
      // Resumed at the stored offset, not at the window's start: no record was read twice.
      const read = (r: typeof report) => r.outcomes.find((o) => o.stream === 'occupancy')!.records;
      expect(read(report) + read(rerun)).toBe(rows.length);
    } finally {
      await store.close();
      await sandbox.close();
      await db.drop();
    }
  });
});

describe('webhook documents in a definitions file', () => {
  let sandbox: Sandbox;
  let dir: { dir: string; remove(): void };
  beforeEach(async () => {
    sandbox = await startSandbox({ apiVariant: 'v2', seed: 7, customers: 1 });
    dir = tempDir('definitions-');
    cpSync(EXAMPLE, dir.dir, { recursive: true });
  });
  afterEach(async () => {
    await sandbox.close();
    dir.remove();
  });

  it('the webhook registration document is replaced by operation: createWebhook answers as registerWebhook', async () => {
    const customer = sandbox.customers[0]!;
    const config = resolveConfig({ DEFINITIONS_FILE: join(dir.dir, 'occupancy-sync.streams.yaml') });
    const client = createApiClient({ baseUrl: sandbox.url, apiKey: customer.writeKey.key, apiSecret: customer.writeKey.secret, clock: systemClock, http: FAST_HTTP });
    try {
      const input = { url: 'https://hooks.example.test/occupancy', eventTypes: ['Occupancy'] };
      await expect(createWebhookAdmin(client).register(input)).rejects.toThrow(GraphQLResponseError);
      const view = await createWebhookAdmin(client, { operations: loadStreams(config).webhooks }).register(input);
      expect(view).toMatchObject({ url: input.url, eventTypes: ['Occupancy'], signed: false });
      expect(await createWebhookAdmin(client).list()).toEqual([view]);
    } finally {
      await client.close();
    }
  });
});

describe('a definitions file that cannot be used stops every command at start, before any request (exit 78)', () => {
  it('names the file, line and column of each problem, or the setting that points nowhere', async () => {
    const dir = tempDir('definitions-');
    try {
      const env = { DATABASE_URL: `file:${join(dir.dir, 'never.db')}`, API_BASE_URL: 'http://127.0.0.1:9', API_KEY: 'k', API_SECRET: 's', CUSTOMER_ID: '6f1c0d2e-8a4b-4c1d-9e2f-0123456789ab', LOG_LEVEL: 'silent' };
      const missing = await runMain(['sync'], { ...env, DEFINITIONS_FILE: join(dir.dir, 'nope.yaml') });
      expect(missing.code).toBe(ExitCode.CONFIG);
      expect(missing.stderr).toBe(
        `occupancy-sync: DEFINITIONS_FILE=${JSON.stringify(join(dir.dir, 'nope.yaml'))}: no such file or directory. Fix: point it at a definitions file or a directory holding occupancy-sync.streams.yaml, or unset it\n`,
      );
      const file = join(dir.dir, 'occupancy-sync.streams.yaml');
      writeFileSync(file, 'version: 1\nstreams:\n  - name: occupancy\n    document: nowhere.graphql\n');
      for (const command of [['sync'], ['check'], ['backfill', '--from', '2d', '--to', '1d'], ['status']]) {
        const broken = await runMain(command, { ...env, DEFINITIONS_FILE: dir.dir });
        expect(broken.code, command.join(' ')).toBe(ExitCode.CONFIG);
        expect(broken.stderr.split('\n').filter(Boolean), command.join(' ')).toEqual([
          `occupancy-sync: ${file}:3:5: a stream has no sink. Fix: add sink`,
          `${file}:3:5: a stream has no kind. Fix: add kind`,
          `${file}:3:5: a stream has no paging. Fix: add paging`,
          `${file}:3:5: a stream has no record. Fix: add record`,
          `${file}:4:15: cannot read the document ${join(dir.dir, 'nowhere.graphql')} (ENOENT). Fix: give its path relative to the definitions file`,
        ]);
      }
      expect(existsSync(join(dir.dir, 'never.db'))).toBe(false);
    } finally {
      dir.remove();
    }
  });
});
