/**
 * A/B of two definitions of the SQLite views on the same generated portfolio: `--dir` holds old<days>.db and
 * new<days>.db for each `--days` (files of `KEEP=1 bench/portfolio-rollup-sqlite.ts --days N`, copied, a view
 * replaced in one copy with the sqlite3 shell). The portfolio benchmark's asks, old and new alternated for `--rounds`,
 * each run once discarded then timed: this process's CPU and wall clock, medians. Says so if an ask's rows differ.
 *
 *   node --import tsx bench/sqlite-views-ab.ts --dir /tmp/ab [--days 45 --days 180] [--rounds 6]
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { openReader, reportAsks } from './portfolio-reports.ts';

const { values } = parseArgs({ options: { dir: { type: 'string' }, days: { type: 'string', multiple: true, default: ['45', '180'] }, rounds: { type: 'string', default: '6' } } });
if (!values.dir) throw new Error('--dir is required');
const START = Date.UTC(2026, 0, 5); // bench/portfolio-rollup-sqlite.ts's first day
const ROUNDS = Number(values.rounds);
const out: Record<string, { wall: number[]; cpu: number[] }> = {};
const rowsSeen: Record<string, string> = {};
const median = (a: number[]) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]!; };
console.log(`load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
for (let r = 0; r < ROUNDS; r++) {
  for (const days of values.days!.map(Number)) {
    for (const v of r % 2 ? ['new', 'old'] : ['old', 'new']) {
      const url = `file:${values.dir}/${v}${days}.db`;
      const store = await openReader(url);
      const asks = await reportAsks(store, 'c-rollup', START, START + days * 86_400_000);
      for (const ask of asks) {
        const run = async () => { const rows: unknown[] = []; for (const s of ask.statements) rows.push(...(await store.query(s.text, s.params))); return rows; };
        await run();
        const c0 = process.cpuUsage(); const t0 = performance.now();
        const rows = await run();
        const wall = performance.now() - t0; const c = process.cpuUsage(c0);
        const key = `${ask.name} ${days} ${v}`;
        (out[key] ??= { wall: [], cpu: [] }).wall.push(wall); out[key].cpu.push((c.user + c.system) / 1000);
        const sig = JSON.stringify(rows.map((x) => JSON.stringify(x)).sort());
        const k2 = `${ask.name} ${days}`;
        if (rowsSeen[k2] === undefined) rowsSeen[k2] = sig; else if (rowsSeen[k2] !== sig) console.log(`ROWS DIFFER: ${k2}`);
      }
      await store.close();
    }
  }
}
for (const [k, v] of Object.entries(out)) console.log(`${k}: wall ${median(v.wall).toFixed(0)} ms, cpu ${median(v.cpu).toFixed(0)} ms (median of ${v.wall.length})`);
console.log(`row sets compared: ${Object.keys(rowsSeen).length}; load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
