import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { Command, CommanderError, type Option } from 'commander';
import { createContext, type CliContext, type CommandModule } from './context.ts';
import { ConfigError, ExitCode, exitCodeFor, OccupancySyncError } from '../errors.ts';
import { globalSecrets } from '../logger.ts';
import { commands } from './commands/index.ts';
import { packageVersion } from './version.ts';
import { invocation, spellHints } from './invocation.ts';
import { resolveTelemetry } from '../telemetry-config.ts';

export interface MainOptions {
  /** The environment; default: this process's, over the variables of `.env` in the working directory. */
  env?: Record<string, string | undefined>;
  stdout?: CliContext['stdout'];
  stderr?: CliContext['stderr'];
  /** Tests pass their own; otherwise SIGTERM and SIGINT abort it. */
  signal?: AbortSignal;
  /**
   * When the user started waiting, on performance.now()'s clock, for the time a summary shows: the executable passes 0
   * (the process's start: loading the code counts, as the user waited for it); by default, when main() is called.
   */
  startedAtMs?: number;
}

export function buildProgram(ctx: CliContext, modules: CommandModule[] = commands): Command {
  const program = new Command()
    .name('occupancy-sync')
    .description('Keep a SQL copy (SQLite or Postgres) of the occupancy platform: sync, receive webhooks, report.')
    .version(packageVersion(), '-V, --version', 'print the version and exit')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => void ctx.stdout.write(s),
      writeErr: (s) => void ctx.stderr.write(globalSecrets.scrub(s)),
    });
  for (const register of modules) register(program, ctx);
  usageErrorsFirst(program);
  return program;
}

/** A command and its subcommands, depth first. */
function* allCommands(command: Command): Generator<Command> {
  yield command;
  for (const sub of command.commands) yield* allCommands(sub);
}

/**
 * Usage errors as one line each, the worst first. Commander checks required options before it looks at unknown ones,
 * so `backfill --form 2d` said "required option '--from <time>' not specified" and never named the typo. Required
 * options are therefore checked here, after commander has refused unknown options and arguments (a preAction hook runs
 * after both): an unknown option is reported first, with the close match. Every usage error is one line naming what
 * was wrong and where its command's --help is.
 */
function usageErrorsFirst(program: Command): void {
  const required = new Map<Command, Option[]>();
  for (const command of allCommands(program)) {
    const options = command.options.filter((o) => o.mandatory);
    for (const option of options) option.makeOptionMandatory(false);
    // An option that takes one value, given twice, kept the last in silence (`sync --stream occupancy --stream
    // buildings` synced buildings alone): refused, naming both. Options that collect their values parse their own.
    for (const option of command.options) {
      if ((!option.required && !option.optional) || option.variadic || option.parseArg) continue;
      let first: string | undefined;
      option.argParser((value: string) => {
        if (first !== undefined) {
          command.error(`error: option '${option.flags}' given twice (${JSON.stringify(first)}, then ${JSON.stringify(value)}): it takes one value`, { code: 'commander.optionRepeated' });
        }
        first = value;
        return value;
      });
    }
    if (options.length) required.set(command, options);
    const path: string[] = [];
    for (let c: Command | null = command; c?.parent; c = c.parent) path.unshift(c.name());
    command.showSuggestionAfterError(true).configureOutput({
      outputError: (text, write) => write(usageLine(text, path)),
    });
  }
  program.hook('preAction', (_root, action) => {
    for (const option of required.get(action) ?? []) {
      if (action.getOptionValue(option.attributeName()) === undefined) {
        action.error(`error: required option '${option.flags}' not specified`, { code: 'commander.missingMandatoryOptionValue' });
      }
    }
  });
}

/** Commander's error text (`error: unknown option '--form'\n(Did you mean --from?)`) as one line with the fix. */
export function usageLine(text: string, path: readonly string[]): string {
  const lines = text.trim().split('\n');
  let line = (lines[0] ?? '').replace(/^error: /, '').replace(/\.$/, '');
  const suggestion = lines.map((l) => /^\(Did you mean (.+)\?\)$/.exec(l.trim())).find(Boolean);
  if (suggestion) line += ` (did you mean ${suggestion[1]}?)`;
  const help = `\`occupancy-sync ${[...path, '--help'].join(' ')}\``;
  return `occupancy-sync: ${line}. Fix: ${suggestion ? `use ${suggestion[1]}; ` : ''}see ${help}\n`;
}

/** Runs the CLI and resolves to the process exit code. */
export async function main(argv: string[], options: MainOptions = {}): Promise<number> {
  const startedAtMs = options.startedAtMs ?? performance.now();
  let signal = options.signal;
  let cleanup = () => {};
  if (!signal) {
    const controller = new AbortController();
    let stopping = false;
    const onSignal = (name: NodeJS.Signals) => {
      // A second signal means "now": do not wait for the current page.
      if (stopping) process.exit(128 + (name === 'SIGINT' ? 2 : 15));
      stopping = true;
      controller.abort(new Error(`received ${name}`));
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    cleanup = () => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
    };
    signal = controller.signal;
  }
  if (!options.stdout) ignoreClosedReader(process.stdout);
  if (!options.stderr) ignoreClosedReader(process.stderr);
  let env: Record<string, string | undefined>;
  try {
    env = options.env ?? loadEnvironment(process.env, process.cwd());
  } catch (error) {
    (options.stderr ?? process.stderr).write(`occupancy-sync: ${(error as Error).message}\n`);
    cleanup();
    return exitCodeFor(error);
  }
  // Hints name the program as it was started (invocation.ts): set once the commands' names are known.
  let spell = (text: string) => text;
  const spelled = (stream: CliContext['stdout']): CliContext['stdout'] => ({
    write: (text: string) => stream.write(spell(text)),
    get isTTY() {
      return stream.isTTY;
    },
  });
  const ctx = createContext(env, {
    stdout: spelled(options.stdout ?? process.stdout),
    stderr: spelled(options.stderr ?? process.stderr),
  }, signal, startedAtMs);
  const program = buildProgram(ctx);
  const spelling = invocation(argv, env);
  const names = [...allCommands(program)].map((c) => c.name());
  spell = (text) => spellHints(text, spelling, names);
  let telemetry: { shutdown(): Promise<void> } | undefined;
  try {
    // Off unless an OTLP endpoint is set: then, and only then, OpenTelemetry is loaded (src/app/telemetry.ts).
    const traces = resolveTelemetry(env);
    if (traces) telemetry = await (await import('../app/telemetry.ts')).startTelemetry(traces, ctx.logger(), packageVersion());
    await program.parseAsync(argv);
    return ctx.exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.exitCode === 0) {
        return ExitCode.OK;
      }
      return ExitCode.USAGE;
    }
    ctx.statusLine?.done();
    ctx.stderr.write(`occupancy-sync: ${globalSecrets.scrub(errorLine(error, ctx.env.LOG_LEVEL))}\n`);
    return exitCodeFor(error);
  } finally {
    await telemetry?.shutdown();
    cleanup();
  }
}

/**
 * A reader that went away (`occupancy-sync report | head`) makes the next write fail with EPIPE, which Node raises as
 * an unhandled 'error' event: a stack trace, and a sync cut off mid-run. The rest of the output has nowhere to go,
 * so it is dropped; the command finishes its work, and its exit code says how that went. The listener stays for the
 * process's life: the error of a write can arrive after main() has returned.
 */
const guarded = new WeakSet<NodeJS.WriteStream>();
function ignoreClosedReader(stream: NodeJS.WriteStream): void {
  if (guarded.has(stream)) return;
  guarded.add(stream);
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
}

/**
 * The one line an error that ends the command prints. Expected failures (ours) are already one line with the fix;
 * anything else is a bug, shown as such, with its stack only when LOG_LEVEL asks for detail.
 */
export function errorLine(error: unknown, logLevel: string | undefined): string {
  if (error instanceof OccupancySyncError) return error.message;
  const detail = logLevel === 'debug' || logLevel === 'trace';
  if (error instanceof Error) {
    return detail && error.stack ? `unexpected error: ${error.stack}` : `unexpected error: ${error.message} (LOG_LEVEL=debug shows where)`;
  }
  return `unexpected error: ${String(error)}`;
}

/**
 * The environment a command sees: the variables of `.env` in the working directory, when that file exists, under
 * this process's own (the environment wins, as with docker and systemd). A `.env` that does not parse is a
 * configuration error naming the file.
 */
export function loadEnvironment(processEnv: NodeJS.ProcessEnv, cwd: string): Record<string, string | undefined> {
  const path = join(cwd, '.env');
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return processEnv;
    throw new ConfigError(`${path}: cannot read the file (${(error as NodeJS.ErrnoException).code ?? 'error'}). Fix: make it readable, or remove it`, { cause: error });
  }
  let parsed: Record<string, string>;
  try {
    parsed = parseEnv(text) as Record<string, string>;
  } catch (error) {
    throw new ConfigError(`${path}: not a valid .env file (${(error as Error).message}). Fix: use NAME=value lines`, { cause: error });
  }
  return { ...parsed, ...processEnv };
}
