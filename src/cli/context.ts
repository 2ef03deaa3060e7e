import { Command } from 'commander';
import { resolveConfig, configSecrets, type Config, type Env } from '../config.ts';
import { createLogger, globalSecrets, type Logger } from '../logger.ts';
import { ExitCode } from '../errors.ts';
import { StatusLine } from './status-line.ts';

/** What every command receives: the environment, output streams and lazily resolved config and logger. */
export interface CliContext {
  env: Env;
  stdout: { write(text: string): unknown; isTTY?: boolean };
  stderr: { write(text: string): unknown; isTTY?: boolean };
  /** Resolves and validates the configuration once (throws ConfigError), and registers its secrets for scrubbing. */
  config(): Config;
  logger(): Logger;
  /** Set by an action to report its outcome; main() returns it. */
  exitCode: number;
  /** Aborted on SIGTERM/SIGINT; long-running commands pass it down so they finish the current page and stop. */
  signal: AbortSignal;
  /** The live line on a terminal's stderr (progress), or undefined when stderr is not a terminal. */
  statusLine: StatusLine | undefined;
  /** How long the user has waited for this command so far, in milliseconds (the time a summary shows). */
  waitedMs(): number;
}

export function createContext(
  env: Env,
  io: Pick<CliContext, 'stdout' | 'stderr'>,
  signal: AbortSignal,
  /** When the user started waiting, on performance.now()'s clock: 0 is the process's start (the executable's case). */
  startedAtMs = performance.now(),
): CliContext {
  let config: Config | undefined;
  let logger: Logger | undefined;
  const statusLine = io.stderr.isTTY === true ? new StatusLine(io.stderr) : undefined;
  const ctx: CliContext = {
    env,
    ...io,
    exitCode: ExitCode.OK,
    signal,
    statusLine,
    waitedMs: () => performance.now() - startedAtMs,
    config() {
      if (!config) {
        config = resolveConfig(env);
        for (const secret of configSecrets(config)) globalSecrets.add(secret);
      }
      return config;
    },
    logger() {
      if (!logger) {
        const level = (() => {
          try {
            return ctx.config().logLevel;
          } catch {
            return 'info';
          }
        })();
        // Log lines go through the command's stderr (main() spells hints there; tests search it for secrets), pretty
        // on a terminal. https://no-color.org: any non-empty NO_COLOR turns colours off.
        const color = !env.NO_COLOR;
        logger = createLogger({
          level,
          color,
          pretty: ctx.stderr.isTTY === true,
          destination: { write: (line: string) => ctx.stderr.write(line) },
          ...(statusLine && { statusLine }),
        });
      }
      return logger;
    },
  };
  return ctx;
}

export type CommandModule = (program: Command, ctx: CliContext) => void;
