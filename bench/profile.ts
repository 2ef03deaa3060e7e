import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../test/support/tmp.ts';
import { formatFrames, summarize, topOwnTotal, topSelf } from './cpuprofile.ts';
import { measureReceiver, type LoadSettings } from './receiver-load.ts';
import type { SyncBench } from './sync-bench.ts';

/**
 * `--profile`: one extra run of our SQLite sync and one of the real receiver under `node --cpu-prof`, summarised as
 * top frames by self time and our own functions by inclusive time. Profiled runs are not part of the figures.
 */

const TOP = 12;

/** The main thread's profile: tsx's loader thread writes a second, smaller one. */
function mainProfile(dir: string): string {
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(dir, f));
  if (files.length === 0) throw new Error(`no .cpuprofile written in ${dir}`);
  return files.sort((a, b) => statSync(b).size - statSync(a).size)[0]!;
}

function section(title: string, file: string): string[] {
  const { totalMs, frames } = summarize(file);
  return [
    `### ${title} (${(totalMs / 1000).toFixed(1)} s profiled, process start included)`,
    '',
    'Top frames by self time:',
    '',
    '```',
    ...formatFrames(topSelf(frames, TOP), 'self'),
    '```',
    '',
    'Our own functions by inclusive time:',
    '',
    '```',
    ...formatFrames(topOwnTotal(frames, TOP), 'total'),
    '```',
  ];
}

export async function profileAll(sync: SyncBench, rows: number, load: LoadSettings): Promise<string> {
  const lines: string[] = [];
  const syncTmp = tempDir('occupancy-bench-prof-');
  const receiverTmp = tempDir('occupancy-bench-prof-');
  const [syncDir, receiverDir] = [syncTmp.dir, receiverTmp.dir];
  try {
    await sync.once('ours', 'sqlite', rows, ['--cpu-prof', `--cpu-prof-dir=${syncDir}`]);
    lines.push(...section(`Sync into SQLite, ${rows.toLocaleString('en-US')} rows`, mainProfile(syncDir)), '');
    await measureReceiver('real', load, ['--cpu-prof', `--cpu-prof-dir=${receiverDir}`]);
    lines.push(...section(`Receiver, ${load.connections} connections for ${load.durationSeconds} s`, mainProfile(receiverDir)));
  } finally {
    syncTmp.remove();
    receiverTmp.remove();
  }
  return lines.join('\n');
}
