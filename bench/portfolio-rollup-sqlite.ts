/**
 * bench/portfolio-rollup.ts on SQLite: the same generated portfolio (one bucket per space and UTC hour over `--days`,
 * the rollups filled by their migrations' own statements) in a temporary file, then the portfolio benchmark's asks
 * timed warm (median of 3), then each statement of the building-month and the floor-week alone: this process's CPU
 * time (SQLite answers in-process, so CPU is what a busy machine's wall clock hides), median of 5 after one discarded.
 * EXPLAIN=1 prints each statement's EXPLAIN QUERY PLAN; KEEP=1 keeps the file.
 *
 *   node --import tsx bench/portfolio-rollup-sqlite.ts [--buildings 10] [--floors 5] [--spaces 10] [--days 180]
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { freshDatabase } from '../test/support/databases.ts';
import { explain, openReader, reportAsks, timeReports } from './portfolio-reports.ts';

const { values } = parseArgs({ options: { buildings: { type: 'string', default: '10' }, floors: { type: 'string', default: '5' }, spaces: { type: 'string', default: '10' }, days: { type: 'string', default: '180' } } });
const [B, F, S, DAYS] = [values.buildings, values.floors, values.spaces, values.days].map(Number) as [number, number, number, number];
const C = 'c-rollup';
const START = Date.UTC(2026, 0, 5); // a Monday
const HOUR = 3_600_000;
const spaces = B * F * S;

function rollupFill(file: string, table: string): string {
  const text = readFileSync(new URL(`../db/migrations/sqlite/${file}`, import.meta.url), 'utf8');
  return text.split('--> statement-breakpoint').map((s) => s.trim()).find((s) => s.startsWith(`INSERT INTO ${table}`))!;
}
const series = (name: string, from: number, to: number) => `${name}(v) AS (SELECT ${from} UNION ALL SELECT v + 1 FROM ${name} WHERE v < ${to})`;
const pad = (e: string) => `substr('000' || ${e}, -3)`;

const db = await freshDatabase('sqlite', 'rollup', { migrate: true });
const sql = new Database(db.path!);
try {
  const t0 = performance.now();
  const at = new Date(START).toISOString();
  sql.exec('BEGIN');
  sql.exec(`WITH RECURSIVE ${series('b', 1, B)} INSERT INTO buildings (customer_id, id, name, first_seen_at, last_seen_at)
    SELECT '${C}', 'b' || ${pad('b.v')}, 'Building ' || b.v, '${at}', '${at}' FROM b`);
  sql.exec(`WITH RECURSIVE ${series('b', 1, B)}, ${series('f', 1, F)} INSERT INTO floors (customer_id, id, building_id, name, level, first_seen_at, last_seen_at)
    SELECT '${C}', 'b' || ${pad('b.v')} || '-f' || f.v, 'b' || ${pad('b.v')}, 'Floor ' || f.v, f.v, '${at}', '${at}' FROM b, f`);
  sql.exec(`WITH RECURSIVE ${series('b', 1, B)}, ${series('f', 1, F)}, ${series('s', 1, S)}
    INSERT INTO floor_spaces (customer_id, floor_space_id, name, floor_id, building_id, capacity, space_type, first_seen_at, last_seen_at)
    SELECT '${C}', 'b' || ${pad('b.v')} || '-f' || f.v || '-s' || s.v, 's' || s.v, 'b' || ${pad('b.v')} || '-f' || f.v, 'b' || ${pad('b.v')},
           CASE WHEN s.v % 5 = 0 THEN NULL ELSE 1 + s.v % 8 END, 'desk', '${at}', '${at}' FROM b, f, s ORDER BY b.v, f.v, s.v`);
  sql.exec(`INSERT INTO aggregate_calendars (customer_id, building_id, time_zone, calendar, max_hold_ms, computed_at)
    SELECT '${C}', id, 'UTC', '{"days":[1,2,3,4,5],"start":"09:00","end":"17:00","holidays":[]}', 2700000, '${at}' FROM buildings`);
  sql.exec(`WITH RECURSIVE ${series('d', 0, DAYS - 1)} INSERT INTO calendar_days (customer_id, building_id, local_date, start_ms, end_ms, weekday, working_ms, holiday, time_zone)
    SELECT '${C}', b.id, date((${START} + d.v * 86400000) / 1000, 'unixepoch'), ${START} + d.v * 86400000, ${START} + (d.v + 1) * 86400000,
           (d.v % 7) + 1, CASE WHEN d.v % 7 < 5 THEN 8 * ${HOUR} ELSE 0 END, 0, 'UTC' FROM buildings b, d`);
  sql.exec(`WITH RECURSIVE ${series('h', 0, DAYS * 24 - 1)}
    INSERT INTO occupancy_buckets (floor_space_key, start_ms, end_ms, local_date, local_hour, weekday, working, known_ms,
                                   occupied_ms, headcount_ms, headcount_known_ms, peak_headcount, readings)
    SELECT k.floor_space_key, ${START} + h.v * ${HOUR}, ${START} + (h.v + 1) * ${HOUR}, date((${START} + (h.v / 24) * 86400000) / 1000, 'unixepoch'),
           h.v % 24, (h.v / 24) % 7 + 1, (h.v / 24) % 7 < 5 AND h.v % 24 BETWEEN 9 AND 16, ${HOUR},
           CASE WHEN (k.floor_space_key * 7 + h.v) % 3 = 0 THEN ${HOUR} ELSE 0 END,
           CASE WHEN k.floor_space_key % 2 = 0 THEN ((k.floor_space_key + h.v) % 4) * ${HOUR} ELSE 0 END, CASE WHEN k.floor_space_key % 2 = 0 THEN ${HOUR} ELSE 0 END,
           CASE WHEN k.floor_space_key % 2 = 0 THEN (k.floor_space_key + h.v) % 4 END, 1
      FROM floor_spaces k, h ORDER BY 1, 2`);
  sql.exec(rollupFill('0015_occupancy_days.sql', 'occupancy_days'));
  sql.exec(rollupFill('0018_occupancy_floor_hours.sql', 'occupancy_floor_hours'));
  sql.exec('COMMIT');
  sql.exec('ANALYZE');
  const size = sql.prepare(`SELECT (SELECT count(*) FROM occupancy_buckets) AS b, (SELECT count(*) FROM occupancy_days) AS d, (SELECT count(*) FROM occupancy_floor_hours) AS f`).get() as { b: number; d: number; f: number };
  console.log(`${spaces} spaces x ${DAYS} days: ${size.b} buckets, ${size.d} daily and ${size.f} floor-hour rollup rows, loaded in ${((performance.now() - t0) / 1000).toFixed(0)} s; load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  sql.close();

  const reader = await openReader(db.url);
  const asks = await reportAsks(reader, C, START, START + DAYS * 86_400_000).finally(() => reader.close());
  await timeReports(db.url, asks, { dialect: 'sqlite', warmRuns: 3, restart: false, restartWaitMs: 0, timeoutMs: 300_000, log: (line) => console.log(line) });
  const store = await openReader(db.url);
  try {
    for (const ask of asks.filter((a) => a.name !== 'portfolio')) {
      const cpu: string[] = [];
      for (const s of ask.statements) {
        await store.query(s.text, s.params);
        const runs: number[] = [];
        for (let i = 0; i < 5; i++) {
          const c0 = process.cpuUsage();
          await store.query(s.text, s.params);
          const c = process.cpuUsage(c0);
          runs.push((c.user + c.system) / 1000);
        }
        cpu.push(runs.sort((a, b) => a - b)[2]!.toFixed(1));
      }
      console.log(`  ${ask.name}, each statement alone: ${cpu.join(' + ')} ms CPU`);
    }
  } finally {
    await store.close();
  }
  if (process.env.EXPLAIN) for (const ask of asks.filter((a) => a.name !== 'portfolio')) console.log(`\n== ${ask.name}\n${await explain(db.url, 'sqlite', ask, 300_000)}`);
  console.log(`load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
} finally {
  if (sql.open) sql.close();
  if (process.env.KEEP) console.log(`kept ${db.path}`);
  else await db.drop();
}
