import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { formatFrames, summarize, topOwnTotal, topSelf } from './cpuprofile.ts';
import { SyncBench } from './sync-bench.ts';
const dialect = (process.argv[2] ?? 'sqlite') as 'sqlite' | 'postgres';
const rows = Number(process.argv[3] ?? 200000);
const dir = `/tmp/prof-${dialect}-${Date.now()}`;
const sync = await SyncBench.start((l) => console.error(l));
try {
  await sync.once('ours', dialect, rows);

  await sync.once('ours', dialect, rows, ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
} finally { await sync.close(); }
const file = readdirSync(dir).map((f) => join(dir, f)).sort((a, b) => statSync(b).size - statSync(a).size)[0]!;
const { totalMs, frames } = summarize(file);
console.log(totalMs, '\n' + formatFrames(topSelf(frames, 25), 'self').join('\n') + '\n' + formatFrames(topOwnTotal(frames, 25), 'total').join('\n'));
