import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import { requireApi, type Config, type Env } from '../config.ts';
import { UsageError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { redactUrl } from '../net.ts';
import { RECORDING_FORMAT, RECORDING_VERSION, type RecordedState, type RecordingMeta } from '../sandbox/replay-format.ts';
import { openForReading } from './database.ts';
import { prepareOutDir, writeExchange, writeMeta, writeOutput, writeReadme } from './record-files.ts';
import { startRecordingProxy } from './record-proxy.ts';
import { RecordingRedactor } from './record-redact.ts';

/**
 * `occupancy-sync record --out DIR <command>`: runs the command as a child process, its API_BASE_URL pointed at the
 * recording proxy (record-proxy.ts) and its clock frozen at the start, and keeps every exchange, redacted
 * (record-redact.ts), in DIR (record-files.ts; the format: src/sandbox/replay-format.ts).
 *
 * Why a proxy and a child process rather than an undici interceptor in this process: the command runs unchanged
 * (no hook in src/api, whichever build runs it), what is kept is what went over the wire (gzip, retries, 401s and
 * re-authentications included), and the child's frozen clock does not touch the recorder's own timings.
 *
 * Why the clock stands still: the windows a sync asks for are computed from "now" to the millisecond (now minus
 * SYNC_SETTLE_DELAY, now minus SYNC_INITIAL_HISTORY), as is every row's polled_at. A replay can only ask the same
 * questions, and write the same rows, if its "now" is the recorded one; a clock that ran would give each stream of the
 * recorded run a slightly different now that no replay could know. So both runs see one instant: Date.now() is fixed
 * in the child by a one-line preload. Timers, timeouts and back-off are unaffected (they use monotonic time).
 */

/** The commands that can be recorded: the ones that talk to the platform and end by themselves. */
export const RECORDABLE_COMMANDS = ['check', 'sync', 'backfill'] as const;
const READS_STATE = new Set(['sync', 'backfill']);
const MAX_OUTPUT_KEPT = 4 * 1024 * 1024;
/** Settings that change what a command asks the platform (windows, pages, filters, documents, retries). */
const QUESTION_SETTINGS = /^(?:SYNC_\w+|HTTP_\w+|BUILDINGS_NAME_LIKE|TOKEN_REFRESH_MARGIN|DEFINITIONS_FILE)$/;

export interface RecordOptions {
  config: Config;
  /** The environment the command would have run in (the recorder's, .env included). */
  env: Env;
  out: string;
  /** The command and its arguments, e.g. ['sync', '--stream', 'occupancy']. */
  command: string[];
  /** How to start the CLI: the Node executable, its flags (a TypeScript loader in a clone) and the entry script. */
  cli: { execPath: string; nodeArgs: string[]; entry: string };
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  /** Aborting it stops the command as SIGTERM would (it finishes its page), and the recording is completed. */
  signal: AbortSignal;
  logger: Logger;
  /** Real time, for the recording's times; default Date.now. */
  now?: () => number;
}

export interface RecordResult {
  exitCode: number;
  meta: RecordingMeta;
}

/** The preload that fixes Date.now() in the recorded (or replayed) command; also printed by `sandbox --replay`. */
export function frozenClockImport(epochMs: number): string {
  return `data:text/javascript,Date.now=()=>${Math.trunc(epochMs)}`;
}

/** The sync state the command will start from (its windows depend on it), or why it could not be read. */
export async function stateAtStart(config: Config, logger: Logger): Promise<{ states?: RecordedState[]; note?: string }> {
  if (config.database.dialect === 'sqlite' && config.database.sqlitePath && !existsSync(config.database.sqlitePath)) return { states: [] };
  try {
    const store = await openForReading(config.database, logger);
    try {
      const states = await store.listStates();
      return {
        states: states.map((s) => ({
          customerId: s.customerId,
          stream: s.stateKey,
          watermark: s.watermark,
          windowStart: s.windowStart,
          windowEnd: s.windowEnd,
          pageCursor: s.pageCursor,
          rangeStart: s.rangeStart,
          rangeEnd: s.rangeEnd,
        })),
      };
    } finally {
      await store.close();
    }
  } catch (error) {
    const message = (error as Error).message.split('\n')[0]!;
    // A database the command has not created its tables in yet holds no state: the run starts from nothing.
    if (message.includes('holds no occupancy-sync tables yet')) return { states: [] };
    return { note: `the database could not be read before the run: ${message}` };
  }
}

function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  return 128 + (signal ? (constants.signals[signal] ?? 0) : 0);
}

export async function record(options: RecordOptions): Promise<RecordResult> {
  const now = options.now ?? Date.now;
  const [name] = options.command;
  if (!name || !(RECORDABLE_COMMANDS as readonly string[]).includes(name)) {
    throw new UsageError(`record: ${name === undefined ? 'no command given' : `cannot record ${JSON.stringify(name)}`}. Fix: name one of ${RECORDABLE_COMMANDS.join(', ')}, e.g. \`occupancy-sync record --out ./recording sync\``);
  }
  const { apiBaseUrl, customers } = requireApi(options.config);
  prepareOutDir(options.out);

  const redactor = new RecordingRedactor(customers);
  const state = READS_STATE.has(name) ? await stateAtStart(options.config, options.logger) : {};
  let exchanges = 0;
  const proxy = await startRecordingProxy({
    upstream: apiBaseUrl,
    logger: options.logger,
    now,
    onExchange: async (captured) => {
      await writeExchange(options.out, redactor.redact(captured));
      exchanges += 1;
    },
  });

  const frozenAt = now();
  const meta: RecordingMeta = {
    format: RECORDING_FORMAT,
    version: RECORDING_VERSION,
    command: options.command.map((arg) => redactor.scrub(arg)),
    upstream: redactUrl(apiBaseUrl),
    clock: { frozenAt: new Date(frozenAt).toISOString(), epochMs: frozenAt },
    startedAt: new Date(frozenAt).toISOString(),
    finishedAt: null,
    exitCode: null,
    exchanges: 0,
    keys: redactor.keys(),
    settings: Object.fromEntries(
      Object.entries(options.env)
        .filter((entry): entry is [string, string] => QUESTION_SETTINGS.test(entry[0]) && typeof entry[1] === 'string' && entry[1].trim() !== '')
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => [k, redactor.scrub(v.trim())]),
    ),
    ...(state.states && { stateAtStart: state.states }),
    ...(state.note && { stateNote: redactor.scrub(state.note) }),
    removed: redactor.removals(),
  };
  // Written now too: a recorder killed mid-run still leaves a recording that says what it is.
  writeMeta(options.out, meta);

  const env: Record<string, string | undefined> = { ...options.env, API_BASE_URL: proxy.url };
  // A cached token would skip the auth exchange, and the recording could not tell whose key later requests used.
  delete env.TOKEN_CACHE_FILE;
  const output = { stdout: '', stderr: '' };
  let exitCode: number;
  try {
    exitCode = await runCommand(options, env, frozenAt, output);
  } finally {
    await proxy.close();
  }

  writeOutput(options.out, 'stdout.txt', redactor.scrub(output.stdout));
  writeOutput(options.out, 'stderr.txt', redactor.scrub(output.stderr));
  const final: RecordingMeta = { ...meta, finishedAt: new Date(now()).toISOString(), exitCode, exchanges, keys: redactor.keys(), removed: redactor.removals() };
  writeMeta(options.out, final);
  writeReadme(options.out, final);
  return { exitCode, meta: final };
}

/** The recorded command in a child process, its clock frozen at `frozenAt`, its output passed on and kept in `output`. */
function runCommand(options: RecordOptions, env: Record<string, string | undefined>, frozenAt: number, output: { stdout: string; stderr: string }): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const child = spawn(options.cli.execPath, [...options.cli.nodeArgs, '--import', frozenClockImport(frozenAt), options.cli.entry, ...options.command], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group: a terminal's Ctrl-C reaches the recorder only, which passes one SIGTERM on (two would
      // tell the command to stop at once instead of finishing its page).
      detached: true,
    });
    const keep = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      options[stream].write(text);
      if (output[stream].length < MAX_OUTPUT_KEPT) output[stream] += text;
    };
    child.stdout.on('data', keep('stdout'));
    child.stderr.on('data', keep('stderr'));
    const stop = () => child.kill('SIGTERM');
    options.signal.addEventListener('abort', stop, { once: true });
    // The recorder leaving at once (a second Ctrl-C) must not leave the command running without its proxy.
    process.once('exit', stop);
    child.once('error', (error) => {
      options.signal.removeEventListener('abort', stop);
      process.off('exit', stop);
      reject(error);
    });
    child.once('close', (code, signal) => {
      options.signal.removeEventListener('abort', stop);
      process.off('exit', stop);
      resolve(exitCodeOf(code, signal));
    });
  });
}
