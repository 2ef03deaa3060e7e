import { readdirSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { makeDirectory } from '../directory.ts';
import { UsageError } from '../errors.ts';
import {
  EXCHANGES_DIR,
  exchangeFileName,
  META_FILE,
  README_FILE,
  type RecordedExchange,
  type RecordingMeta,
} from '../sandbox/replay-format.ts';

/**
 * The recording's files. Everything written here has been through the redactor (record-redact.ts). The files are the
 * user's data (their platform's answers): readable by the user only, like the database they came from.
 */

const FILE_MODE = 0o600;
const DIR_MODE = 0o700;

/** Creates `out` and its exchanges folder; a directory holding anything is refused, never overwritten. */
export function prepareOutDir(out: string): void {
  let entries: string[] | undefined;
  try {
    entries = readdirSync(out);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOTDIR') throw new UsageError(`--out ${JSON.stringify(out)}: is a file. Fix: give a new directory for the recording`);
    if (code !== 'ENOENT') throw new UsageError(`--out ${JSON.stringify(out)}: cannot read it (${code ?? 'error'}). Fix: give a directory you may write to`, { cause: error });
  }
  if (entries && entries.length > 0) {
    throw new UsageError(`--out ${JSON.stringify(out)}: the directory is not empty; nothing was run. Fix: give a new (or empty) directory: a recording is never written over another`);
  }
  try {
    makeDirectory(join(out, EXCHANGES_DIR), DIR_MODE);
  } catch (error) {
    throw new UsageError(`--out ${JSON.stringify(out)}: cannot create it (${(error as NodeJS.ErrnoException).code ?? 'error'}). Fix: give a directory you may write to`, { cause: error });
  }
}

export function writeExchange(out: string, exchange: RecordedExchange): Promise<void> {
  return writeFile(join(out, EXCHANGES_DIR, exchangeFileName(exchange)), `${JSON.stringify(exchange, null, 2)}\n`, { mode: FILE_MODE });
}

export function writeMeta(out: string, meta: RecordingMeta): void {
  writeFileSync(join(out, META_FILE), `${JSON.stringify(meta, null, 2)}\n`, { mode: FILE_MODE });
}

/** What the command printed, as the recording keeps it (already scrubbed). */
export function writeOutput(out: string, name: 'stdout.txt' | 'stderr.txt', text: string): void {
  writeFileSync(join(out, name), text, { mode: FILE_MODE });
}

export function readmeText(meta: RecordingMeta): string {
  const keys = meta.keys.map((k) => `${k.key}${k.customerId ? ` (customer ${k.customerId})` : ''}`).join(', ') || '(none)';
  const state =
    meta.stateAtStart === undefined
      ? `not read${meta.stateNote ? ` (${meta.stateNote})` : ''}`
      : meta.stateAtStart.length === 0
        ? 'none (the run started from an empty sync state)'
        : `${meta.stateAtStart.length} stream(s), in meta.json "stateAtStart": a replay must start from the same state to ask the same questions`;
  const lines = [
    'occupancy-sync recording',
    '========================',
    '',
    `Command:    occupancy-sync ${meta.command.join(' ')}`,
    `Platform:   ${meta.upstream}`,
    `Recorded:   ${meta.startedAt} to ${meta.finishedAt ?? '(did not finish)'} (real time)`,
    `Exit code:  ${meta.exitCode ?? '(unknown)'}`,
    `Exchanges:  ${meta.exchanges}, in ${EXCHANGES_DIR}/ (one JSON file each, numbered in the order the requests arrived)`,
    `Clock:      the command's clock stood still at ${meta.clock.frozenAt} for the whole run, so a replay can ask the`,
    '            same questions: the windows a sync asks for depend on "now"',
    `API keys:   ${keys}`,
    `Settings:   ${Object.entries(meta.settings).map(([k, v]) => `${k}=${v}`).join(' ') || '(all defaults)'}`,
    `Sync state at the start: ${state}`,
    '',
    'Each exchange holds the request (method, path, headers, JSON body) and the answer (status, headers, the',
    'decompressed body, its size on the wire and its content encoding), when it started (real time) and how long it',
    'took; a request that got no whole answer says how it failed. stdout.txt and stderr.txt hold what the command printed.',
    '',
    'Removed (meta.json "removed" says the same, with how many values of each kind):',
    ...meta.removed.map((r) => `  - ${r.what}: ${r.how} (${r.count})`),
    '',
    'Replay it (docs/sandbox.md, "Replaying a recording"):',
    '  occupancy-sync sandbox --replay <this directory> --port 4000',
    'prints the settings and the command line that run the recorded command against it, with its clock at the',
    'recorded instant.',
    '',
  ];
  return lines.join('\n');
}

export function writeReadme(out: string, meta: RecordingMeta): void {
  writeFileSync(join(out, README_FILE), readmeText(meta), { mode: FILE_MODE });
}
