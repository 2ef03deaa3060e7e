import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.ts';
import { BUILDINGS_CAP, startSandbox, type ApiVariant, type Sandbox } from '../../src/sandbox/index.ts';
import { runMain } from '../support/cli.ts';
import { DIALECTS, freshDatabase, openTestStore, type TestDatabase } from '../support/databases.ts';
import { ROOT } from '../support/process.ts';
import { tempDir } from '../support/tmp.ts';
import { DAY, HOUR, againstTruth, childEnv, dbRows } from '../sync/helpers.ts';

/**
 * What stands between a definitions file that is almost right and silent loss: the truncation guard, a refused page
 * size, an end bound declared exclusive that the API reads inclusive. Each fails its window with one line naming the
 * stream and the fix, commits nothing it cannot vouch for, and the corrected file then syncs exactly.
 */

const dataStart = Math.floor((Date.now() - DAY) / 300_000) * 300_000;

describe.each(DIALECTS)('guards against a definitions file that does not fit the API (%s)', (dialect) => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let dir: { dir: string; remove(): void };
  let file: string;

  async function setUp(variant: ApiVariant, example: string) {
    sandbox = await startSandbox({ apiVariant: variant, seed: 5, customers: 1, dataStart, lateArrivalMaxMs: 0 });
    db = await freshDatabase(dialect, `guard-${variant}`);
    cpSync(join(ROOT, 'docs/examples', example), dir.dir, { recursive: true });
    file = join(dir.dir, 'occupancy-sync.streams.yaml');
    return childEnv(sandbox, db.url, { LOG_LEVEL: 'silent', SYNC_INITIAL_HISTORY: '12h', SYNC_SETTLE_DELAY: '1s', DEFINITIONS_FILE: dir.dir, HTTP_MAX_ATTEMPTS: '6' });
  }
  const edit = (from: string, to: string) => {
    const text = readFileSync(file, 'utf8');
    expect(text).toContain(from);
    writeFileSync(file, text.replace(from, to));
  };
  async function stored(customer: string) {
    const store = await openTestStore(db);
    try {
      return { rows: await dbRows(store, customer), state: await store.getState(customer, 'occupancy') };
    } finally {
      await store.close();
    }
  }

  beforeEach(() => {
    dir = tempDir('guards-');
  });
  afterEach(async () => {
    await sandbox?.close();
    await db?.drop();
    dir.remove();
  });

  it('a single page that reaches the API\'s cap fails its window instead of being committed as complete', async () => {
    const env = await setUp('capped', 'api-capped');
    const customer = sandbox.customers[0]!.id;
    edit('window: { step: 15m }', 'window: { step: 6h }');
    const cut = await runMain(['sync'], env);
    expect(cut.code).toBe(ExitCode.FAILURE);
    expect(cut.stderr).toMatch(/occupancy: failed: window \[.+\), page 1: the API answer broke the page contract \(truncated\): the answer holds 500 records, the most the API answers \(maxPageSize 500\)/);
    expect((await stored(customer)).state?.watermark ?? null).toBeNull();

    edit('window: { step: 6h }', 'window: { step: 15m }');
    const fixed = await runMain(['sync'], env);
    expect(fixed.stderr).toBe('');
    expect(fixed.code).toBe(ExitCode.OK);
    const { rows, state } = await stored(customer);
    const held = againstTruth(rows, sandbox, customer, state!.watermark!, Math.max(Date.parse(state!.watermark!) - 12 * HOUR - HOUR, rows.length ? Date.parse(rows[0]!.observedAt) : 0));
    expect(held.stored).toEqual(held.truth);
    expect(held.strays).toEqual([]);
    expect(rows.length).toBeGreaterThan(1000);
  });

  it('a full listing that reaches its declared cap fails the run and soft-deletes nothing it did not see', async () => {
    sandbox = await startSandbox({ seed: 5, customers: 1, buildingsPerCustomer: 4, floorSpacesPerBuilding: 1, dataStart, lateArrivalMaxMs: 0 });
    db = await freshDatabase(dialect, 'guard-listing');
    const customer = sandbox.customers[0]!.id;
    const env = childEnv(sandbox, db.url, { LOG_LEVEL: 'silent', HTTP_MAX_ATTEMPTS: '2' });
    const buildings = async () => {
      const store = await openTestStore(db);
      try {
        const rows = await store.query<{ id: string; deleted_at: unknown }>('SELECT id, deleted_at FROM buildings WHERE customer_id = $1 ORDER BY id', [customer]);
        return { live: rows.filter((r) => r.deleted_at === null).map((r) => r.id), watermark: (await store.getState(customer, 'buildings'))?.watermark ?? null };
      } finally {
        await store.close();
      }
    };
    const all = sandbox.truth.buildings(customer).map((b) => b.id).sort();
    expect(all).toHaveLength(4);
    const first = await runMain(['sync', '--stream', 'buildings'], env);
    expect(first.stderr).toBe('');
    const before = await buildings();
    expect(before.live).toEqual(all);

    // The API caps its unpaged listing at BUILDINGS_CAP and says nothing of the rest; the definitions declare that cap.
    sandbox.setMisbehaviour('cappedBuildings');
    cpSync(join(ROOT, 'jobs/buildings.graphql'), join(dir.dir, 'buildings.graphql'));
    const built = readFileSync(join(ROOT, 'jobs/streams.yaml'), 'utf8');
    const stream = built.slice(built.indexOf('  - name: buildings'), built.indexOf('  # The hierarchy below'));
    expect(stream).toContain('maxPageSize: 10000');
    writeFileSync(join(dir.dir, 'occupancy-sync.streams.yaml'), `version: 2\nstreams:\n${stream.replace('maxPageSize: 10000', `maxPageSize: ${BUILDINGS_CAP}`)}`);
    const cut = await runMain(['sync', '--stream', 'buildings'], { ...env, DEFINITIONS_FILE: dir.dir });
    expect(cut.code).toBe(ExitCode.FAILURE);
    expect(cut.stderr).toMatch(/buildings: failed: the listing, page 1: the API answer broke the page contract \(truncated\): the answer holds 2 records, the most the API answers \(maxPageSize 2\)/);
    expect(cut.stderr).toContain('nothing was soft-deleted');
    expect(await buildings()).toEqual(before);

    // The same cut under a cap declared too high is taken for a complete listing: the loss the declaration prevents.
    const trusted = await runMain(['sync', '--stream', 'buildings'], env);
    expect(trusted.code).toBe(ExitCode.OK);
    expect((await buildings()).live).toHaveLength(BUILDINGS_CAP);
  });

  it('a page size the API refuses is one line naming the stream, the variable and the limit, not retried', async () => {
    const env = await setUp('edges', 'api-edges');
    edit('      maxPageSize: 100\n', '');
    const before = sandbox.stats.queries;
    const refused = await runMain(['sync'], env);
    expect(refused.code).toBe(ExitCode.FAILURE);
    const line = refused.stderr.split('\n').find((l) => l.includes('occupancy: failed'))!;
    expect(line).toContain('stream occupancy: the API refused the request ($first = 1000): first must be between 1 and 100');
    expect(line).toContain('Fix: set `paging.maxPageSize: 100` for stream occupancy in the definitions file');
    // What the API offers (the small introspection the ifOffered streams need), one query for the buildings, one for
    // the refused page: a deterministic argument error is not retried.
    expect(sandbox.stats.queries - before).toBe(3);
  });

  it('an end bound the API reads inclusively, declared exclusive, fails at the boundary record and says what to declare', async () => {
    const env = await setUp('token', 'api-token');
    edit('    window: { end: inclusive }\n', '');
    // Hour-aligned windows end on a reading's tick: the API answers it in both windows.
    const result = await runMain(['backfill', '--from', new Date(dataStart + 2 * HOUR).toISOString(), '--to', new Date(dataStart + 4 * HOUR).toISOString()], env);
    expect(result.code).toBe(ExitCode.FAILURE);
    expect(result.stderr).toMatch(/\(window\): \d+ record\(s\) lie outside the requested window/);
    expect(result.stderr).toContain('If the API includes records at the end bound, declare `window: { end: inclusive }` for the stream');
  });
});

describe('definitions refused before any request', () => {
  let dir: { dir: string; remove(): void };
  beforeEach(() => {
    dir = tempDir('guards-load-');
    cpSync(join(ROOT, 'docs/examples/api-capped'), dir.dir, { recursive: true });
  });
  afterEach(() => dir.remove());

  it('an incremental single-page stream without the API\'s cap is refused at load: an unknown cap would lose records silently', async () => {
    const file = join(dir.dir, 'occupancy-sync.streams.yaml');
    writeFileSync(file, readFileSync(file, 'utf8').replace(/^ {6}maxPageSize: 500\n/m, ''));
    const result = await runMain(['sync'], { DEFINITIONS_FILE: dir.dir, DATABASE_URL: 'file:/nonexistent/x.db', API_BASE_URL: 'http://127.0.0.1:9', API_KEY: 'k', API_SECRET: 's', CUSTOMER_ID: '6f1c0d2e-0000-4000-8000-000000000001' });
    expect(result.code).toBe(ExitCode.CONFIG);
    expect(result.stderr).toMatch(/occupancy-sync\.streams\.yaml:\d+:\d+: a stream read in single pages must declare maxPageSize, .+ committed as a complete window/);
  });

  it('a full listing in a single page without the API\'s cap is refused at load too: a cut listing would soft-delete the rest', async () => {
    cpSync(join(ROOT, 'jobs/buildings.graphql'), join(dir.dir, 'buildings.graphql'));
    const stream = ['  - name: buildings', '    document: buildings.graphql', '    sink: buildings', '    kind: full', '    paging: { style: single, records: buildings }',
      '    record:', '      id: { path: id, type: id }', '      name: { path: name, type: string }', '    softDelete: { completeWhenUnset: [] }', ''].join('\n');
    const file = join(dir.dir, 'occupancy-sync.streams.yaml');
    writeFileSync(file, `version: 2\nstreams:\n${stream}`);
    const env = { DEFINITIONS_FILE: dir.dir, DATABASE_URL: 'file:/nonexistent/x.db', API_BASE_URL: 'http://127.0.0.1:9', API_KEY: 'k', API_SECRET: 's', CUSTOMER_ID: '6f1c0d2e-0000-4000-8000-000000000001' };
    const refused = await runMain(['sync'], env);
    expect(refused.code).toBe(ExitCode.CONFIG);
    expect(refused.stderr).toMatch(/occupancy-sync\.streams\.yaml:7:\d+: a stream read in single pages must declare maxPageSize, .+ a complete listing \(and the rows it lacks soft-deleted\)/);
    // A version-1 file says it with the key it gains in this release.
    writeFileSync(file, `version: 1\nstreams:\n${stream.replace('kind: full', 'kind: full-refresh').replace('style: single, records: buildings', 'style: none, records: buildings')}`);
    expect((await runMain(['sync'], env)).stderr).toMatch(/:7:\d+: a stream read in single pages must declare maxPageSize/);
    writeFileSync(file, `version: 1\nstreams:\n${stream.replace('kind: full', 'kind: full-refresh').replace('style: single, records: buildings', 'style: none, records: buildings, maxPageSize: 50')}`);
    expect((await runMain(['status'], env)).stderr).not.toMatch(/maxPageSize/);
  });
});
