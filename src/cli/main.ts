import { Command, CommanderError } from 'commander';
import { createContext, type CliContext, type CommandModule } from './context.ts';
import { ExitCode, exitCodeFor, OccupancySyncError } from '../errors.ts';
import { globalSecrets } from '../logger.ts';
import { commands } from './commands/index.ts';

export interface MainOptions {
  env?: Record<string, string | undefined>;
  stdout?: CliContext['stdout'];
  stderr?: CliContext['stderr'];
  /** Tests pass their own; otherwise SIGTERM and SIGINT abort it. */
  signal?: AbortSignal;
}

export function buildProgram(ctx: CliContext, modules: CommandModule[] = commands): Command {
  const program = new Command()
    .name('occupancy-sync')
    .description('Keep a SQL copy (SQLite or Postgres) of the occupancy platform: sync, receive webhooks, report.')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => void ctx.stdout.write(s),
      writeErr: (s) => void ctx.stderr.write(globalSecrets.scrub(s)),
    });
  for (const register of modules) register(program, ctx);
  return program;
}

/** Runs the CLI and resolves to the process exit code. */
export async function main(argv: string[], options: MainOptions = {}): Promise<number> {
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
  const ctx = createContext(options.env ?? process.env, {
    stdout: options.stdout ?? process.stdout,
    stderr: options.stderr ?? process.stderr,
  }, signal);
  const program = buildProgram(ctx);
  try {
    await program.parseAsync(argv);
    return ctx.exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.exitCode === 0) {
        return ExitCode.OK;
      }
      return ExitCode.USAGE;
    }
    const message = error instanceof OccupancySyncError ? error.message : String((error as Error)?.stack ?? error);
    ctx.stderr.write(`occupancy-sync: ${globalSecrets.scrub(message)}\n`);
    return exitCodeFor(error);
  } finally {
    cleanup();
  }
}
