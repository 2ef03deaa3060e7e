import { afterAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.ts';
import { encodingsOf, MIN_FRAGMENT } from '../../src/secrets.ts';
import { startSandbox, type MisbehaviourKind, type Sandbox } from '../../src/sandbox/index.ts';
import type { Store } from '../../src/store/types.ts';
import { checkHealth } from '../../src/serve/health.ts';
import { DIALECTS, freshDatabase, openTestStore } from '../support/databases.ts';
import { childEnv } from '../sync/helpers.ts';
import { Figures } from './figures.ts';
import { DAY, HOUR, dbRows, truthRows } from './sync-harness.ts';
import { runMain } from '../support/cli.ts';

/**
 * The sandbox answers in one misbehaving way at a time (src/sandbox/misbehave.ts), and the real CLI (`main`, as cron
 * runs it) syncs against it, on SQLite and Postgres. For each: the exit code, the one line that says what broke,
 * no stored row that the platform did not send, no valid record missing below the watermark, and, once the platform
 * behaves again, a run that completes the data.
 */

interface Case {
  kind: MisbehaviourKind;
  tried: string;
  exit: number;
  /** The problem line on stderr. */
  line: RegExp;
  held: string;
  /** At most this many query requests in the misbehaving run: permanent errors are not retried. */
  maxQueries?: number;
  /** Settings of this case (the others share SYNC_PAGE_SIZE=20). */
  env?: Record<string, string>;
}

const CONTRACT = (rule: string) => new RegExp(`^ {2}\\S+ occupancy: failed: window \\[\\S+, \\S+\\), page \\d+( after the checkpoint)?: the API answer broke the page contract \\(${rule}\\): .+ Fix: `, 'm');
const FAILS = (rule: string) => `exit 1 with one line naming customer, stream, window, page and the rule (${rule}); DB = truth below the watermark; the next run = truth`;
const PERMANENT = (what: string) => `exit 1 with one line (${what}), one request per stream (no retries); DB unchanged; the next run = truth`;

/**
 * A permanent failure is not retried: at most one query per built-in stream (buildings, floors, floor-spaces,
 * occupancy) and the one that asks what the API offers (ifOffered), each refused the same way.
 */
const ONCE_PER_STREAM = 5;

const CASES: Case[] = [
  { kind: 'pageInfoNull', tried: '`pageInfo: null` on later pages', exit: 1, line: CONTRACT('shape'), held: FAILS('shape') },
  { kind: 'nodesNull', tried: '`nodes: null` on later pages', exit: 1, line: CONTRACT('shape'), held: FAILS('shape') },
  { kind: 'hasNextPageString', tried: '`hasNextPage: "true"` (a string) on later pages', exit: 1, line: CONTRACT('shape'), held: FAILS('shape') },
  { kind: 'endCursorMissing', tried: '`hasNextPage: true` with `endCursor: null` on later pages', exit: 1, line: CONTRACT('shape'), held: FAILS('shape') },
  { kind: 'ignoreAfter', tried: 'the server ignores `after` and sends the first page again', exit: 1, line: CONTRACT('cursor-repeated'), held: FAILS('cursor-repeated') },
  { kind: 'sameRecordsFreshCursor', tried: 'the first page again and again, each time under a new cursor', exit: 1, line: CONTRACT('no-progress'), held: FAILS('no-progress') },
  // Pages of 100: an hour's 144 readings are two pages, the second a repeat of the first that ends the window.
  { kind: 'firstPageAgain', tried: 'every page repeats the first page of its window while `hasNextPage`/`endCursor` advance', exit: 1, line: CONTRACT('no-progress'), held: FAILS('no-progress'), env: { SYNC_PAGE_SIZE: '100' } },
  { kind: 'cyclingCursor', tried: 'cursors that cycle A, B, A, ...', exit: 1, line: CONTRACT('cursor-repeated'), held: FAILS('cursor-repeated') },
  { kind: 'emptyPagesForever', tried: '`hasNextPage: true` with empty pages forever', exit: 1, line: CONTRACT('no-progress'), held: FAILS('no-progress') },
  { kind: 'outOfWindow', tried: 'records whose `created` lies after the requested `to`', exit: 1, line: CONTRACT('window'), held: FAILS('window') },
  {
    kind: 'localTimeWindows',
    tried: 'the server reads `from`/`to` as local time (UTC+02:00): every window answers the readings two hours earlier',
    exit: 1,
    line: CONTRACT('window'),
    held: 'exit 1 naming the rule (window); the windows committed before the evidence are read again: the watermark goes back (sync_state_changes); DB = truth below the watermark; the next run = truth',
  },
  { kind: 'nullHeadcount', tried: '`headcount: null` on every record', exit: 1, line: CONTRACT('records-rejected'), held: FAILS('records-rejected') },
  { kind: 'nullFloorSpaceId', tried: '`floorSpaceId: null` on every record', exit: 1, line: CONTRACT('records-rejected'), held: FAILS('records-rejected') },
  { kind: 'nullStatus', tried: '`occupancyStatus: null` on every record', exit: 1, line: CONTRACT('records-rejected'), held: FAILS('records-rejected') },
  { kind: 'numericCreated', tried: '`created` as epoch milliseconds (a number)', exit: 1, line: CONTRACT('records-rejected'), held: FAILS('records-rejected') },
  { kind: 'zonelessCreated', tried: '`created` without a zone', exit: 1, line: CONTRACT('records-rejected'), held: FAILS('records-rejected') },
  {
    kind: 'strayNullHeadcount',
    tried: '`headcount: null` on the records of one floor space of twelve',
    exit: 0,
    line: /^ {2}\S+ occupancy: \d+ record\(s\) broke their declared types and were quarantined/m,
    held: 'exit 0; the bad records in quarantined_records with the reason, the others stored; status, /healthz (degraded) and the summary say so; a backfill of the quarantined windows after the fix = truth',
  },
  {
    kind: 'dateYearBehind',
    tried: "the `Date` header is a year behind the platform's data",
    exit: 0,
    line: /the platform's Date header is \d+ s away from the local clock, more than SYNC_MAX_CLOCK_SKEW/,
    held: 'exit 0; one warning per stream run; the header is ignored and the watermark moves no further than the newest record read (the data is current: it keeps up); DB = truth',
  },
  { kind: 'hugeGzip', tried: 'a gzip answer that inflates past the 64 MiB limit', exit: 1, line: /larger than 67108864 bytes once decompressed; refusing it/, held: PERMANENT('the size limit'), maxQueries: ONCE_PER_STREAM },
  { kind: 'redirect', tried: 'HTTP 307 to another host', exit: 1, line: /HTTP 307 redirect to https:\/\/api\.example\.net\/api\/external\/query, which is not followed/, held: PERMANENT('the redirect and its target'), maxQueries: ONCE_PER_STREAM },
  { kind: 'brotliEncoding', tried: '`Content-Encoding: br`', exit: 1, line: /uses Content-Encoding "br", but only gzip was accepted/, held: PERMANENT('the encoding'), maxQueries: ONCE_PER_STREAM },
  // A single HTML page is a proxy's passing state and is retried (test/api/client-answers.test.ts); one on every answer
  // fails after HTTP_MAX_ATTEMPTS (3 here) per stream.
  {
    kind: 'htmlLoginPage',
    tried: "HTTP 200 with a proxy's HTML login page on every answer",
    exit: 1,
    line: /text\/html/,
    held: 'exit 1 with one line (what came back and the fix) after HTTP_MAX_ATTEMPTS=3 requests per stream; DB unchanged; the next run = truth',
    maxQueries: 3 * ONCE_PER_STREAM,
    env: { HTTP_MAX_ATTEMPTS: '3' },
  },
  {
    kind: 'authEchoesSecret',
    tried: 'the auth endpoint refuses with a body that quotes the secret across its 200th character',
    exit: 1,
    line: /POST \/api\/v1\/auth: unexpected HTTP 400: /,
    held: 'exit 1; no fragment of 12 characters of the secret in any output or in the database',
  },
  {
    kind: 'authEchoesSecretEscaped',
    tried: 'the same, JSON-escaped with `\\/`',
    exit: 1,
    line: /POST \/api\/v1\/auth: unexpected HTTP 400: /,
    held: 'exit 1; no fragment of 12 characters of the secret in any output or in the database',
  },
];

/** Secrets with the characters that change under an encoding, so every escaping is exercised. */
const SECRET_SUFFIX = '/+"\\%';

const cli = runMain;

function leaks(text: string, secret: string): string[] {
  const found: string[] = [];
  for (const form of encodingsOf(secret)) {
    for (let i = 0; i + MIN_FRAGMENT <= form.length; i++) if (text.includes(form.slice(i, i + MIN_FRAGMENT))) found.push(form.slice(i, i + MIN_FRAGMENT));
  }
  return found;
}

const key = (r: { floorSpaceId: string; observedAt: string }) => `${r.floorSpaceId} ${r.observedAt}`;

/**
 * What a run may leave: every stored row is one the platform sent, as it sent it, and every valid record below the
 * watermark is stored. Returns the watermark.
 */
async function expectNothingLostOrInvented(store: Store, sandbox: Sandbox, customerId: string, spoiled: ReadonlySet<string>): Promise<number | null> {
  const state = await store.getState(customerId, 'occupancy');
  const watermark = state?.watermark ? Date.parse(state.watermark) : null;
  const rows = await dbRows(store, customerId);
  const truth = new Map(truthRows(sandbox, customerId, { to: Date.now() + 1 }).map((r) => [key(r), r]));
  for (const row of rows) expect(row, 'a stored row the platform did not send as such').toEqual(truth.get(key(row)));
  if (watermark !== null) {
    const stored = new Set(rows.map(key));
    const missing = [...truth.values()].filter((t) => Date.parse(t.observedAt) < watermark && !spoiled.has(t.floorSpaceId) && !stored.has(key(t)));
    expect(missing.length, 'valid records below the watermark that are not stored').toBe(0);
  }
  return watermark;
}

const figures = new Figures(
  { section: 'misbehaving-api', title: 'A misbehaving API: answers that break the contract, one kind at a time (real CLI, `sync` as cron runs it)' },
  DIALECTS.flatMap((dialect) => [...CASES.map((c) => c.kind), 'customer-mismatch', 'cron-loop', 'localTimeWindows-backfill'].map((name) => `misbehaving-api/${dialect}/${name}`)),
);
afterAll(() => void figures.publish());

describe.each(DIALECTS)('a misbehaving API on %s', (backend) => {
  it.each(CASES)('$kind: $held', async (c) => {
    // The data starts within the first run's reach (SYNC_INITIAL_HISTORY), so every record is one the sync must store.
    const dataStart = Math.floor((Date.now() - 3 * HOUR) / 300_000) * 300_000;
    const sandbox = await startSandbox({ seed: 11, customers: 2, dataStart, lateArrivalMaxMs: 0, misbehave: c.kind });
    const db = await freshDatabase(backend, `mb_${c.kind}`);
    const customer = sandbox.customers[0]!;
    const secret = `${customer.readKey.secret}${SECRET_SUFFIX}`;
    const env = childEnv(sandbox, db.url, {
      LOG_LEVEL: 'warn',
      SYNC_INITIAL_HISTORY: '4h',
      SYNC_STEP: '1h',
      SYNC_SETTLE_DELAY: '1s',
      SYNC_PAGE_SIZE: '20',
      ...c.env,
    });
    // The echo cases need the secret to carry every escapable character; the sandbox refuses it (wrong secret).
    if (c.kind.startsWith('authEchoes')) env.API_SECRET = secret;
    const spoiled = new Set(c.kind === 'strayNullHeadcount' ? sandbox.strayFloorSpaceIds() : []);
    const store = await openTestStore(db);
    try {
      const queriesBefore = sandbox.stats.queries;
      const first = await cli(['sync'], env);
      const output = first.stdout + first.stderr;
      expect(first.code, output).toBe(c.exit);
      expect(first.stderr).toMatch(c.line);
      expect(output).not.toMatch(/^ {4}at /m);
      if (c.maxQueries !== undefined) expect(sandbox.stats.queries - queriesBefore).toBeLessThanOrEqual(c.maxQueries);
      const watermark = await expectNothingLostOrInvented(store, sandbox, customer.id, spoiled);

      if (c.kind.startsWith('authEchoes')) {
        const [run] = await store.query<{ error: string }>(`SELECT error FROM sync_runs WHERE status = 'failed' ORDER BY id LIMIT 1`);
        expect(leaks(output, secret)).toEqual([]);
        expect(leaks(run?.error ?? '', secret)).toEqual([]);
        expect(run?.error).toMatch(/unexpected HTTP 400/);
      }
      if (c.kind === 'localTimeWindows') {
        // The first windows came back empty and were committed before the stray records proved them wrong.
        expect(first.stderr).toMatch(/the answer proves windows already committed may be incomplete: the watermark went back/);
        const [change] = await store.stateChanges({ customerId: customer.id, stateKey: 'occupancy' });
        expect(change).toMatchObject({ action: 'rewind', actor: 'occupancy-sync (page contract: window)' });
        expect(Date.parse(change!.newWatermark!)).toBeLessThanOrEqual(dataStart);
      }
      if (c.kind === 'dateYearBehind') {
        expect(first.stderr.match(/Date header is \d+ s away/g)).toHaveLength(1);
        expect(watermark).toBeGreaterThan(Date.now() - 60 * 60_000);
        // Neither clock is trusted when they disagree: the newest record read caps the watermark.
        const newest = (await dbRows(store, customer.id)).at(-1)!.observedAt;
        expect(watermark!, `the watermark passed the newest record read (${newest})`).toBeLessThanOrEqual(Date.parse(newest));
      }
      if (c.kind === 'strayNullHeadcount') {
        expect(first.stdout).toMatch(/\d+ rejected \(quarantined\)/);
        const quarantined = await store.query<{ record: string; reason: string }>('SELECT record, reason FROM quarantined_records WHERE customer_id = $1', [customer.id]);
        expect(quarantined.length).toBeGreaterThan(0);
        for (const q of quarantined) {
          expect(q.reason).toMatch(/^headcount: expected a whole number from 0 to 2,147,483,647, got null$/);
          expect(spoiled.has((JSON.parse(q.record) as { floorSpaceId: string }).floorSpaceId)).toBe(true);
        }
        const health = await checkHealth(store, { customerIds: [customer.id], now: Date.now() });
        expect(health.status).toBe('degraded');
        expect(health.warnings.join('\n')).toMatch(/occupancy: the last run quarantined \d+ record/);
        const status = await cli(['status'], env);
        expect(status.stdout).toMatch(/Quarantined in the last run:\n {2}\S+ occupancy: \d+ record\(s\)/);
      }

      // The platform behaves again: the next run completes what the first one refused.
      sandbox.setMisbehaviour(undefined);
      if (c.kind.startsWith('authEchoes')) env.API_SECRET = customer.readKey.secret;
      const second = await cli(['sync'], env);
      expect(second.code, second.stdout + second.stderr).toBe(ExitCode.OK);
      const after = await expectNothingLostOrInvented(store, sandbox, customer.id, spoiled);
      expect(after).not.toBeNull();
      if (c.kind === 'strayNullHeadcount') {
        // Replay: a backfill over the quarantined windows stores what the platform now sends correctly.
        const [range] = await store.query<{ from: string; to: string }>('SELECT min(window_start) AS "from", max(window_end) AS "to" FROM quarantined_records WHERE customer_id = $1', [customer.id]);
        const replay = await cli(['backfill', '--from', new Date(range!.from).toISOString(), '--to', new Date(range!.to).toISOString()], env);
        expect(replay.code, replay.stderr).toBe(ExitCode.OK);
        await expectNothingLostOrInvented(store, sandbox, customer.id, new Set());
      }
      figures.record({ key: `misbehaving-api/${backend}/${c.kind}`, tried: c.tried, count: 2, held: c.held });
    } finally {
      await store.close();
      await sandbox.close();
      await db.drop();
    }
  });

  it('localTimeWindows during a backfill: the backfill\'s progress goes back over the windows the stray records put in doubt, recorded; a healthy rerun = truth', async () => {
    // Whole hours: the backfill's windows [from + n h, from + (n + 1) h) start where the data starts.
    const dataStart = Math.floor((Date.now() - 8 * HOUR) / HOUR) * HOUR;
    const from = new Date(dataStart).toISOString();
    const to = new Date(dataStart + 5 * HOUR).toISOString();
    const sandbox = await startSandbox({ seed: 14, customers: 1, dataStart, lateArrivalMaxMs: 0, misbehave: 'localTimeWindows' });
    const db = await freshDatabase(backend, 'mb_backfill_tz');
    const customer = sandbox.customers[0]!;
    // One window at a time, so the first two (answered with the empty hours before the data) are committed before the
    // third brings the first stray readings: the evidence that they were read wrongly.
    const env = childEnv(sandbox, db.url, { LOG_LEVEL: 'warn', SYNC_STEP: '1h', SYNC_SETTLE_DELAY: '1s', SYNC_PAGE_SIZE: '50', SYNC_WINDOW_CONCURRENCY: '1' });
    const store = await openTestStore(db);
    try {
      const first = await cli(['backfill', '--from', from, '--to', to], env);
      expect(first.code, first.stdout + first.stderr).toBe(1);
      expect(first.stderr).toMatch(/^ {2}\S+ occupancy#backfill: failed: window \[\S+, \S+\), page \d+: the API answer broke the page contract \(window\): .+ Fix: /m);
      expect(first.stderr).toMatch(new RegExp(`the backfill's progress went back to ${from.replace(/[.]/g, '\\.')} \\(sync_state_changes #\\d+\\)`));
      // Nothing stored that the platform did not send as such, and the progress back at the range's first window.
      await expectNothingLostOrInvented(store, sandbox, customer.id, new Set());
      const state = await store.getState(customer.id, 'occupancy#backfill');
      expect(state).toMatchObject({ windowStart: from, pageCursor: null, rangeStart: from, rangeEnd: to });
      const [change] = await store.stateChanges({ customerId: customer.id, stateKey: 'occupancy#backfill' });
      expect(change).toMatchObject({ action: 'rewind', actor: 'occupancy-sync (page contract: window)', after: { windowStart: from } });
      expect(change!.before!.windowStart! > from, `progress before the rewind: ${change!.before!.windowStart}`).toBe(true);
      const shown = await cli(['state', 'show'], env);
      expect(shown.stdout).toContain(`rewind ${customer.id} occupancy#backfill: backfill progress ${change!.before!.windowStart} -> ${from}`);

      // The platform reads its bounds as UTC again: the same backfill resumes at its first window and completes the range.
      sandbox.setMisbehaviour(undefined);
      const second = await cli(['backfill', '--from', from, '--to', to], env);
      expect(second.code, second.stdout + second.stderr).toBe(ExitCode.OK);
      const truth = truthRows(sandbox, customer.id, { from: dataStart, to: dataStart + 5 * HOUR });
      expect(truth.length).toBeGreaterThan(0);
      expect(await dbRows(store, customer.id, { from: dataStart, to: dataStart + 5 * HOUR })).toEqual(truth);
      figures.record({
        key: `misbehaving-api/${backend}/localTimeWindows-backfill`,
        tried: 'a `backfill` (5 windows of 1 h, one at a time) against a server that reads `from`/`to` as local time (UTC+02:00)',
        count: 2,
        held: "exit 1 naming the rule (window); the backfill's progress goes back to the windows committed before the evidence (sync_state_changes, `state show`); the same backfill rerun against a healthy server = truth",
      });
    } finally {
      await store.close();
      await sandbox.close();
      await db.drop();
    }
  });

  it('a key of one customer configured under another customer id writes nothing and exits 77 naming both', async () => {
    const sandbox = await startSandbox({ seed: 12, customers: 2, dataStart: Math.floor((Date.now() - DAY) / 300_000) * 300_000 });
    const db = await freshDatabase(backend, 'mb_identity');
    const [a, b] = sandbox.customers;
    const env = childEnv(sandbox, db.url, { LOG_LEVEL: 'warn', SYNC_INITIAL_HISTORY: '3h', CUSTOMER_ID: b!.id });
    const store = await openTestStore(db);
    try {
      const result = await cli(['sync'], env);
      expect(result.code).toBe(ExitCode.AUTH);
      expect(result.stderr).toContain(`belongs to customer ${a!.id}, but is configured for customer ${b!.id}: nothing was written`);
      const [counts] = await store.query<{ o: number; bld: number }>('SELECT (SELECT count(*) FROM occupancy) AS o, (SELECT count(*) FROM buildings) AS bld');
      expect({ o: Number(counts!.o), bld: Number(counts!.bld) }).toEqual({ o: 0, bld: 0 });
      figures.record({
        key: `misbehaving-api/${backend}/customer-mismatch`,
        tried: "`CUSTOMER_ID` of customer B with the key of customer A",
        count: 1,
        held: 'exit 77 naming both ids before any write; no row stored',
      });
    } finally {
      await store.close();
      await sandbox.close();
      await db.drop();
    }
  });

  it('cron runs against an API that keeps misbehaving fail every time, and status and /healthz say why', async () => {
    const sandbox = await startSandbox({ seed: 13, customers: 1, dataStart: Math.floor((Date.now() - DAY) / 300_000) * 300_000, lateArrivalMaxMs: 0, misbehave: 'pageInfoNull' });
    const db = await freshDatabase(backend, 'mb_cron');
    const env = childEnv(sandbox, db.url, { LOG_LEVEL: 'silent', SYNC_INITIAL_HISTORY: '3h', SYNC_STEP: '1h', SYNC_SETTLE_DELAY: '1s', SYNC_PAGE_SIZE: '50' });
    const store = await openTestStore(db);
    try {
      const codes: number[] = [];
      for (let i = 0; i < 3; i++) codes.push((await cli(['sync'], env)).code);
      expect(codes).toEqual([1, 1, 1]);
      const status = await cli(['status', '--json'], env);
      const occupancy = (JSON.parse(status.stdout) as Array<{ stream: string; lastRun: { status: string; error: string } }>).find((e) => e.stream === 'occupancy');
      expect(occupancy?.lastRun.status).toBe('failed');
      expect(occupancy?.lastRun.error).toMatch(/broke the page contract \(shape\): data\.occupancy\.pageInfo is null/);
      const health = await checkHealth(store, { now: Date.now() });
      expect(health.status).toBe('unhealthy');
      expect(health.problems.join('\n')).toMatch(/occupancy: last run failed: window .* broke the page contract \(shape\)/);
      figures.record({
        key: `misbehaving-api/${backend}/cron-loop`,
        tried: '3 `sync` runs in a row against `pageInfo: null` on later pages',
        count: 3,
        held: 'every run exits 1; `status` and /healthz (unhealthy) name the rule broken',
      });
    } finally {
      await store.close();
      await sandbox.close();
      await db.drop();
    }
  });
});
