import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { updatePlannerStatisticsAfterRun } from '../../src/app/planner-statistics.ts';
import { serveWebhooks } from '../../src/app/webhook-serve.ts';
import { resolveConfig, type Config } from '../../src/config.ts';
import { memoryLogger, type Logger } from '../../src/logger.ts';
import { serve } from '../../src/serve/index.ts';
import { DELETE_REFRESHED } from '../../src/store/aggregate-invalidations.ts';
import { openStore, type OccupancyRecord, type Store } from '../../src/store/index.ts';
import { signatureHeader } from '../../src/webhooks/signature.ts';
import { CUSTOMER_A, SECRET_A, delivery, send } from '../webhooks/helpers.ts';
import { waitFor, within } from '../support/wait.ts';
import { execRaw } from '../support/legacy-database.ts';
import { checkpoint, fresh, trackedDatabase } from './harness.ts';

/**
 * The planner's statistics after a run (src/store/planner-statistics.ts): on Postgres, a table changed since its last
 * analysis by more than autovacuum's threshold (50 rows + 10 % of its rows) is analyzed, and so is the partitioned
 * occupancy_readings once its partitions' rows differ from what its last analysis counted by that much (autovacuum
 * never analyzes a partitioned table's parent); a table changed less is left. SQLite is left as it is.
 *
 * A session reports the rows it changed to the server's statistics when it goes idle or ends, up to seconds later:
 * each test writes with a store of its own, closes it (its sessions end and report) and waits until the counts show,
 * before it asks for the analysis with another store.
 */

const C = 'cust-stats';
const HOUR = 3_600_000;

/** `count` hourly readings of each of 4 floor spaces from `start`, committed in pages of 500. */
async function load(store: Store, start: string, count: number): Promise<number> {
  const records: OccupancyRecord[] = [];
  for (let i = 0; i < count; i++) {
    for (let s = 0; s < 4; s++) {
      records.push({ floorSpaceId: `fs-${s}`, observedAt: new Date(Date.parse(start) + i * HOUR + s * 1000).toISOString(), occupancyStatus: (i + s) % 3 ? 'CurrentlyOccupied' : 'CurrentlyUnoccupied', headcount: s, eventId: null });
    }
  }
  for (let i = 0; i < records.length; i += 500) {
    await store.commitPage({ customerId: C, sink: 'occupancy', at: '2026-06-01T00:00:00.000Z', checkpoint: checkpoint(C, null), records: records.slice(i, i + 500) });
  }
  await store.refreshAggregates(C);
  return records.length;
}

/** Rows the server's statistics say were inserted, updated or deleted in `table` since its last analysis. */
async function modified(store: Store, table: string): Promise<number> {
  const [row] = await store.query<{ n: number }>('SELECT n_mod_since_analyze AS n FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = $1', [table]);
  return Number(row?.n ?? 0);
}

/**
 * Loads with a store of its own, closed after, and waits until each table of `changes` shows at least that many rows
 * changed: every table the test's assertions depend on (the writer's sessions each report as they end).
 */
async function loadAndReport(open: () => Promise<Store>, reader: Store, start: string, count: number, changes: Record<string, number>): Promise<void> {
  const writer = await open();
  await load(writer, start, count);
  await writer.close();
  for (const [table, rows] of Object.entries(changes)) {
    await waitFor(async () => (await modified(reader, table)) >= rows, `the statistics to count ${rows} rows changed in ${table}`);
  }
}

const analyzedAt = async (store: Store, table: string) =>
  (await store.query<{ at: string | null }>('SELECT last_analyze AS at FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = $1', [table]))[0]?.at ?? null;
const plannedRows = async (store: Store, table: string) =>
  Number((await store.query<{ n: number }>('SELECT reltuples AS n FROM pg_class WHERE oid = to_regclass($1)', [table]))[0]?.n);

describe('planner statistics on postgres', () => {
  it('analyzes the tables a load changed past the threshold and the partitioned parent; a second pass finds nothing', async () => {
    const { store, another } = await fresh('postgres', 'planner_stats');
    // January to the middle of March: 1,770 hours x 4 floor spaces.
    // Every table this load changes by more than 50 rows, so that the second pass below has nothing left to count.
    await loadAndReport(another, store, '2026-01-01T00:00:00.000Z', 1770, {
      occupancy_readings_2026_01: 744 * 4,
      occupancy_readings_2026_02: 672 * 4,
      occupancy_readings_2026_03: 354 * 4,
      occupancy_buckets: 1770 * 4,
      occupancy_days: 73 * 4,
      occupancy_floor_hours: 1770,
      calendar_days: 73,
    });
    expect(await plannedRows(store, 'occupancy_readings')).toBeLessThanOrEqual(0);

    const analyzed = await store.updatePlannerStatistics();
    expect(analyzed).toEqual(expect.arrayContaining(['occupancy_readings', 'occupancy_buckets', 'occupancy_days']));
    // Its partitions are analyzed by the parent's ANALYZE, not named a second time.
    expect(analyzed.filter((t) => t.startsWith('occupancy_readings_'))).toEqual([]);
    expect(await analyzedAt(store, 'occupancy_readings_2026_01')).not.toBeNull();
    expect(await analyzedAt(store, 'occupancy_readings_2026_03')).not.toBeNull();
    // 4 floor spaces: below the threshold of 50 rows.
    expect(analyzed).not.toContain('floor_spaces');
    // A table this small is read whole by ANALYZE: the parent's estimate is every row of its partitions.
    expect(await plannedRows(store, 'occupancy_readings')).toBe(1770 * 4);
    expect(await analyzedAt(store, 'occupancy_buckets')).not.toBeNull();
    expect(await analyzedAt(store, 'floor_spaces')).toBeNull();

    expect(await store.updatePlannerStatistics()).toEqual([]);
  });

  it('leaves a table changed by less than the threshold, analyzes it once the changes pass it', async () => {
    const { store, another } = await fresh('postgres', 'planner_stats_threshold');
    await loadAndReport(another, store, '2026-01-01T00:00:00.000Z', 600, { occupancy_readings_2026_01: 600 * 4 });
    await store.updatePlannerStatistics();
    const first = await analyzedAt(store, 'occupancy_readings_2026_01');
    expect(first).not.toBeNull();

    // 10 hours x 4 spaces more in January: 40 rows changed, under 50 + 10 % of 2,400.
    await loadAndReport(another, store, '2026-01-26T00:00:00.000Z', 10, { occupancy_readings_2026_01: 40 });
    const small = await store.updatePlannerStatistics();
    expect(small).not.toContain('occupancy_readings_2026_01');
    expect(small).not.toContain('occupancy_readings');
    expect(await analyzedAt(store, 'occupancy_readings_2026_01')).toBe(first);

    // 100 more hours: 440 rows changed in all, past 290; the parent's partitions now hold 2,840 rows, not 2,400.
    await loadAndReport(another, store, '2026-01-26T10:00:00.000Z', 100, { occupancy_readings_2026_01: 440 });
    const large = await store.updatePlannerStatistics();
    expect(large).toContain('occupancy_readings');
    expect(await analyzedAt(store, 'occupancy_readings_2026_01')).not.toBe(first);
    expect(await plannedRows(store, 'occupancy_readings')).toBe(2840);
  });

  it('after a run, a failure to analyze is one warning and the run goes on; what it analyzed is one debug line', async () => {
    const { store, another } = await fresh('postgres', 'planner_stats_after_run');
    await loadAndReport(another, store, '2026-01-01T00:00:00.000Z', 100, { occupancy_readings_2026_01: 400 });
    const { logger, records } = memoryLogger({ level: 'debug' });
    await updatePlannerStatisticsAfterRun(store, logger);
    const debug = records().find((r) => r.level === 20);
    expect(debug?.msg).toMatch(/^analyzed \d+ table\(s\) the run changed much, for the query planner: .*\boccupancy_readings\b/);

    const closed = await another();
    await closed.close();
    await updatePlannerStatisticsAfterRun(closed, logger);
    const warnings = records().filter((r) => r.level === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toMatch(/^the query planner's statistics were not brought up to date after the run \(the next run or autovacuum does it\): /);
  });
});

describe('planner statistics of a database only a receiver writes to', () => {
  /**
   * A receiver started by `start` (given the signal that stops it and the callback it reports its URL to), once it
   * listens: its URL and its stop. A start that ends or fails first is stopped and reported.
   */
  async function receiving(name: string, start: (signal: AbortSignal, listening: (url: string | undefined) => void) => Promise<void>): Promise<{ url: string; stop(): Promise<void> }> {
    const controller = new AbortController();
    let listening!: (url: string | undefined) => void;
    const started = new Promise<string | undefined>((resolve) => (listening = resolve));
    const serving = start(controller.signal, listening);
    const stop = async () => {
      controller.abort();
      await serving;
    };
    try {
      const url = await within(Promise.race([started, serving.then(() => Promise.reject(new Error(`${name} returned before listening`)))]), 'the receiver to listen');
      if (!url) throw new Error(`${name} started no receiver`);
      return { url, stop };
    } catch (error) {
      await stop();
      throw error;
    }
  }

  /** Each receiver of the product, on `store`, the step a moment after a stored delivery. */
  const receivers: Record<string, (config: Config, logger: Logger, store: Store) => Promise<{ url: string; stop(): Promise<void> }>> = {
    'webhook serve': (config, logger, store) =>
      receiving('webhook serve', (signal, listening) => serveWebhooks({ config, logger, signal, store, statisticsAfterMs: 0, onListening: (r) => listening(r.url) })),
    // A receiver-only instance of the daemon: no pass ever ends with the step.
    'serve --no-schedule': (config, logger, store) =>
      receiving('serve', (signal, listening) => serve({ config, logger, signal, store, schedule: false, statisticsAfterMs: 0, onReady: (info) => listening(info.webhookUrl) })),
  };

  it.each(Object.keys(receivers))('%s brings them up to date after the deliveries it stores, as a run does at its end', async (name) => {
    const { store, another, database } = await fresh('postgres', `planner_stats_receiver_${name.replace(/\W+/g, '_')}`);
    // Rows the server counts as changed and nothing analyzed: what deliveries leave, with no run to end with the step.
    await loadAndReport(another, store, '2026-01-01T00:00:00.000Z', 100, { occupancy_readings_2026_01: 400 });
    expect(await analyzedAt(store, 'occupancy_readings_2026_01')).toBeNull();

    const { logger, records } = memoryLogger({ level: 'debug' });
    const config = resolveConfig({ DATABASE_URL: database.url, CUSTOMER_ID: CUSTOMER_A, WEBHOOK_SECRET: SECRET_A, WEBHOOK_HOST: '127.0.0.1', WEBHOOK_PORT: '0', SERVE_HOST: '127.0.0.1', SERVE_PORT: '0' });
    const receiver = await receivers[name]!(config, logger, store);
    try {
      const analyzedLine = () => records().find((r) => r.level === 20 && /^analyzed \d+ table\(s\)/.test(String(r.msg)));
      expect(analyzedLine()).toBeUndefined();
      const now = new Date().toISOString();
      const body = JSON.stringify(delivery({ Created: now, Sent: now }));
      const answer = await send(receiver.url, { headers: { 'Content-Type': 'application/json', 'X-Service-Signature': signatureHeader(SECRET_A, body, Math.floor(Date.now() / 1000)) }, body });
      expect(answer.status).toBe(200);
      await waitFor(() => analyzedLine() !== undefined, 'the planner-statistics step after the stored delivery');
      expect(String(analyzedLine()!.msg)).toMatch(/^analyzed \d+ table\(s\) the deliveries changed much, for the query planner: .*\boccupancy_readings\b/);
      expect(await analyzedAt(store, 'occupancy_readings_2026_01')).not.toBeNull();
    } finally {
      await receiver.stop();
    }
  });
});

describe('the queue of stale ranges on postgres, analyzed while empty', () => {
  /** Every node of an EXPLAIN (FORMAT JSON) plan that reads `relation`: its type and its index condition, if any. */
  const reads = (node: Record<string, unknown>, relation: string): string[] => [
    ...(node['Relation Name'] === relation ? [`${String(node['Node Type'])}${node['Index Cond'] ? ` by ${String(node['Index Cond'])}` : ''}`] : []),
    ...((node.Plans as Array<Record<string, unknown>> | undefined) ?? []).flatMap((child) => reads(child, relation)),
  ];

  it('is not analyzed after a run, and the refresh deletes its rows by key even when statistics say it is empty', async () => {
    const db = await trackedDatabase('postgres', 'planner_stats_queue');
    const store = await openStore(db.database, {});
    try {
      await store.migrate();
      const fill = (n: number) =>
        `INSERT INTO aggregate_invalidations (floor_space_key, customer_id, first_ms, last_ms, revision, invalidated_at)
         SELECT g, '${C}', 0, 3600000, 1, now() FROM generate_series(1, ${n}) AS g`;
      // A backfill's refreshes: the queue filled and emptied; at the run's end it holds nothing.
      await execRaw(db, [fill(20_000), 'DELETE FROM aggregate_invalidations',
        `INSERT INTO aggregate_page_invalidations (customer_id, spans, invalidated_at) SELECT '${C}', '[]', now() FROM generate_series(1, 100)`,
        'DELETE FROM aggregate_page_invalidations']);
      await waitFor(async () => (await modified(store, 'aggregate_invalidations')) >= 40_000, 'the statistics to count the queue\'s 40,000 changes');
      const analyzed = await store.updatePlannerStatistics();
      expect(analyzed).not.toContain('aggregate_invalidations');
      expect(analyzed).not.toContain('aggregate_page_invalidations');
      expect(await analyzedAt(store, 'aggregate_invalidations')).toBeNull();

      // Autovacuum may analyze it at that moment all the same: its statistics then say empty over pages of dead rows.
      await execRaw(db, ['ANALYZE aggregate_invalidations', fill(20_000)]);
      const [stats] = await store.query<{ tuples: number; pages: number }>("SELECT reltuples AS tuples, relpages AS pages FROM pg_class WHERE oid = to_regclass('aggregate_invalidations')");
      expect(Number(stats!.tuples)).toBe(0);
      expect(Number(stats!.pages)).toBeGreaterThan(50);
      // Planned for the list asked (a custom plan) and for any list (the generic plan a prepared statement turns to).
      const list = (value: (i: number) => number) => `'{${Array.from({ length: 5_000 }, (_, i) => value(i)).join(',')}}'`;
      for (const mode of ['force_custom_plan', 'force_generic_plan']) {
        const sql = postgres(db.url.replace(/[?&]schema=[^&]+/, ''), { max: 1, onnotice: () => {}, connection: { search_path: `"${db.schema}"`, plan_cache_mode: mode } });
        try {
          await sql.unsafe(`PREPARE refreshed(int4[], int8[], int8[]) AS ${DELETE_REFRESHED.postgres.text}`);
          const [plan] = await sql.unsafe<Array<{ 'QUERY PLAN': Array<{ Plan: Record<string, unknown> }> }>>(
            `EXPLAIN (FORMAT JSON) EXECUTE refreshed(${list((i) => i + 1)}, ${list(() => 0)}, ${list(() => 1)})`,
          );
          // Each read of the queue finds rows by key (the primary key's lookup, then the rows by ctid): none reads it
          // whole, which the statistics' estimate of one row would make a scan per row of the list.
          const found = reads(plan!['QUERY PLAN'][0]!.Plan, 'aggregate_invalidations');
          expect(found.filter((r) => !/^(ModifyTable|Tid Scan)$/.test(r) && !/^Index Scan by \(\(floor_space_key = u\.k\) AND \(first_ms = u\.f\)\)$/.test(r)), `${mode}: ${found.join('; ')}`).toEqual([]);
          expect(found, mode).toContain('Tid Scan');
        } finally {
          await sql.end();
        }
      }
    } finally {
      await store.close();
    }
  });
});

describe('planner statistics on sqlite', () => {
  it('are left as they are: nothing analyzed, no sqlite_stat1', async () => {
    const { store } = await fresh('sqlite', 'planner_stats');
    await load(store, '2026-01-01T00:00:00.000Z', 100);
    expect(await store.updatePlannerStatistics()).toEqual([]);
    expect(await store.query("SELECT name FROM sqlite_schema WHERE name = 'sqlite_stat1'")).toEqual([]);
  });
});
