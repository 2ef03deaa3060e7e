import { execFileSync } from 'node:child_process';
import postgres from 'postgres';
import type { Dialect } from '../test/support/databases.ts';
import { resolveConfig } from '../src/config.ts';
import { openStore } from '../src/store/index.ts';
import type { Store } from '../src/store/types.ts';
import { median } from './stats.ts';

/**
 * The report queries the portfolio benchmark times, each cold and warm: a building-month (one building's floor
 * spaces over 30 local days), a floor-week (one floor's over 7) and the whole portfolio over the period stored (per
 * building), all working hours only, read from the aggregates (occupancy_buckets, calendar_days) through the store's
 * query (what `report` runs through), never from the readings.
 *
 * Cold: a fresh store (a new connection: SQLite's page cache is per connection); on Postgres the server is first
 * restarted when no other client is connected, which drops its shared buffers. The operating system's page cache is
 * never dropped (24 GiB of RAM hold the whole database), so "cold" is a cold Postgres or SQLite over a warm disk
 * cache. Warm: the same query again on the same connection, the median of `warmRuns`.
 */

export type ReportName = 'building-month' | 'floor-week' | 'portfolio';

export interface ReportAsk {
  name: ReportName;
  /** What is asked, for the table: `building B, 2026-06-04 to 2026-07-04`. */
  label: string;
  text: string;
  params: unknown[];
}

export interface ReportTiming {
  name: ReportName;
  label: string;
  rows: number;
  coldMs: number;
  /** How the cold run was made cold: 'restart' (Postgres restarted), 'connection' (a fresh connection only). */
  cold: 'restart' | 'connection';
  warmMs: number;
  warmSamples: number[];
}

/** Per floor space of a building (or of one floor of it): the time-weighted sums of the working buckets of local dates [from, to). */
const SPACES = (floor: boolean) => `
  WITH days AS (
    SELECT MIN(start_ms) AS lo, MAX(end_ms) AS hi, SUM(working_ms) AS working_ms
      FROM calendar_days WHERE customer_id = $1 AND building_id = $2 AND local_date >= $3 AND local_date < $4)
  SELECT f.floor_id, f.floor_space_id, f.name, f.capacity, MAX(d.working_ms) AS working_ms,
         SUM(b.known_ms) AS known_ms, SUM(b.occupied_ms) AS occupied_ms, SUM(b.headcount_ms) AS headcount_ms,
         SUM(b.headcount_known_ms) AS headcount_known_ms, MAX(b.peak_headcount) AS peak_headcount, SUM(b.readings) AS readings
    FROM days d
    JOIN floor_spaces f ON f.customer_id = $1 AND COALESCE(f.building_id, '') = $2${floor ? ' AND f.floor_id = $5' : ''}
    JOIN occupancy_buckets b ON b.floor_space_key = f.floor_space_key AND b.start_ms >= d.lo AND b.start_ms < d.hi
   WHERE b.working = true
   GROUP BY f.floor_id, f.floor_space_id, f.name, f.capacity
   ORDER BY f.floor_id, f.floor_space_id`;

/** Per building over local dates [from, to) (each building's own dates), working hours. */
const PORTFOLIO = `
  SELECT COALESCE(f.building_id, '') AS building_id, COUNT(DISTINCT f.floor_space_key) AS spaces,
         SUM(b.known_ms) AS known_ms, SUM(b.occupied_ms) AS occupied_ms, SUM(b.headcount_ms) AS headcount_ms,
         SUM(b.headcount_known_ms) AS headcount_known_ms, MAX(b.peak_headcount) AS peak_headcount, SUM(b.readings) AS readings
    FROM occupancy_buckets b JOIN floor_spaces f ON f.floor_space_key = b.floor_space_key
   WHERE f.customer_id = $1 AND b.local_date >= $2 AND b.local_date < $3 AND b.working = true
   GROUP BY COALESCE(f.building_id, '')
   ORDER BY 1`;

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const DAY_MS = 86_400_000;

/**
 * The three asks over a portfolio whose data covers local dates [start, end): the last 30 days of its first building,
 * the last 7 of that building's first floor, and everything.
 */
export async function reportAsks(store: Store, customerId: string, startMs: number, endMs: number): Promise<ReportAsk[]> {
  const [building] = await store.query<{ building_id: string; floor_id: string | null }>(
    `SELECT COALESCE(building_id, '') AS building_id, MIN(floor_id) AS floor_id FROM floor_spaces WHERE customer_id = $1
      GROUP BY COALESCE(building_id, '') ORDER BY COALESCE(building_id, '') = '', 1 LIMIT 1`,
    [customerId],
  );
  if (!building) throw new Error('the portfolio holds no floor space: the load stored nothing');
  // Where no listing named the spaces' buildings, every space is of the building '' (no known building): the
  // building-month is then the whole portfolio's month, and the label says so.
  const b = building.building_id;
  const to = day(endMs);
  const month = day(endMs - 30 * DAY_MS);
  const week = day(endMs - 7 * DAY_MS);
  const asks: ReportAsk[] = [
    { name: 'building-month', label: `${b === '' ? 'every space (no building listed)' : `building ${b.slice(0, 8)}`}, ${month} to ${to} (30 days)`, text: SPACES(false), params: [customerId, b, month, to] },
  ];
  if (building.floor_id !== null) {
    asks.push({ name: 'floor-week', label: `floor ${building.floor_id.slice(0, 8)}, ${week} to ${to} (7 days)`, text: SPACES(true), params: [customerId, b, week, to, building.floor_id] });
  }
  const days = Math.round((endMs - startMs) / DAY_MS);
  asks.push({ name: 'portfolio', label: `every building, ${day(startMs)} to ${to} (${days} days)`, text: PORTFOLIO, params: [customerId, day(startMs), to] });
  return asks;
}

export function openReader(databaseUrl: string): Promise<Store> {
  return openStore(resolveConfig({ DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' }).database, { readonly: true });
}

/** `pg_ctlcluster ... restart` when this process is Postgres's only client; false when others are connected. */
async function restartPostgresWhenIdle(databaseUrl: string, waitMs: number, log: (line: string) => void): Promise<boolean> {
  const base = databaseUrl.replace(/[?&]schema=[^&]*/, '');
  const deadline = Date.now() + waitMs;
  for (;;) {
    const sql = postgres(base, { max: 1, onnotice: () => {} });
    let others: number;
    try {
      const [row] = await sql<{ n: string }[]>`
        SELECT count(*) AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`;
      others = Number(row!.n);
    } finally {
      await sql.end({ timeout: 5 });
    }
    if (others === 0) break;
    if (Date.now() > deadline) {
      log(`  Postgres still has ${others} other client(s) after ${waitMs / 1000} s: not restarted (cold = a fresh connection only)`);
      return false;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  const version = execFileSync('ls', ['/etc/postgresql'], { encoding: 'utf8' }).trim().split('\n')[0]!;
  execFileSync('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'restart'], { stdio: 'ignore' });
  return true;
}

export interface TimingOptions {
  dialect: Dialect;
  warmRuns: number;
  /** Restart Postgres for each cold run (when idle: restartPostgresWhenIdle). */
  restart: boolean;
  restartWaitMs: number;
  log(line: string): void;
}

async function timed(store: Store, ask: ReportAsk): Promise<{ ms: number; rows: number }> {
  const started = performance.now();
  const rows = await store.query(ask.text, ask.params);
  return { ms: performance.now() - started, rows: rows.length };
}

/** Each ask cold (first, on a fresh connection, after a restart when allowed) then warm. */
export async function timeReports(databaseUrl: string, asks: readonly ReportAsk[], options: TimingOptions): Promise<ReportTiming[]> {
  const out: ReportTiming[] = [];
  for (const ask of asks) {
    const restarted = options.dialect === 'postgres' && options.restart ? await restartPostgresWhenIdle(databaseUrl, options.restartWaitMs, options.log) : false;
    const store = await openReader(databaseUrl);
    try {
      const cold = await timed(store, ask);
      const warm: number[] = [];
      for (let i = 0; i < options.warmRuns; i++) warm.push((await timed(store, ask)).ms);
      const timing: ReportTiming = { name: ask.name, label: ask.label, rows: cold.rows, coldMs: cold.ms, cold: restarted ? 'restart' : 'connection', warmMs: median(warm), warmSamples: warm };
      options.log(`  ${ask.name}: ${ask.label}: ${cold.rows} rows, cold ${cold.ms.toFixed(0)} ms (${timing.cold}), warm ${timing.warmMs.toFixed(0)} ms (median of ${warm.length})`);
      out.push(timing);
    } finally {
      await store.close();
    }
  }
  return out;
}

/** EXPLAIN (ANALYZE, BUFFERS) of an ask on Postgres, or EXPLAIN QUERY PLAN on SQLite: where the time goes. */
export async function explain(databaseUrl: string, dialect: Dialect, ask: ReportAsk): Promise<string> {
  const store = await openReader(databaseUrl);
  try {
    const prefix = dialect === 'postgres' ? 'EXPLAIN (ANALYZE, BUFFERS) ' : 'EXPLAIN QUERY PLAN ';
    const rows = await store.query<Record<string, unknown>>(`${prefix}${ask.text}`, ask.params);
    return rows.map((r) => String(r['QUERY PLAN'] ?? r.detail ?? JSON.stringify(r))).join('\n');
  } finally {
    await store.close();
  }
}
