import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../test/support/tmp.ts';
import { formatFrames, summarize, topOwnTotal, topSelf } from './cpuprofile.ts';
import { measureReceiver, type LoadSettings } from './receiver-load.ts';
import type { ReplayBench } from './replay-bench.ts';
import type { SyncBench } from './sync-bench.ts';
import type { Dialect } from '../test/support/databases.ts';

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

const REPLAY_TOP = 15;

function selfOnly(title: string, file: string): string[] {
  const { totalMs, frames } = summarize(file);
  return [`##### ${title} (${(totalMs / 1000).toFixed(1)} s profiled, process start included)`, '', '```', ...formatFrames(topSelf(frames, REPLAY_TOP), 'self'), '```', ''];
}

/**
 * `--profile` on the replay server: ours and the minimal client, large pages, each dialect, top frames by self
 * time side by side, so the extra CPU per million rows of ours shows by function. Not part of the figures.
 */
export async function profileReplay(bench: ReplayBench, dialects: readonly Dialect[]): Promise<string> {
  const lines: string[] = [];
  for (const dialect of dialects) {
    lines.push(`#### Replay into ${dialect === 'sqlite' ? 'SQLite' : 'Postgres'}, large pages, ${bench.rows.toLocaleString('en-US')} rows`, '');
    for (const impl of ['ours', 'minimal'] as const) {
      const tmp = tempDir('occupancy-bench-prof-');
      try {
        const result = await bench.once(impl, dialect, 'large', { nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${tmp.dir}`] });
        lines.push(...selfOnly(`${impl}: ${result.cpuPerMillion.toFixed(1)} CPU s per million rows (profiled run)`, mainProfile(tmp.dir)));
      } finally {
        tmp.remove();
      }
    }
  }
  return lines.join('\n').trimEnd();
}
