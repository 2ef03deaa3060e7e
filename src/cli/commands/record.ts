import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CliContext, CommandModule } from '../context.ts';
import { ConfigError, UsageError } from '../../errors.ts';
import type { Replay } from '../../sandbox/replay.ts';

/**
 * `record --out DIR <command>` (src/app/record.ts), and `sandbox --replay DIR`, which sandbox.ts hands to
 * `replaySandbox` below: the two halves of one workflow (docs/sandbox.md, "Recording the real API and replaying it").
 */

/** How this CLI is started again as a child: the same Node, the entry script beside these sources or this build. */
export function cliInvocation(): { execPath: string; nodeArgs: string[]; entry: string } {
  const fromSources = import.meta.url.endsWith('.ts');
  const entry = fileURLToPath(new URL(`../../../bin/occupancy-sync.${fromSources ? 'ts' : 'js'}`, import.meta.url));
  // From the sources (a clone), the child needs the TypeScript loader this process was started with, or tsx's.
  const nodeArgs = fromSources && !process.execArgv.some((arg) => arg.includes('tsx')) ? ['--import', import.meta.resolve('tsx'), ...process.execArgv] : [...process.execArgv];
  return { execPath: process.execPath, nodeArgs, entry };
}

export const recordCommand: CommandModule = (program, ctx) => {
  program
    .command('record')
    .description(
      'Run check, sync or backfill and keep every request and answer it exchanged with the platform (auth and GraphQL, ' +
        'bodies decompressed, with status, headers and timing) in a directory, with API keys, secrets, tokens and ' +
        'signatures removed in every form. Hand the directory over; `sandbox --replay DIR` answers from it.',
    )
    .option('--out <dir>', 'directory to write the recording to (new, or empty)')
    .option('--load-state <dir>', 'instead: load the sync state a recording started from into DATABASE_URL, to replay it there')
    .argument('[command]', 'the command to run and record: check, sync or backfill')
    .argument('[args...]', "that command's own options, e.g. --stream occupancy")
    .allowUnknownOption()
    .addHelpText(
      'after',
      `
The command runs as it would without record, with the same configuration (.env, environment), except that:
  - its API_BASE_URL points at a recording proxy on 127.0.0.1, which forwards every request to the real
    API_BASE_URL and every answer back unchanged (gzip, Date header, failures);
  - its clock stands still at the moment it starts (so a replay asks the same questions: the windows a sync reads
    depend on "now"); timeouts and back-off still run in real time;
  - TOKEN_CACHE_FILE is not used (every token is obtained, and recorded, in the run).

The directory gets meta.json and README.txt (the command, its clock, its settings, the sync state it started from,
what was removed and how), exchanges/NNNNNN-*.json (one request and its answer each, in arrival order), and
stdout.txt, stderr.txt (what the command printed). Removed: API keys (replaced by recorded-key-N), API secrets,
tokens (their readable claims kept), Authorization and X-Service-Signature headers, webhook signature secrets and
custom header values, any JWT, and every secret of the configuration wherever it appears, as is, JSON-escaped,
URL-encoded, base64 or hex. The data itself (buildings, occupancy) is kept: it is what a replay answers with.

Before replaying a recording of a sync that started from saved sync state (any run but the first), load that state
into the replay's new database: \`DATABASE_URL=file:./data/replay.db occupancy-sync record --load-state ./recording\`

Exit code: the command's own (also when it failed: what was exchanged is kept). 64 when record itself is misused
(no command, a directory that is not empty), 78 for a configuration error.

Examples:
  $ occupancy-sync record --out ./recording sync
  $ occupancy-sync record --out ./recording-check check
  $ occupancy-sync record --out ./recording-jan backfill --from 2026-01-01 --to 2026-01-02 --stream occupancy
  $ tar czf recording.tgz recording      # hand it over; then: \`occupancy-sync sandbox --replay ./recording\``,
    )
    .action(async (command: string | undefined, args: string[], flags: { out?: string; loadState?: string }) => {
      if (flags.loadState !== undefined) return loadState(ctx, flags.loadState, flags.out !== undefined || command !== undefined);
      if (flags.out === undefined || command === undefined) {
        throw new UsageError(`record: ${flags.out === undefined ? '--out DIR is missing' : 'no command given'}. Fix: e.g. \`occupancy-sync record --out ./recording sync\``);
      }
      const { record } = await import('../../app/record.ts');
      const config = ctx.config();
      const result = await record({
        config,
        env: ctx.env,
        out: resolve(flags.out),
        command: [command, ...args],
        cli: cliInvocation(),
        stdout: ctx.stdout,
        stderr: ctx.stderr,
        signal: ctx.signal,
        logger: ctx.logger(),
      });
      // The command's own summary says 0.0s (its clock stood still); this is the real time it took.
      const seconds = (Date.parse(result.meta.finishedAt ?? result.meta.startedAt) - Date.parse(result.meta.startedAt)) / 1000;
      ctx.stderr.write(
        `record: ${result.meta.exchanges} exchange(s) in ${seconds.toFixed(1)}s kept in ${flags.out} (keys, secrets and tokens removed; README.txt says what and how); ` +
          `${command} exited ${result.exitCode}\n`,
      );
      ctx.exitCode = result.exitCode;
    });
};

/** `record --load-state DIR`: nothing runs, nothing is recorded (`other`: an --out or a command was given too). */
async function loadState(ctx: CliContext, dir: string, other: boolean): Promise<void> {
  if (other) {
    throw new UsageError('record --load-state runs nothing and records nothing. Fix: give either --load-state DIR alone, or --out DIR and a command');
  }
  const { loadRecordedState } = await import('../../app/record-state.ts');
  const { loaded, database } = await loadRecordedState(ctx.config(), resolve(dir), ctx.logger());
  ctx.stdout.write(
    loaded === 0
      ? 'the recorded run started from an empty sync state: nothing to load; replay into an empty database\n'
      : `loaded the sync state of ${loaded} stream(s) into ${database}; now run the recorded command against the replay\n`,
  );
}

/** What a user needs to run the recorded command against this replay. */
export function describeReplay(replay: Replay, spell: string): string {
  const { meta } = replay.recording;
  const lines = [
    `occupancy-sync sandbox replaying ${replay.recording.dir} on ${replay.url}`,
    `  recorded: occupancy-sync ${meta.command.join(' ')} at ${meta.startedAt} against ${meta.upstream} (exit code ${meta.exitCode ?? 'unknown'}, ${replay.recording.exchanges.length} exchanges)`,
    '',
    'API keys of the recording (the real ones were removed; any secret is accepted):',
    ...replay.keys.map((k) => `  ${k.key}   CUSTOMER_ID ${k.customerId ?? '(unknown)'}`),
    '',
  ];
  const [first] = replay.keys;
  const settings = Object.entries(meta.settings ?? {}).map(([k, v]) => `${k}=${v}`);
  if (replay.keys.length > 1) {
    const file = replay.keys.map((k) => ({ id: k.customerId, apiKey: k.key, apiSecretEnv: 'REPLAY_SECRET' }));
    lines.push('Example .env (several keys: put this JSON in a file and name it in CUSTOMERS_FILE):', `  ${JSON.stringify(file)}`, `API_BASE_URL=${replay.url}`, 'REPLAY_SECRET=replay');
  } else if (first) {
    lines.push('Example .env:', `API_BASE_URL=${replay.url}`, `API_KEY=${first.key}`, 'API_SECRET=replay', `CUSTOMER_ID=${first.customerId ?? ''}`);
  }
  lines.push(...settings);
  if (settings.length === 0) lines.push('# the recorded run used the default settings (no SYNC_*, HTTP_* variable was set)');
  lines.push(
    // In ./data, as the default database: ignored by git, with the API budget's file beside it.
    'DATABASE_URL=file:./data/replay.db',
    '',
    `The recorded command's clock stood still at ${meta.clock.frozenAt}; run it with the same clock and a new database:`,
    `  NODE_OPTIONS='--import=${`data:text/javascript,Date.now=()=>${meta.clock.epochMs}`}' ${spell} ${meta.command.join(' ')}`,
  );
  if (meta.stateAtStart && meta.stateAtStart.length > 0) {
    lines.push(
      '',
      `The recorded run started from saved sync state (${meta.stateAtStart.length} stream(s), meta.json "stateAtStart"); load it into the new database first:`,
      `  ${spell} record --load-state ${replay.recording.dir}`,
    );
  }
  lines.push('', 'A request the recording does not hold gets HTTP 400 and a GraphQL error saying why and the fix, and a log line here. Stop with Ctrl-C or SIGTERM.', '');
  return lines.join('\n');
}

/** `sandbox --replay DIR`: serves the recording until SIGINT/SIGTERM, then says what was and was not asked. */
export async function replaySandbox(ctx: CliContext, options: { dir: string; host: string; port: number }): Promise<void> {
  const [{ readRecording }, { startReplay }, { invocation }] = await Promise.all([
    import('../../sandbox/replay-load.ts'),
    import('../../sandbox/replay.ts'),
    import('../invocation.ts'),
  ]);
  const recording = readRecording(resolve(options.dir));
  let replay: Replay;
  try {
    replay = await startReplay({ recording, host: options.host, port: options.port, logger: ctx.logger() });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      throw new ConfigError(`sandbox --replay: cannot listen on ${options.host}:${options.port} (${code}); pick another with --port or --host`, { cause: error });
    }
    throw error;
  }
  ctx.stdout.write(describeReplay(replay, invocation()));
  if (!ctx.signal.aborted) {
    await new Promise<void>((done) => ctx.signal.addEventListener('abort', () => done(), { once: true }));
  }
  await replay.close();
  const unserved = replay.unserved().length;
  ctx.stdout.write(
    `replay stopped: ${replay.stats.served} recorded answer(s) served, ${unserved} not asked for, ${replay.stats.notInRecording} request(s) not in the recording\n`,
  );
}
