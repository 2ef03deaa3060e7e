import { execFileSync } from 'node:child_process';
import postgres from 'postgres';
import type { Dialect } from '../test/support/databases.ts';
import { resolveConfig } from '../src/config.ts';
import { openStore } from '../src/store/index.ts';
import type { Store } from '../src/store/types.ts';
import { systemClock } from '../src/clock.ts';
import { loadReport } from '../src/report/query.ts';
import { reportFigureRows, reportProfileRows, type ReportFilter } from '../src/store/report-queries.ts';
import { median } from './stats.ts';

/**
 * The report queries the portfolio benchmark times, each cold and warm: a building-month (one building, its floors
 * and its floor spaces over 30 local days, and their weekday x hour profiles), a floor-week (one floor and its spaces
 * over 7) and the whole portfolio over the period stored (what `occupancy-sync report --from --to` reads: every
 * level and profile), all in working hours, through the store's query (the report's path). They read the reporting
 * views over the aggregates (space_days ... portfolio_days, building_hours, floor_hours) with the report's
 * statements; a database without those views is read from occupancy_buckets directly, and the rows say which.
 *
 * Cold: a fresh store (a new connection: SQLite's page cache is per connection); on Postgres the server is first
 * restarted when no other client is connected, which drops its shared buffers. The operating system's page cache is
 * never dropped (24 GiB of RAM hold the whole database), so "cold" is a cold Postgres or SQLite over a warm disk
 * cache. Warm: the same statements again on the same connection, the median of `warmRuns`.
 */

export type ReportName = 'building-month' | 'floor-week' | 'portfolio';

export interface Statement {
  text: string;
  params: unknown[];
}

export interface ReportAsk {
  name: ReportName;
  /** What is asked, for the table: `building B, 2026-06-04 to 2026-07-04`. */
  label: string;
  /** Sent at once, as the report sends its statements; the ask's time is until the last answers. */
  statements: Statement[];
  /** What they read: the reporting views (as `report` does) or the aggregates' tables directly. */
  source: 'views' | 'buckets';
}

export interface ReportTiming {
  name: ReportName;
  label: string;
  source: ReportAsk['source'];
  statements: number;
  rows: number;
  coldMs: number;
  /** How the cold run was made cold: 'restart' (Postgres restarted), 'connection' (a fresh connection only). */
  cold: 'restart' | 'connection';
  warmMs: number;
  warmSamples: number[];
  /** Each statement's time in the last warm run (or the cold one): where the ask's time goes. */
  statementMs: number[];
  /** The ask was cancelled after `timeoutMs` (Postgres): its times are that bound, a lower bound of the truth. */
  timedOut: boolean;
}

/** The statements a read of the store sends, captured instead of run. */
async function captured(read: (store: Store) => Promise<unknown>): Promise<Statement[]> {
  const sent: Statement[] = [];
  const capture = { query: async (text: string, params: unknown[] = []) => (sent.push({ text, params }), []) } as unknown as Store;
  await read(capture);
  return sent;
}

/**
 * The report's own statements (src/store/report-queries.ts: figures per level summed over the local dates from the
 * day views, and the weekday x hour profiles, working hours), for one building or floor: `report` itself reads a
 * whole customer, which is the portfolio ask.
 */
function viewStatements(name: ReportName, range: unknown[], building: string, floor: string | null): Promise<Statement[]> {
  const [fromDate, toDate, customerId] = range as [string, string, string];
  const filter: ReportFilter = { fromDate, toDate, customerId, buildingId: building, scope: 'working' };
  if (name === 'building-month') {
    return captured(async (s) => {
      for (const level of ['building', 'floor', 'space'] as const) await reportFigureRows(s, level, filter);
      for (const level of ['building', 'floor'] as const) await reportProfileRows(s, level, filter);
    });
  }
  const onFloor = { ...filter, floorId: floor! };
  return captured(async (s) => {
    for (const level of ['floor', 'space'] as const) await reportFigureRows(s, level, onFloor);
    await reportProfileRows(s, 'floor', onFloor);
  });
}

/** The statements `occupancy-sync report --from --to` sends (loadReport, working hours), as it sends them. */
function reportStatements(customerId: string, from: string, to: string): Promise<Statement[]> {
  return captured((s) => loadReport(s, { from, to, customerId, scope: 'working' }, systemClock));
}

/**
 * Before the views existed: per floor space of a building (or of one of its floors), the working buckets' sums over
 * local dates [from, to), read from occupancy_buckets directly; for the portfolio, per building.
 */
async function bucketStatements(name: ReportName, range: unknown[], building: string, floor: string | null): Promise<Statement[]> {
  if (name === 'portfolio') {
    return [{
      text: `SELECT COALESCE(f.building_id, '') AS building_id, COUNT(DISTINCT f.floor_space_key) AS spaces, SUM(b.known_ms) AS known_ms,
                    SUM(b.occupied_ms) AS occupied_ms, SUM(b.headcount_ms) AS headcount_ms, MAX(b.peak_headcount) AS peak_headcount
               FROM occupancy_buckets b JOIN floor_spaces f ON f.floor_space_key = b.floor_space_key
              WHERE b.local_date >= $1 AND b.local_date < $2 AND f.customer_id = $3 AND b.working = TRUE
              GROUP BY COALESCE(f.building_id, '')`,
      params: range,
    }];
  }
  return [{
    text: `WITH days AS (SELECT MIN(start_ms) AS lo, MAX(end_ms) AS hi FROM calendar_days WHERE customer_id = $3 AND building_id = $4 AND local_date >= $1 AND local_date < $2)
           SELECT f.floor_id, f.floor_space_id, SUM(b.known_ms) AS known_ms, SUM(b.occupied_ms) AS occupied_ms, SUM(b.headcount_ms) AS headcount_ms,
                  MAX(b.peak_headcount) AS peak_headcount
             FROM days d
             JOIN floor_spaces f ON f.customer_id = $3 AND COALESCE(f.building_id, '') = $4${name === 'floor-week' ? ' AND f.floor_id = $5' : ''}
             JOIN occupancy_buckets b ON b.floor_space_key = f.floor_space_key AND b.start_ms >= d.lo AND b.start_ms < d.hi
            WHERE b.working = TRUE
            GROUP BY f.floor_id, f.floor_space_id`,
    params: name === 'floor-week' ? [...range, building, floor] : [...range, building],
  }];
}

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const DAY_MS = 86_400_000;

async function hasViews(store: Store): Promise<boolean> {
  try {
    await store.query('SELECT 1 FROM space_days WHERE 1 = 0');
    return true;
  } catch {
    return false;
  }
}

/**
 * The three asks over a portfolio whose data covers [start, end): the last 30 local days of its first building, the
 * last 7 of that building's first floor, and the whole period for every building.
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
  const source = (await hasViews(store)) ? 'views' : 'buckets';
  const statements = source === 'views' ? viewStatements : bucketStatements;
  const to = day(endMs);
  const month = day(endMs - 30 * DAY_MS);
  const week = day(endMs - 7 * DAY_MS);
  const asks: ReportAsk[] = [
    { name: 'building-month', label: `${b === '' ? 'every space (no building listed)' : `building ${b.slice(0, 8)}`}, ${month} to ${to} (30 days)`, statements: await statements('building-month', [month, to, customerId], b, null), source },
  ];
  if (building.floor_id !== null) {
    asks.push({ name: 'floor-week', label: `floor ${building.floor_id.slice(0, 8)}, ${week} to ${to} (7 days)`, statements: await statements('floor-week', [week, to, customerId], b, building.floor_id), source });
  }
  const days = Math.round((endMs - startMs) / DAY_MS);
  const portfolio = source === 'views' ? await reportStatements(customerId, day(startMs), to) : await statements('portfolio', [day(startMs), to, customerId], b, null);
  asks.push({ name: 'portfolio', label: `every building, ${day(startMs)} to ${to} (${days} days)`, statements: portfolio, source });
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
  /** Each statement is cancelled after this long (Postgres; SQLite cannot cancel a statement it runs). */
  timeoutMs: number;
  log(line: string): void;
}

/**
 * The statements of an ask at once, as `report` sends its own (Promise.all over the store's pool), on Postgres; each
 * statement's own time is kept too. A statement still running after `timeoutMs` is cancelled (Postgres) and the ask marked.
 */
async function timed(store: Store, ask: ReportAsk, timeoutMs: number): Promise<{ ms: number; rows: number; statementMs: number[]; timedOut: boolean }> {
  const started = performance.now();
  let timedOut = false;
  const one = async (s: Statement) => {
    const from = performance.now();
    try {
      const rows = (await store.query(s.text, s.params, { timeoutMs })).length;
      return { rows, ms: performance.now() - from };
    } catch (error) {
      if (!/cancel|timeout/i.test(`${(error as Error).message} ${String((error as Error).cause)}`)) throw error;
      timedOut = true;
      return { rows: 0, ms: performance.now() - from };
    }
  };
  // SQLite answers one statement at a time whatever is sent: one after another, each statement's time is its own.
  const results: Array<{ rows: number; ms: number }> = [];
  if (store.dialect === 'sqlite') for (const s of ask.statements) results.push(await one(s));
  else results.push(...(await Promise.all(ask.statements.map(one))));
  return { ms: performance.now() - started, rows: results.reduce((a, r) => a + r.rows, 0), statementMs: results.map((r) => r.ms), timedOut };
}

/** Each ask cold (first, on a fresh connection, after a restart when allowed) then warm. */
export async function timeReports(databaseUrl: string, asks: readonly ReportAsk[], options: TimingOptions): Promise<ReportTiming[]> {
  const out: ReportTiming[] = [];
  for (const ask of asks) {
    const restarted = options.dialect === 'postgres' && options.restart ? await restartPostgresWhenIdle(databaseUrl, options.restartWaitMs, options.log) : false;
    const store = await openReader(databaseUrl);
    try {
      const cold = await timed(store, ask, options.timeoutMs);
      const warm: number[] = [];
      let last = cold;
      // An ask that took over 10 s cold is run warm once: the figure is what matters, not its spread.
      const runs = cold.timedOut ? 0 : cold.ms > 10_000 ? 1 : options.warmRuns;
      for (let i = 0; i < runs; i++) {
        last = await timed(store, ask, options.timeoutMs);
        warm.push(last.ms);
        if (last.timedOut) break;
      }
      const timing: ReportTiming = {
        name: ask.name, label: ask.label, source: ask.source, statements: ask.statements.length, rows: cold.rows, coldMs: cold.ms, cold: restarted ? 'restart' : 'connection',
        warmMs: warm.length ? median(warm) : cold.ms, warmSamples: warm, statementMs: last.statementMs, timedOut: cold.timedOut || last.timedOut,
      };
      const bound = timing.timedOut ? ` (cancelled after ${options.timeoutMs / 1000} s)` : '';
      options.log(`  ${ask.name}: ${ask.label}: ${cold.rows} rows, cold ${cold.ms.toFixed(0)} ms (${timing.cold}), warm ${timing.warmMs.toFixed(0)} ms (median of ${warm.length})${bound}; statements ${timing.statementMs.map((m) => m.toFixed(0)).join(' + ')} ms`);
      out.push(timing);
    } finally {
      await store.close();
    }
  }
  return out;
}

/** EXPLAIN (ANALYZE, BUFFERS) of each statement of an ask on Postgres, or EXPLAIN QUERY PLAN on SQLite: where the time goes. */
export async function explain(databaseUrl: string, dialect: Dialect, ask: ReportAsk, timeoutMs: number): Promise<string> {
  const store = await openReader(databaseUrl);
  try {
    const plans: string[] = [];
    for (const s of ask.statements) {
      const plan = (prefix: string) => store.query<Record<string, unknown>>(`${prefix}${s.text}`, s.params, { timeoutMs });
      // A statement that outlasts the timeout is shown with its plan alone (EXPLAIN without ANALYZE).
      const rows =
        dialect === 'postgres'
          ? await plan('EXPLAIN (ANALYZE, BUFFERS) ').catch(async () => [{ 'QUERY PLAN': `(cancelled after ${timeoutMs / 1000} s: the plan without ANALYZE)` }, ...(await plan('EXPLAIN '))])
          : await plan('EXPLAIN QUERY PLAN ');
      plans.push(`${s.text.replace(/\s+/g, ' ').trim()}\n${rows.map((r) => String(r['QUERY PLAN'] ?? r.detail ?? JSON.stringify(r))).join('\n')}`);
    }
    return plans.join('\n\n');
  } finally {
    await store.close();
  }
}
