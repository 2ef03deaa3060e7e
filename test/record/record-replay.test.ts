import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseDocumentSource } from '../../src/api/documents.ts';
import { openForWriting } from '../../src/app/database.ts';
import { runOnce } from '../../src/app/run-once.ts';
import { loadStreams, selectStreams } from '../../src/app/streams.ts';
import { FakeClock } from '../../src/clock.ts';
import { resolveConfig } from '../../src/config.ts';
import { silentLogger } from '../../src/logger.ts';
import { readRecording } from '../../src/sandbox/replay-load.ts';
import { startReplay } from '../../src/sandbox/replay.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { freshDatabase } from '../support/databases.ts';
import { runCli, spawnCli, type Child } from '../support/process.ts';
import { tempDir } from '../support/tmp.ts';
import { waitFor } from '../support/wait.ts';
import { dump, dumpDatabase, filesOf, leaks, printedEnv, printedNodeOptions } from './helpers.ts';

/**
 * The whole workflow as a user runs it, every step a real child process of the CLI against a sandbox on a random
 * port (real HTTP, real gzip): `record --out DIR sync`, `sandbox --replay DIR`, the printed settings and clock, the
 * replayed `sync`, and the two databases compared row by row: two SQLite files, and two Postgres schemas.
 */

const DAY = 24 * 60 * 60 * 1000;
// Characters that JSON, URLs and base64 each encode differently, so every form of the secret differs from the others.
const WEBHOOK_SECRET = 'webhook "secret" / with + spaces & = signs \\ and more characters to reach the minimum length of 64';
const HEADER_VALUE = 'custom-header-value-7f3a9c1e5b';


/** The summary without the time the user waited (real time, not the recording's frozen clock). */
const withoutTime = (line: string) => line.replace(/ in \d+\.\ds\n$/, ' in …s\n');

describe('record and sandbox --replay', () => {
  let sandbox: Sandbox;
  let work: ReturnType<typeof tempDir>;
  let env: Record<string, string>;
  const children: Child[] = [];

  beforeEach(async () => {
    sandbox = await startSandbox({ seed: 11, customers: 1, dataStart: Math.floor((Date.now() - DAY) / 300_000) * 300_000 });
    work = tempDir('occupancy-sync-record-');
    const customer = sandbox.customers[0]!;
    env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      API_BASE_URL: sandbox.url,
      API_KEY: customer.readKey.key,
      API_SECRET: customer.readKey.secret,
      CUSTOMER_ID: customer.id,
      WEBHOOK_SECRET,
      WEBHOOK_REQUIRED_HEADERS: JSON.stringify({ 'X-Webhook-Token': HEADER_VALUE }),
      DATABASE_URL: `file:${join(work.dir, 'recorded.db')}`,
      LOG_LEVEL: 'warn',
      SYNC_INITIAL_HISTORY: '12h',
      SYNC_STEP: '6h',
      SYNC_PAGE_SIZE: '100',
      HTTP_BACKOFF_MIN: '10ms',
      HTTP_BACKOFF_MAX: '50ms',
    };
  });
  afterEach(async () => {
    await Promise.all(children.splice(0).map((c) => c.kill('SIGTERM').catch(() => undefined)));
    await sandbox.close();
    work.remove();
  });

  /** Starts `sandbox --replay dir` and returns it with the settings and NODE_OPTIONS it printed. */
  async function replay(dir: string): Promise<{ child: Child; env: Record<string, string> }> {
    const child = spawnCli(['sandbox', '--replay', dir, '--port', '0'], { env: { PATH: env.PATH, HOME: env.HOME, LOG_LEVEL: 'warn' } });
    children.push(child);
    await child.waitForLine(/^DATABASE_URL=/, 'the replay to print the settings of the command under replay');
    const { DATABASE_URL: _db, ...printed } = printedEnv(child.stdout());
    return { child, env: { PATH: env.PATH!, HOME: env.HOME!, LOG_LEVEL: 'warn', ...printed, NODE_OPTIONS: printedNodeOptions(child.stdout()) } };
  }

  it('a recorded sync, replayed with sandbox --replay, gives the same database, and the recording holds no secret in any form', async () => {
    const out = join(work.dir, 'recording');
    const recorded = await runCli(['record', '--out', out, 'sync'], { env, timeoutMs: 90_000 });
    expect(recorded.code, recorded.stderr).toBe(0);
    expect(recorded.stdout).toMatch(/^sync: 1 customer, 4 streams, \d+ pages, [\d,]+ records, 0 failed in \d+\.\ds\n$/);
    const meta = JSON.parse(readFileSync(join(out, 'meta.json'), 'utf8'));
    const exchanges = readdirSync(join(out, 'exchanges'));
    expect(meta).toMatchObject({ command: ['sync'], exitCode: 0, exchanges: exchanges.length, stateAtStart: [], keys: [{ key: 'recorded-key-1', customerId: env.CUSTOMER_ID }] });
    expect(meta.settings).toEqual({ HTTP_BACKOFF_MAX: '50ms', HTTP_BACKOFF_MIN: '10ms', SYNC_INITIAL_HISTORY: '12h', SYNC_PAGE_SIZE: '100', SYNC_STEP: '6h' });
    expect(exchanges.length).toBeGreaterThan(5);
    expect(recorded.stderr).toContain(`record: ${exchanges.length} exchange(s) in `);
    const auth = JSON.parse(readFileSync(join(out, 'exchanges', exchanges[0]!), 'utf8'));
    expect(auth).toMatchObject({
      endpoint: 'auth',
      key: 'recorded-key-1',
      request: { body: { ApiKey: 'recorded-key-1', ApiSecret: '[removed: API secret]' } },
      response: { status: 200, body: { idToken: '[removed: token 1 of recorded-key-1]', expiresIn: 900 } },
      token: { claims: { customerId: env.CUSTOMER_ID, scopes: ['ReadPublicApi'] } },
    });
    const query = JSON.parse(readFileSync(join(out, 'exchanges', exchanges.find((f) => f.includes('Occupancy'))!), 'utf8'));
    expect(query.request.headers.authorization).toBe('Bearer [removed: token 1 of recorded-key-1]');
    expect(query.response).toMatchObject({ status: 200, contentEncoding: 'gzip', headers: { date: expect.stringMatching(/GMT$/) } });
    expect(query.response.body.data.occupancy.nodes.length).toBeGreaterThan(0);
    expect(query.response.wireBytes).toBeLessThan(JSON.stringify(query.response.body).length);

    // No secret in any form, in any file: key, secret, the webhook secret and header value of the configuration, and
    // the sandbox's tokens (every one begins with the same header segment, so its encodings begin with the header's).
    const probe = await fetch(`${sandbox.url}/api/v1/auth`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ApiKey: env.API_KEY, ApiSecret: env.API_SECRET }),
    });
    const tokenHeader = ((await probe.json()) as { idToken: string }).idToken.split('.')[0]!;
    expect(leaks(out, { apiKey: env.API_KEY!, apiSecret: env.API_SECRET!, webhookSecret: WEBHOOK_SECRET, headerValue: HEADER_VALUE, tokenHeader })).toEqual([]);
    expect(filesOf(out).filter((f) => /eyJ[\w-]+\.eyJ[\w-]+\./.test(f.text)).map((f) => f.path)).toEqual([]);
    expect(readFileSync(join(out, 'README.txt'), 'utf8')).toMatch(/Removed \(meta\.json "removed" says the same/);

    const { child, env: replayEnv } = await replay(out);
    expect(replayEnv).toMatchObject({ API_KEY: 'recorded-key-1', CUSTOMER_ID: env.CUSTOMER_ID, SYNC_STEP: '6h', SYNC_PAGE_SIZE: '100' });
    const replayDb = join(work.dir, 'replayed.db');
    const replayed = await runCli(['sync'], { env: { ...replayEnv, DATABASE_URL: `file:${replayDb}` }, timeoutMs: 90_000 });
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(withoutTime(replayed.stdout)).toBe(withoutTime(recorded.stdout));

    const before = dump(join(work.dir, 'recorded.db'));
    expect(before.occupancy.length).toBeGreaterThan(100);
    expect(before.buildings.length).toBe(3);
    expect(dump(replayDb)).toEqual(before);

    expect(await child.kill('SIGTERM')).toEqual({ code: 0, signal: null });
    expect(child.stdout()).toContain(`replay stopped: ${exchanges.length} recorded answer(s) served, 0 not asked for, 0 request(s) not in the recording`);

    // The suite's way: the engine in this process, its clock the recorded instant, against the replay.
    const recording = readRecording(out);
    const server = await startReplay({ recording });
    const config = resolveConfig({
      ...recording.meta.settings,
      API_BASE_URL: server.url,
      API_KEY: recording.meta.keys[0]!.key,
      API_SECRET: 'replay',
      CUSTOMER_ID: recording.meta.keys[0]!.customerId!,
      DATABASE_URL: `file:${join(work.dir, 'in-process.db')}`,
    });
    const clock = new FakeClock(recording.meta.clock.epochMs);
    const store = await openForWriting(config.database);
    try {
      const streams = selectStreams(undefined, undefined, loadStreams(config, { parseDocument: parseDocumentSource }).streams);
      const report = await runOnce({ config, store, logger: silentLogger, customers: config.customers, streams, clock });
      expect(report.outcomes.map((o) => o.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
    } finally {
      await store.close();
      await server.close();
    }
    expect(server.stats.notInRecording).toBe(0);
    const engine = dump(join(work.dir, 'in-process.db'));
    expect(engine.occupancy).toEqual(before.occupancy);
    const watermarks = (rows: Array<Record<string, unknown>>) => rows.map((r) => [r.stream, r.watermark]);
    expect(watermarks(engine.sync_state)).toEqual(watermarks(before.sync_state));
  }, 180_000);

  it('on Postgres too: a recorded sync, replayed into another schema with sandbox --replay, gives the same database', async () => {
    const recordedDb = await freshDatabase('postgres', 'recorded');
    const replayedDb = await freshDatabase('postgres', 'replayed');
    try {
      const out = join(work.dir, 'recording');
      const recorded = await runCli(['record', '--out', out, 'sync'], { env: { ...env, DATABASE_URL: recordedDb.url }, timeoutMs: 90_000 });
      expect(recorded.code, recorded.stderr).toBe(0);
      expect(recorded.stdout).toMatch(/^sync: 1 customer, 4 streams, \d+ pages, [\d,]+ records, 0 failed in \d+\.\ds\n$/);
      const meta = JSON.parse(readFileSync(join(out, 'meta.json'), 'utf8'));
      expect(meta).toMatchObject({ command: ['sync'], exitCode: 0, stateAtStart: [] });
      // The recording names no database: the schema's URL is not in it.
      expect(filesOf(out).filter((f) => f.text.includes(recordedDb.schema!)).map((f) => f.path)).toEqual([]);

      const { child, env: replayEnv } = await replay(out);
      const replayed = await runCli(['sync'], { env: { ...replayEnv, DATABASE_URL: replayedDb.url }, timeoutMs: 90_000 });
      expect(replayed.code, replayed.stderr).toBe(0);
      expect(withoutTime(replayed.stdout)).toBe(withoutTime(recorded.stdout));

      const before = await dumpDatabase(recordedDb.database);
      expect(before.occupancy.length).toBeGreaterThan(100);
      expect(before.buildings.length).toBe(3);
      expect(before.sync_runs.map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
      expect(await dumpDatabase(replayedDb.database)).toEqual(before);

      expect(await child.kill('SIGTERM')).toEqual({ code: 0, signal: null });
      expect(child.stdout()).toContain(`replay stopped: ${meta.exchanges} recorded answer(s) served, 0 not asked for, 0 request(s) not in the recording`);
    } finally {
      await recordedDb.drop();
      await replayedDb.drop();
    }
  }, 180_000);

  it('replays a sync that started from saved state once record --load-state put that state in the new database', async () => {
    const first = await runCli(['sync'], { env, timeoutMs: 90_000 });
    expect(first.code, first.stderr).toBe(0);
    const out = join(work.dir, 'recording');
    const recorded = await runCli(['record', '--out', out, 'sync'], { env, timeoutMs: 90_000 });
    expect(recorded.code, recorded.stderr).toBe(0);
    const meta = JSON.parse(readFileSync(join(out, 'meta.json'), 'utf8'));
    expect(meta.stateAtStart.map((s: { stream: string }) => s.stream)).toEqual(['buildings', 'floor-spaces', 'floors', 'occupancy']);

    const { child, env: replayEnv } = await replay(out);
    expect(child.stdout()).toContain('record --load-state');

    // Without the state, the replayed sync asks for other windows: refused (not retried) with the cause and its fix, and logged.
    const empty = join(work.dir, 'empty.db');
    const lost = await runCli(['sync'], { env: { ...replayEnv, DATABASE_URL: `file:${empty}`, HTTP_MAX_ATTEMPTS: '1' }, timeoutMs: 90_000 });
    expect(lost.code).toBe(1);
    expect(lost.stderr).toMatch(/not in the recording: this Occupancy asks for other times than the recorded run, with the recorded clock or not: it started from other sync state or other settings\. Fix: replay on a new database with the recorded clock, settings and start state/);
    await child.waitForLine(/replay: not in the recording: Occupancy with variables/, 'the replay to log the request it does not hold', { stream: 'stderr' });

    const replayDb = join(work.dir, 'replayed.db');
    const loaded = await runCli(['record', '--load-state', out], { env: { ...replayEnv, DATABASE_URL: `file:${replayDb}` } });
    expect(loaded.code, loaded.stderr).toBe(0);
    expect(loaded.stdout).toBe(`loaded the sync state of 4 stream(s) into file:${replayDb}; now run the recorded command against the replay\n`);
    const again = await runCli(['record', '--load-state', out], { env: { ...replayEnv, DATABASE_URL: `file:${replayDb}` } });
    expect(again.code).toBe(64);
    expect(again.stderr).toMatch(/already holds sync state for customer .+, stream buildings; nothing was loaded/);

    const replayed = await runCli(['sync'], { env: { ...replayEnv, DATABASE_URL: `file:${replayDb}` }, timeoutMs: 90_000 });
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(withoutTime(replayed.stdout)).toBe(withoutTime(recorded.stdout));
    const original = dump(join(work.dir, 'recorded.db'));
    const copy = dump(replayDb);
    expect(copy.sync_state).toEqual(original.sync_state);
    // The replay's database has what the recorded (second) run wrote, which the original has too.
    const reading = (r: Record<string, unknown>) => `${r.floor_space_id} ${r.observed_at} ${r.occupancy_status} ${r.headcount}`;
    const all = new Set(original.occupancy.map(reading));
    expect(copy.occupancy.length).toBeGreaterThan(0);
    expect(copy.occupancy.map(reading).filter((r) => !all.has(r))).toEqual([]);
  }, 240_000);

  it('passes one SIGTERM on to the command, which finishes its page and exits 0, and completes the recording', async () => {
    // Every query held a second and a half, so the run is still reading when the signal comes.
    sandbox.setFaults({ slow: 1, slowMs: 1500 });
    const out = join(work.dir, 'recording');
    const child = spawnCli(['record', '--out', out, 'sync'], { env });
    children.push(child);
    const exchangesDir = join(out, 'exchanges');
    const started = await waitFor(() => existsSync(exchangesDir) && readdirSync(exchangesDir).some((f) => f.includes('query')), 'the first answered query to be kept', 60_000, { unless: child.exited });
    expect(started, child.stderr()).toBe(true);
    expect(await child.kill('SIGTERM', 60_000)).toEqual({ code: 0, signal: null });
    expect(child.stdout()).toMatch(/\(interrupted: the next run resumes from the last committed page\)\n$/);
    const meta = JSON.parse(readFileSync(join(out, 'meta.json'), 'utf8'));
    expect(meta).toMatchObject({ exitCode: 0, exchanges: readdirSync(exchangesDir).length, finishedAt: expect.any(String) });
    expect(readFileSync(join(out, 'stdout.txt'), 'utf8')).toBe(child.stdout());
  }, 120_000);

  it('keeps what a failing command exchanged and exits with its code', async () => {
    const out = join(work.dir, 'recording');
    const wrong = 'a-wrong-secret-0123456789';
    const recorded = await runCli(['record', '--out', out, 'sync'], { env: { ...env, API_SECRET: wrong }, timeoutMs: 90_000 });
    expect(recorded.code).toBe(77);
    expect(recorded.stderr).toMatch(/sync exited 77\n$/);
    const meta = JSON.parse(readFileSync(join(out, 'meta.json'), 'utf8'));
    expect(meta).toMatchObject({ exitCode: 77, exchanges: 1 });
    const [file] = readdirSync(join(out, 'exchanges'));
    const auth = JSON.parse(readFileSync(join(out, 'exchanges', file!), 'utf8'));
    expect(auth).toMatchObject({ endpoint: 'auth', key: 'recorded-key-1', response: { status: 401 } });
    expect(readFileSync(join(out, 'stderr.txt'), 'utf8')).toMatch(/recorded-key-1|authentication/i);
    expect(leaks(out, { apiKey: env.API_KEY!, wrong })).toEqual([]);
  }, 120_000);
});
