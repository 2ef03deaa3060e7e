import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRetention } from '../../src/app/retention.ts';
import { FakeClock, systemClock } from '../../src/clock.ts';
import { silentLogger } from '../../src/logger.ts';
import { createMetrics } from '../../src/metrics.ts';
import { readSyncHealth } from '../../src/serve/health.ts';
import { startOpsServer, type OpsServer } from '../../src/serve/ops-server.ts';
import { parsePgUrl } from '../../src/store/postgres/url.ts';
import type { Store } from '../../src/store/types.ts';
import { migratedStore, type TestDatabase } from '../support/databases.ts';
import { get } from './helpers.ts';

/**
 * Health at scale (issue 17): 1,000 customers x 2 streams and two days of five-minute runs is 1.15 million sync_runs
 * rows. /healthz stays fast because it reads one row per stream from sync_last_runs and the runs it names by primary
 * key: the test checks that plan on both dialects (how long it takes on a given machine is a measurement, for
 * bench/). A health query the caller gave up on must not go on running on the server.
 */

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  Plans?: PlanNode[];
}

const nodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodes)];

const CUSTOMERS = 1_000;
const RUNS = 1_150_000;

describe('health with 1.15 million runs on Postgres', () => {
  let db: TestDatabase & { store: Store };
  let ops: OpsServer;
  let sql: postgres.Sql;

  beforeAll(async () => {
    db = await migratedStore('postgres', 'health_scale');
    const { url, schema } = parsePgUrl(db.url);
    sql = postgres(url, { max: 2, onnotice: () => {}, connection: { search_path: schema! } });
    // Two days of runs, oldest first, cycling through every customer and stream; then what the store keeps with them.
    await sql.unsafe(`
      INSERT INTO sync_runs (customer_id, stream, mode, started_at, finished_at, status, pages, records)
      SELECT 'customer-' || lpad((g % ${CUSTOMERS})::text, 4, '0'),
             CASE WHEN (g / ${CUSTOMERS}) % 2 = 0 THEN 'occupancy' ELSE 'buildings' END,
             'incremental',
             now() - make_interval(secs => (${RUNS} - g) * 0.15),
             now() - make_interval(secs => (${RUNS} - g) * 0.15 - 1),
             CASE WHEN g % 97 = 0 THEN 'failed' ELSE 'succeeded' END, 1, 12
        FROM generate_series(1, ${RUNS}) AS g`);
    await sql.unsafe(`
      INSERT INTO sync_last_runs (customer_id, stream, last_run_id, last_success_run_id)
      SELECT customer_id, stream, max(id), max(CASE WHEN status = 'succeeded' THEN id END) FROM sync_runs GROUP BY customer_id, stream`);
    await sql.unsafe(`
      INSERT INTO sync_state (customer_id, stream, watermark, updated_at)
      SELECT customer_id, stream, now() - interval '5 minutes', now() FROM sync_last_runs`);
    await sql.unsafe('ANALYZE');
    ops = await startOpsServer({
      host: '127.0.0.1',
      port: 0,
      store: db.store,
      metrics: createMetrics({ processMetrics: false }),
      logger: silentLogger,
      clock: systemClock,
      health: () => ({}),
    });
  }, 300_000);

  afterAll(async () => {
    await ops?.close();
    await sql?.end();
    await db?.drop();
  });

  it('/healthz reads one row of sync_runs per stream and run it names, by primary key, however long the history', async () => {
    const [count] = await sql.unsafe<{ n: string }[]>('SELECT count(*) AS n FROM sync_runs');
    expect(Number(count!.n)).toBe(RUNS);
    const answer = await get(`${ops.url}/healthz`);
    expect((answer.json as { streams: unknown[] }).streams).toHaveLength(CUSTOMERS * 2);
    // What makes it fast, on the plan Postgres runs: sync_runs is only ever entered through its primary key, for the
    // last run and the last success of each stream; nothing scans it or reads rows beyond those.
    const [{ 'QUERY PLAN': [root] }] = (await sql.unsafe('EXPLAIN (ANALYZE, FORMAT JSON) SELECT * FROM sync_health')) as unknown as [{ 'QUERY PLAN': [{ Plan: PlanNode }] }];
    const runs = nodes(root!.Plan).filter((n) => n['Relation Name'] === 'sync_runs');
    expect(runs.length).toBeGreaterThan(0);
    for (const node of runs) {
      expect(node['Node Type'], JSON.stringify(node).slice(0, 300)).toMatch(/^Index (Only )?Scan$/);
      expect(node['Index Name']).toBe('sync_runs_pkey');
    }
    const read = runs.reduce((sum, n) => sum + n['Actual Rows'] * n['Actual Loops'], 0);
    expect(read).toBeLessThanOrEqual(2 * CUSTOMERS * 2);
  });

  it('a health query the caller stops waiting for is cancelled on the server', async () => {
    // Another session holds sync_last_runs exclusively: the health query waits on it.
    const blocker = await sql.reserve();
    try {
      await blocker.unsafe('BEGIN');
      await blocker.unsafe('LOCK TABLE sync_last_runs IN ACCESS EXCLUSIVE MODE');
      await expect(readSyncHealth(db.store, 300)).rejects.toThrow(/did not answer within 300 ms; the query was cancelled/);
      const waiting = await sql.unsafe<{ n: string }[]>(
        "SELECT count(*) AS n FROM pg_stat_activity WHERE query LIKE 'SELECT * FROM sync_health%' AND state = 'active'",
      );
      expect(Number(waiting[0]!.n)).toBe(0);
    } finally {
      await blocker.unsafe('ROLLBACK');
      blocker.release();
    }
  });
});

interface SqlitePlanRow {
  id: number;
  parent: number;
  detail: string;
}

describe('health with 1.15 million runs on SQLite', () => {
  let db: TestDatabase & { store: Store };
  let ops: OpsServer;

  beforeAll(async () => {
    db = await migratedStore('sqlite', 'health_scale');
    // The same history as on Postgres: two days of runs, oldest first, cycling through every customer and stream.
    const at = (secondsAgo: string) => `strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || (${secondsAgo}) || ' seconds')`;
    await db.store.query(`
      WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ${RUNS})
      INSERT INTO sync_runs (customer_id, stream, mode, started_at, finished_at, status, pages, records)
      SELECT 'customer-' || substr('0000' || (n % ${CUSTOMERS}), -4),
             CASE WHEN (n / ${CUSTOMERS}) % 2 = 0 THEN 'occupancy' ELSE 'buildings' END,
             'incremental',
             ${at(`(${RUNS} - n) * 0.15`)},
             ${at(`(${RUNS} - n) * 0.15 - 1`)},
             CASE WHEN n % 97 = 0 THEN 'failed' ELSE 'succeeded' END, 1, 12
        FROM g`);
    await db.store.query(`
      INSERT INTO sync_last_runs (customer_id, stream, last_run_id, last_success_run_id)
      SELECT customer_id, stream, max(id), max(CASE WHEN status = 'succeeded' THEN id END) FROM sync_runs GROUP BY customer_id, stream`);
    await db.store.query(`
      INSERT INTO sync_state (customer_id, stream, watermark, updated_at)
      SELECT customer_id, stream, ${at('300')}, ${at('0')} FROM sync_last_runs`);
    await db.store.query('ANALYZE');
    ops = await startOpsServer({
      host: '127.0.0.1',
      port: 0,
      store: db.store,
      metrics: createMetrics({ processMetrics: false }),
      logger: silentLogger,
      clock: systemClock,
      health: () => ({}),
    });
  }, 300_000);

  afterAll(async () => {
    await ops?.close();
    await db?.drop();
  });

  it('/healthz reads sync_runs only by primary key, once per run it names; nothing but the one-row-per-stream tables is scanned', async () => {
    const [count] = await db.store.query<{ n: number }>('SELECT count(*) AS n FROM sync_runs');
    expect(Number(count!.n)).toBe(RUNS);
    const answer = await get(`${ops.url}/healthz`);
    expect((answer.json as { streams: unknown[] }).streams).toHaveLength(CUSTOMERS * 2);
    // SQLite's plan has no row counts; what bounds the rows read is its shape. The names sync_runs goes by in the
    // view come from the view's own text, so a join added to it is checked too.
    const [view] = await db.store.query<{ sql: string }>("SELECT sql FROM sqlite_master WHERE type = 'view' AND name = 'sync_health'");
    const aliases = [...view!.sql.matchAll(/\bsync_runs\s+(?:AS\s+)?(\w+)/gi)].map((m) => m[1]!);
    expect(aliases.length).toBeGreaterThan(0);
    const plan = (await db.store.query<SqlitePlanRow>('EXPLAIN QUERY PLAN SELECT * FROM sync_health')).map((row) => row.detail);
    const shown = plan.join('\n');
    // Each entry into sync_runs is an equality search on its integer primary key: one row per search, at most.
    for (const alias of aliases) {
      const entries = plan.filter((line) => new RegExp(`^(SCAN|SEARCH) ${alias}\\b`).test(line));
      expect(entries, shown).toHaveLength(1);
      expect(entries[0], shown).toMatch(new RegExp(`^SEARCH ${alias} USING INTEGER PRIMARY KEY \\(rowid=\\?\\)`));
    }
    expect(plan.filter((line) => /\bsync_runs\b/.test(line)), shown).toEqual([]);
    // The only scans: the tables holding one row per stream (the view's keys) and the keys themselves; every other
    // table is searched by an index equality, once per key.
    const scanned = plan.filter((line) => line.startsWith('SCAN ')).map((line) => line.split(' ')[1]);
    expect(new Set(scanned), shown).toEqual(new Set(['sync_state', 'sync_last_runs', 'k']));
    for (const line of plan.filter((l) => l.startsWith('SEARCH ') && !aliases.some((a) => l.startsWith(`SEARCH ${a} `)))) {
      expect(line, shown).toMatch(/^SEARCH \w+ USING (COVERING )?INDEX \w+ \((\w+=\? AND )*\w+=\?\)/);
    }
  });
});

describe.each(['sqlite', 'postgres'] as const)('run-history retention (%s)', (dialect) => {
  it('deletes finished runs older than the retention in batches, never the latest run or success of a stream', async () => {
    const db = await migratedStore(dialect, 'retention');
    try {
      const { store } = db;
      const day = 86_400_000;
      const t0 = Date.parse('2026-01-01T00:00:00.000Z');
      const iso = (ms: number) => new Date(ms).toISOString();
      // 60 days of daily runs of one stream (the last one failed), an old run of another stream, one still running.
      let lastSuccess = 0;
      for (let d = 0; d < 60; d++) {
        const id = await store.startRun({ customerId: 'c1', stateKey: 'occupancy', mode: 'incremental', startedAt: iso(t0 + d * day) });
        const status = d === 59 ? 'failed' : 'succeeded';
        if (status === 'succeeded') lastSuccess = id;
        await store.finishRun(id, { status, finishedAt: iso(t0 + d * day + 1000) });
      }
      const lone = await store.startRun({ customerId: 'c2', stateKey: 'buildings', mode: 'full', startedAt: iso(t0) });
      await store.finishRun(lone, { status: 'succeeded', finishedAt: iso(t0 + 1000) });
      const running = await store.startRun({ customerId: 'c3', stateKey: 'occupancy', mode: 'incremental', startedAt: iso(t0) });

      const clock = new FakeClock(t0 + 60 * day);
      expect(await store.pruneRuns(iso(t0 + 30 * day), 7)).toBe(7);
      const retention = startRetention({ store, retentionMs: 28 * day, clock, logger: silentLogger, everyMs: 3_600_000 });
      const deleted = await retention.prune();
      await retention.stop();
      const rows = await store.query<{ id: number; customer_id: string }>('SELECT id, customer_id FROM sync_runs ORDER BY id');
      const ids = rows.map((r) => Number(r.id));
      // Runs that finished before day 32 are gone, except the lone stream's only run and the running one.
      expect(ids).toContain(lone);
      expect(ids).toContain(running);
      expect(ids).toContain(lastSuccess);
      expect(rows.filter((r) => r.customer_id === 'c1')).toHaveLength(28);
      expect(deleted + 7).toBe(60 - 28);
      const [last] = await store.lastRuns('c1');
      expect(last).toMatchObject({ status: 'failed' });
      // Off keeps everything.
      const off = startRetention({ store, retentionMs: 0, clock, logger: silentLogger });
      expect(await off.prune()).toBe(0);
      await off.stop();
    } finally {
      await db.drop();
    }
  });
});
