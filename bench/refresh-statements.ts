import { closeSync, existsSync, openSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { flags } from './child.ts';
import { ReplayBench, type Shape } from './replay-bench.ts';
import { median } from './stats.ts';
import { BENCH_PG_URL } from './sync-bench.ts';

/**
 * Where the aggregates' server time goes in the replay (docs/performance.md, "Keeping the time-weighted
 * aggregates"): `--runs` runs of ours into Postgres, each with every statement's duration logged
 * (log_min_duration_statement = 0, set with ALTER SYSTEM for the run only and put back after it, by the next run if
 * this one is killed: SAVED), summed per kind of
 * statement from the server's log file (parse, bind and execute together). The upsert of the readings is the
 * yardstick: the aggregates' statements against it, per run, are comparable across runs of a noisy machine where
 * their milliseconds are not. Needs a local server, a superuser, and its log file readable (`--log`; Debian's by
 * default). Prints a table per run and the medians.
 *
 *   node --import tsx bench/refresh-statements.ts [--shape large|small] [--rows 300000] [--runs 3] [--log /var/log/postgresql/postgresql-15-main.log]
 */

const options = flags();
const shape = (options.get('shape') ?? 'large') as Shape['name'];
const rows = Number(options.get('rows') ?? 300_000);
const runs = Number(options.get('runs') ?? 3);
const log = options.get('log') ?? '/var/log/postgresql/postgresql-15-main.log';
if (shape !== 'large' && shape !== 'small') throw new Error(`--shape ${JSON.stringify(shape)}: use large or small`);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs ${options.get('runs')}: use a whole number of runs, at least 1`);
statSync(log);

/** The kinds of statement, first match wins; `aggregates` false: not the aggregates' own. */
const KINDS: ReadonlyArray<{ name: string; test: (q: string) => boolean; aggregates: boolean }> = [
  { name: 'ANALYZE after the run', test: (q) => q.trimStart().startsWith('ANALYZE'), aggregates: false },
  { name: 'readings read back', test: (q) => q.includes('string_agg'), aggregates: true },
  { name: 'bucket inserts', test: (q) => q.includes('INSERT INTO occupancy_buckets'), aggregates: true },
  { name: 'bucket deletes', test: (q) => q.includes('DELETE FROM occupancy_buckets'), aggregates: true },
  { name: 'daily rollup', test: (q) => q.includes('occupancy_days'), aggregates: true },
  { name: 'floor hours', test: (q) => q.includes('occupancy_floor_hours'), aggregates: true },
  { name: 'calendar days', test: (q) => q.includes('calendar_days'), aggregates: true },
  { name: 'invalidations', test: (q) => q.includes('aggregate_page_invalidations') || q.includes('aggregate_invalidations'), aggregates: true },
  { name: 'readings upsert', test: (q) => q.includes('INSERT INTO occupancy_readings'), aggregates: false },
  { name: 'other', test: () => true, aggregates: false },
];

/** Milliseconds per kind in a stretch of the server's log. */
function sums(text: string): Map<string, number> {
  const out = new Map<string, number>(KINDS.map((k) => [k.name, 0]));
  for (const entry of text.split(/\n(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)/)) {
    const m = /duration: ([0-9.]+) ms\s+(?:statement|execute|parse|bind)[^:]*: ([\s\S]*)/.exec(entry);
    if (!m) continue;
    const kind = KINDS.find((k) => k.test(m[2]!))!;
    out.set(kind.name, out.get(kind.name)! + Number(m[1]));
  }
  return out;
}

/** The server's log from byte `from` to its end: what the run logged (the whole file may be too large to read). */
function logSince(from: number): string {
  const fd = openSync(log, 'r');
  try {
    const bytes = Buffer.alloc(statSync(log).size - from);
    for (let at = 0; at < bytes.length; ) at += readSync(fd, bytes, at, bytes.length - at, from + at);
    return bytes.toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/**
 * ALTER SYSTEM outlives the process that ran it: what postgresql.auto.conf held for log_min_duration_statement (its
 * value, or null for none) is kept in this file from before the setting is changed until it is put back, so a run
 * killed in between (kill -9) leaves the server logging every statement only until the next run puts it back.
 */
const SAVED = join(tmpdir(), 'occupancy-sync-refresh-statements.saved.json');

/** The server the setting was changed on, as host:port (the URL may hold a password: never written to the file). */
const SERVER = new URL(BENCH_PG_URL).host;

async function putBack(admin: postgres.Sql): Promise<void> {
  if (!existsSync(SAVED)) return;
  const saved = JSON.parse(readFileSync(SAVED, 'utf8')) as { server: string; setting: string | null };
  if (saved.server !== SERVER) {
    throw new Error(`${SAVED} holds log_min_duration_statement as it was on ${saved.server}, not on ${SERVER}: run this against ${saved.server} once to put it back, or delete the file`);
  }
  await admin.unsafe(saved.setting === null ? 'ALTER SYSTEM RESET log_min_duration_statement' : `ALTER SYSTEM SET log_min_duration_statement = '${saved.setting.replaceAll("'", "''")}'`);
  await admin.unsafe('SELECT pg_reload_conf()');
  rmSync(SAVED);
}

const admin = postgres(BENCH_PG_URL, { max: 1, onnotice: () => {} });
if (existsSync(SAVED)) {
  console.log(`a run killed before it put log_min_duration_statement back left ${SAVED}: putting it back first`);
  await putBack(admin);
}
const bench = await ReplayBench.start((line) => console.log(line), rows, [shape]);
const perRun: Array<Map<string, number>> = [];
try {
  for (let run = 0; run < runs; run++) {
    const [auto] = await admin.unsafe<Array<{ setting: string }>>(
      "SELECT setting FROM pg_file_settings WHERE name = 'log_min_duration_statement' AND sourcefile LIKE '%postgresql.auto.conf' ORDER BY seqno DESC LIMIT 1",
    );
    writeFileSync(SAVED, JSON.stringify({ server: SERVER, setting: auto?.setting ?? null }));
    const from = statSync(log).size;
    try {
      await admin.unsafe('ALTER SYSTEM SET log_min_duration_statement = 0');
      await admin.unsafe('SELECT pg_reload_conf()');
      await bench.once('ours', 'postgres', shape, { env: { BENCH_AGGREGATES: 'on' } });
    } finally {
      await putBack(admin);
    }
    perRun.push(sums(logSince(from)));
  }
} finally {
  await bench.close();
  await admin.end();
}

const aggregates = (m: Map<string, number>) => KINDS.filter((k) => k.aggregates).reduce((n, k) => n + m.get(k.name)!, 0);
console.log(`\nStatement time on the server, Postgres, ${shape} pages, ${rows.toLocaleString('en-US')} readings, ${runs} run(s) of ours (ms; the log's bytes are read after each run):`);
console.log(`| Statements | ${perRun.map((_, i) => `Run ${i + 1}`).join(' | ')} | Median |`);
console.log(`| --- | ${perRun.map(() => '---:').join(' | ')} | ---: |`);
const row = (name: string, values: number[], digits = 0) => console.log(`| ${name} | ${values.map((v) => v.toFixed(digits)).join(' | ')} | ${median(values).toFixed(digits)} |`);
for (const k of KINDS) row(k.name, perRun.map((m) => m.get(k.name)!));
row("the aggregates' statements", perRun.map(aggregates));
row("the aggregates' against the readings upsert", perRun.map((m) => aggregates(m) / m.get('readings upsert')!), 3);
