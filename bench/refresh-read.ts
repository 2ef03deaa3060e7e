import Database from 'better-sqlite3';
import postgres from 'postgres';
import { flags } from './child.ts';
import { median } from './stats.ts';
import { BENCH_PG_URL } from './sync-bench.ts';

/**
 * The refresh's read of its floor spaces' readings on Postgres, the two shapes side by side (docs/performance.md,
 * "The refresh's read in one plan"): a UNION ALL branch per floor space (before) against the spaces' ranges bound as
 * arrays and joined laterally (src/store/aggregates.ts readReadings). A scratch schema holds a readings table
 * partitioned by month as the store's is (`--months` partitions and a default one), `--spaces` floor spaces with a
 * reading every 5 minutes for a day; each shape reads the same 3 hours of every space, alternating, and EXPLAIN
 * ANALYZE gives its planning and execution time. Prints the medians; drops the schema. `--dialect sqlite`: the same
 * on an in-memory SQLite table laid out as the store's (WITHOUT ROWID, keyed by space and instant), a UNION ALL branch
 * per space prepared for each read (its text differs with every set of spaces) against one JSON array of ranges
 * through a statement prepared once; wall time of preparing and reading every row.
 *
 *   node --import tsx bench/refresh-read.ts [--dialect postgres|sqlite] [--spaces 500] [--months 24] [--rounds 5]
 */

const options = flags();
const spaces = Number(options.get('spaces') ?? 500);
const months = Number(options.get('months') ?? 24);
const rounds = Number(options.get('rounds') ?? 5);
const schema = `osbench_refresh_read_${process.pid}`;
const dialect = options.get('dialect') ?? 'postgres';

const at = (ms: number) => new Date(ms).toISOString();
const from = Date.parse('2026-11-01T08:00:00.000Z');
const to = from + 3 * 3_600_000;
const instant = '(extract(epoch from r.observed_at) * 1000)::int8';
const keys = Array.from({ length: spaces }, (_, i) => i + 1);

const unionAll =
  `SELECT k, string_agg(t::text, ',') AS t, string_agg(c::text, ',') AS c, string_agg(COALESCE(h::text, ''), ',') AS h FROM (` +
  keys.map((k) => `SELECT r.floor_space_key AS k, ${instant} AS t, r.status_code AS c, r.headcount AS h FROM r WHERE r.floor_space_key IN (${k}) AND r.observed_at >= '${at(from)}' AND r.observed_at < '${at(to)}'`).join(' UNION ALL ') +
  ' ORDER BY k, t) AS r GROUP BY k';
const lateral =
  `SELECT u.k, x.t, x.c, x.h FROM unnest('{${keys.join(',')}}'::int4[], '{${keys.map(() => at(from)).join(',')}}'::timestamptz[], '{${keys.map(() => at(to)).join(',')}}'::timestamptz[]) AS u(k, lo, hi) ` +
  `CROSS JOIN LATERAL (SELECT string_agg(s.t::text, ',') AS t, string_agg(s.c::text, ',') AS c, string_agg(COALESCE(s.h::text, ''), ',') AS h ` +
  `FROM (SELECT ${instant} AS t, r.status_code AS c, r.headcount AS h FROM r WHERE r.floor_space_key = u.k AND r.observed_at >= u.lo AND r.observed_at < u.hi ORDER BY r.observed_at) AS s) AS x WHERE x.t IS NOT NULL`;

async function timed(pg: postgres.Sql, statement: string): Promise<{ planning: number; execution: number }> {
  const rows = await pg.unsafe(`EXPLAIN (ANALYZE, SUMMARY, TIMING OFF) ${statement}`);
  const text = rows.map((r) => String(Object.values(r)[0])).join('\n');
  const ms = (label: string) => Number(new RegExp(`${label} Time: ([0-9.]+) ms`).exec(text)?.[1]);
  return { planning: ms('Planning'), execution: ms('Execution') };
}

if (dialect === 'sqlite') sqlite();
else await onPostgres();

function sqlite(): void {
  const db = new Database(':memory:');
  db.exec('CREATE TABLE occupancy_readings (floor_space_key integer NOT NULL, observed_ms integer NOT NULL, status_code integer NOT NULL, headcount integer, PRIMARY KEY (floor_space_key, observed_ms)) WITHOUT ROWID');
  const insert = db.prepare('INSERT INTO occupancy_readings VALUES (?, ?, ?, ?)');
  db.transaction(() => {
    for (const k of keys) for (let i = 0; i < 288; i++) insert.run(k, Date.parse('2026-11-01T00:00:00.000Z') + i * 300_000, i % 3, i % 5);
  })();
  const columns = 'r.floor_space_key AS k, r.observed_ms AS t, r.status_code AS c, r.headcount AS h';
  const unionText = `${keys.map((k) => `SELECT ${columns} FROM occupancy_readings r WHERE r.floor_space_key IN (${k}) AND r.observed_ms >= ? AND r.observed_ms < ?`).join(' UNION ALL ')} ORDER BY k, t`;
  const jsonRead = db.prepare(`SELECT ${columns} FROM json_each(?) AS u CROSS JOIN occupancy_readings r WHERE r.floor_space_key = u.value ->> 0 AND r.observed_ms >= u.value ->> 1 AND r.observed_ms < u.value ->> 2 ORDER BY r.floor_space_key, r.observed_ms`);
  const shapes = {
    unionAll: () => db.prepare(unionText).all(...keys.flatMap(() => [from, to])).length,
    json: () => jsonRead.all(JSON.stringify(keys.map((k) => [k, from, to]))).length,
  };
  const times: Record<string, number[]> = { unionAll: [], json: [] };
  for (let i = 0; i < rounds; i++) {
    for (const shape of (i % 2 === 0 ? ['unionAll', 'json'] : ['json', 'unionAll']) as Array<keyof typeof shapes>) {
      const started = performance.now();
      const rows = shapes[shape]();
      times[shape]!.push(performance.now() - started);
      if (rows !== spaces * 36) throw new Error(`${shape} read ${rows} rows, expected ${spaces * 36}`);
    }
  }
  for (const [shape, runs] of Object.entries(times)) process.stdout.write(`${shape.padEnd(8)} ${spaces} spaces (SQLite): ${median(runs).toFixed(1)} ms (median of ${rounds})\n`);
  db.close();
}

async function onPostgres(): Promise<void> {
  const pg = postgres(BENCH_PG_URL, { max: 1, onnotice: () => {} });
  try {
    await pg.unsafe(`CREATE SCHEMA ${schema}; SET search_path = ${schema}`);
    await pg.unsafe('CREATE TABLE r (floor_space_key int4 NOT NULL, observed_at timestamptz NOT NULL, status_code int2, headcount int4, PRIMARY KEY (floor_space_key, observed_at)) PARTITION BY RANGE (observed_at)');
    for (let m = 0; m < months; m++) {
      const start = new Date(Date.UTC(2026, 10 - months + 1 + m, 1)).toISOString();
      const end = new Date(Date.UTC(2026, 10 - months + 2 + m, 1)).toISOString();
      await pg.unsafe(`CREATE TABLE r_${m} PARTITION OF r FOR VALUES FROM ('${start}') TO ('${end}')`);
    }
    await pg.unsafe('CREATE TABLE r_default PARTITION OF r DEFAULT');
    await pg.unsafe(`INSERT INTO r SELECT k, timestamptz '2026-11-01' + i * interval '5 minutes', (i % 3)::int2, i % 5 FROM generate_series(1, ${spaces}) k, generate_series(0, 287) i; ANALYZE r`);
    const figures = { unionAll: [] as Array<{ planning: number; execution: number }>, lateral: [] as Array<{ planning: number; execution: number }> };
    for (let i = 0; i < rounds; i++) {
      for (const shape of i % 2 === 0 ? (['unionAll', 'lateral'] as const) : (['lateral', 'unionAll'] as const)) figures[shape].push(await timed(pg, shape === 'unionAll' ? unionAll : lateral));
    }
    for (const [shape, runs] of Object.entries(figures)) {
      const p = median(runs.map((r) => r.planning));
      const e = median(runs.map((r) => r.execution));
      process.stdout.write(`${shape.padEnd(8)} ${spaces} spaces, ${months + 1} partitions: planning ${p.toFixed(1)} ms, execution ${e.toFixed(1)} ms, together ${(p + e).toFixed(1)} ms (median of ${rounds})\n`);
    }
  } finally {
    await pg.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pg.end();
  }
}
