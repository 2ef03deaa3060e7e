/**
 * The report's statements over a generated portfolio at the benchmark's full size, in minutes rather than the hours
 * the sync path takes to load it: buildings x floors x floor spaces with one bucket per space and UTC hour over
 * `--days` (a UTC calendar, working time 09:00-17:00 Monday to Friday), written straight into occupancy_buckets and
 * calendar_days by SQL (generate_series), and the daily and floor-level hourly rollups filled by their migrations' own
 * statements. Then the asks of the portfolio benchmark (bench/portfolio-reports.ts: a building-month, a floor-week and
 * what `report` sends for the whole period), each timed warm through the store's reader (median of 3), as the
 * benchmark times them.
 * Postgres only; writes nothing outside its schema, dropped at the end (KEEP=1 keeps it; EXPLAIN=1 prints the plans).
 *
 *   node --import tsx bench/portfolio-rollup.ts [--buildings 20] [--floors 5] [--spaces 20] [--days 180]
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { freshDatabase } from '../test/support/databases.ts';
import { explain, openReader, reportAsks, timeReports } from './portfolio-reports.ts';
import { BENCH_PG_URL } from './sync-bench.ts';

const { values } = parseArgs({ options: { buildings: { type: 'string', default: '20' }, floors: { type: 'string', default: '5' }, spaces: { type: 'string', default: '20' }, days: { type: 'string', default: '180' } } });
const B = Number(values.buildings);
const F = Number(values.floors);
const S = Number(values.spaces);
const DAYS = Number(values.days);
const C = 'c-rollup';
const START = Date.UTC(2026, 0, 5); // a Monday
const HOUR = 3_600_000;
const spaces = B * F * S;

/** The fill of a rollup by its migration's own statement (the last one, `INSERT INTO <table>`): as an upgrade fills it. */
function rollupFill(file: string, table: string): string {
  const text = readFileSync(new URL(`../db/migrations/pg/${file}`, import.meta.url), 'utf8');
  return text.split('--> statement-breakpoint').map((s) => s.trim()).find((s) => s.startsWith(`INSERT INTO ${table}`))!;
}

const db = await freshDatabase('postgres', 'rollup', { migrate: true, baseUrl: BENCH_PG_URL, schemaPrefix: 'osbench_' });
const sql = postgres(BENCH_PG_URL, { max: 1, onnotice: () => {}, connection: { search_path: db.schema! } });
try {
  const t0 = performance.now();
  const at = new Date(START).toISOString();
  await sql.unsafe(`INSERT INTO buildings (customer_id, id, name, time_zone, first_seen_at, last_seen_at)
    SELECT '${C}', 'b' || lpad(b::text, 3, '0'), 'Building ' || b, 'UTC', '${at}', '${at}' FROM generate_series(1, ${B}) b`);
  await sql.unsafe(`INSERT INTO floors (customer_id, id, building_id, name, level, first_seen_at, last_seen_at)
    SELECT '${C}', 'b' || lpad(b::text, 3, '0') || '-f' || f, 'b' || lpad(b::text, 3, '0'), 'Floor ' || f, f, '${at}', '${at}'
      FROM generate_series(1, ${B}) b, generate_series(1, ${F}) f`);
  await sql.unsafe(`INSERT INTO floor_spaces (customer_id, floor_space_id, name, floor_id, building_id, capacity, space_type, first_seen_at, last_seen_at)
    SELECT '${C}', 'b' || lpad(b::text, 3, '0') || '-f' || f || '-s' || s, 's' || s, 'b' || lpad(b::text, 3, '0') || '-f' || f, 'b' || lpad(b::text, 3, '0'),
           CASE WHEN s % 5 = 0 THEN NULL ELSE 1 + s % 8 END, 'desk', '${at}', '${at}'
      FROM generate_series(1, ${B}) b, generate_series(1, ${F}) f, generate_series(1, ${S}) s ORDER BY 1, 2, 3`);
  await sql.unsafe(`INSERT INTO aggregate_calendars (customer_id, building_id, time_zone, calendar, max_hold_ms, computed_at)
    SELECT '${C}', id, 'UTC', '{"days":[1,2,3,4,5],"start":"09:00","end":"17:00","holidays":[]}', 2700000, '${at}' FROM buildings`);
  await sql.unsafe(`INSERT INTO calendar_days (customer_id, building_id, local_date, start_ms, end_ms, weekday, working_ms, holiday, time_zone)
    SELECT '${C}', b.id, to_char(to_timestamp((${START} + d::int8 * 86400000) / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD'),
           ${START} + d::int8 * 86400000, ${START} + (d + 1)::int8 * 86400000, (d % 7) + 1, CASE WHEN d % 7 < 5 THEN 8 * ${HOUR} ELSE 0 END, false, 'UTC'
      FROM buildings b, generate_series(0, ${DAYS - 1}) d`);
  // One bucket per space and hour; a space is occupied about a third of its working hours, headcount known half.
  await sql.unsafe(`INSERT INTO occupancy_buckets (floor_space_key, start_ms, end_ms, local_date, local_hour, weekday, working, known_ms,
                                                   occupied_ms, headcount_ms, headcount_known_ms, peak_headcount, readings)
    SELECT k, ${START} + h::int8 * ${HOUR}, ${START} + (h + 1)::int8 * ${HOUR},
           to_char(to_timestamp((${START} + (h / 24)::int8 * 86400000) / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD'),
           h % 24, (h / 24) % 7 + 1, (h / 24) % 7 < 5 AND h % 24 BETWEEN 9 AND 16, ${HOUR},
           CASE WHEN (k * 7 + h) % 3 = 0 THEN ${HOUR} ELSE 0 END,
           CASE WHEN k % 2 = 0 THEN ((k + h) % 4) * ${HOUR}::int8 ELSE 0 END, CASE WHEN k % 2 = 0 THEN ${HOUR} ELSE 0 END,
           CASE WHEN k % 2 = 0 THEN (k + h) % 4 END, 1
      FROM generate_series(1, ${spaces}) k, generate_series(0, ${DAYS * 24 - 1}) h`);
  await sql.unsafe(rollupFill('0015_occupancy_days.sql', 'occupancy_days'));
  await sql.unsafe(rollupFill('0018_occupancy_floor_hours.sql', 'occupancy_floor_hours'));
  await sql.unsafe('VACUUM ANALYZE');
  const [size] = await sql<{ b: string; d: string; f: string }[]>`SELECT (SELECT count(*) FROM occupancy_buckets) AS b, (SELECT count(*) FROM occupancy_days) AS d, (SELECT count(*) FROM occupancy_floor_hours) AS f`;
  console.log(`${spaces} spaces x ${DAYS} days: ${size!.b} buckets, ${size!.d} daily and ${size!.f} floor-hour rollup rows, loaded in ${((performance.now() - t0) / 1000).toFixed(0)} s; load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);

  const reader = await openReader(db.url);
  const asks = await reportAsks(reader, C, START, START + DAYS * 86_400_000).finally(() => reader.close());
  await timeReports(db.url, asks, { dialect: 'postgres', warmRuns: 3, restart: false, restartWaitMs: 0, timeoutMs: 300_000, log: (line) => console.log(line) });
  if (process.env.EXPLAIN) for (const ask of asks) console.log(`\n== ${ask.name}\n${await explain(db.url, 'postgres', ask, 300_000)}`);
  console.log(`load average after: ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
} finally {
  await sql.end();
  if (process.env.KEEP) console.log(`kept schema ${db.schema}`);
  else await db.drop();
}
