import { createRequire } from 'node:module';
import pino, { type Logger, type DestinationStream } from 'pino';
import type { PrettyOptions } from 'pino-pretty';
import { SecretRegistry, secretListeners } from './secrets.ts';

export { SecretRegistry };

export type { Logger };

/**
 * Key paths pino censors wherever they appear. This catches secrets passed as structured fields.
 */
const REDACT_PATHS = [
  'apiSecret',
  'ApiSecret',
  'secret',
  'secrets',
  'token',
  'idToken',
  'accessToken',
  'signatureSecret',
  'previousSecret',
  'authorization',
  'Authorization',
  'headers.authorization',
  'headers.Authorization',
  'headers["x-service-signature"]',
  '*.apiSecret',
  '*.ApiSecret',
  '*.secret',
  '*.secrets',
  '*.token',
  '*.idToken',
  '*.signatureSecret',
  '*.authorization',
  '*.Authorization',
  '*.headers.authorization',
  '*.headers.Authorization',
];

const CENSOR = '[REDACTED]';

/**
 * A process-wide observer of logging, for the test suite's secret audit (test/reliability/log-capture.setup.ts):
 * it sees every line of every logger made by createLogger/memoryLogger, both as emitted (after the scrub) and as
 * pino serialised it (before), and every value registered with any SecretRegistry. No tap is installed in
 * production, where this costs one empty loop per line.
 */
export interface LogTap {
  line?(emitted: string, beforeScrub: string): void;
  secret?(value: string): void;
}

const taps = new Set<LogTap>();

/** Installs a tap; returns the function that removes it. */
export function addLogTap(tap: LogTap): () => void {
  taps.add(tap);
  const listener = tap.secret?.bind(tap);
  if (listener) secretListeners.add(listener);
  return () => {
    taps.delete(tap);
    if (listener) secretListeners.delete(listener);
  };
}

/** The registry used when none is passed explicitly; the CLI registers config secrets into it at start. */
export const globalSecrets = new SecretRegistry();

export interface LoggerOptions {
  level?: string;
  /** Where lines go; defaults to stderr so stdout stays clean for command output (reports, JSON). */
  destination?: { write(line: string): unknown };
  /** Pretty, human output. Defaults to true when the destination is stderr and stderr is a TTY. */
  pretty?: boolean;
  secrets?: SecretRegistry;
  name?: string;
  /** Colours in pretty output (default true; the CLI turns them off when NO_COLOR is set). */
  color?: boolean;
  /**
   * A live line the terminal shows (backfill progress): cleared before each log line and drawn again after it, so
   * the two never end up on one line.
   */
  statusLine?: { clear(): void; restore(): void };
}

/**
 * Errors in log lines: type, message, code and the causes' messages. The stack only at debug and trace: an expected
 * failure (a wrong secret, an unreachable host) is one readable line, not a trace into our sources.
 */
function errorSerializer(withStack: boolean): (error: unknown) => unknown {
  const plain = (e: unknown, depth: number): unknown => {
    if (!(e instanceof Error)) return e;
    const out: Record<string, unknown> = { type: e.name, message: e.message };
    const code = (e as { code?: unknown }).code;
    if (code !== undefined) out.code = code;
    if (withStack && e.stack) out.stack = e.stack;
    if (e.cause !== undefined && depth < 3) out.cause = plain(e.cause, depth + 1);
    return out;
  };
  return (error) => plain(error, 0);
}

/**
 * pino-pretty and its dependencies load only for a terminal: cron, systemd and pipes get JSON lines and never pay for
 * it. Its synchronous formatter is used, so each line is written (around the status line) before the next one.
 */
function prettyFormatter(options: PrettyOptions): (line: string) => string {
  const { prettyFactory } = createRequire(import.meta.url)('pino-pretty') as { prettyFactory: (options: PrettyOptions) => (line: string) => string };
  return prettyFactory(options);
}

/**
 * A pino logger writing JSON lines to stderr (human-readable on a terminal), with secrets redacted by key and every
 * registered secret value scrubbed from each line.
 *
 * @example
 * import { createLogger } from 'occupancy-sync';
 * const logger = createLogger({ level: 'debug' });
 * logger.info({ customer: 'c1' }, 'sync started');
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const secrets = options.secrets ?? globalSecrets;
  const usePretty = options.pretty ?? (!options.destination && process.stderr.isTTY === true);
  const target = options.destination ?? { write: (line: string) => process.stderr.write(line) };
  const format = usePretty ? prettyFormatter({ colorize: options.color ?? true, ignore: 'pid,hostname' }) : undefined;
  const sink: { write(line: string): unknown } = format ? { write: (line: string) => target.write(format(line)) } : target;
  const destination: DestinationStream = {
    write: (line: string) => {
      const clean = secrets.scrub(line);
      for (const tap of taps) tap.line?.(clean, line);
      options.statusLine?.clear();
      sink.write(clean);
      options.statusLine?.restore();
    },
  };
  const level = options.level ?? 'info';
  const serialize = errorSerializer(level === 'debug' || level === 'trace');
  return pino(
    {
      name: options.name ?? 'occupancy-sync',
      level,
      redact: { paths: REDACT_PATHS, censor: CENSOR },
      timestamp: pino.stdTimeFunctions.isoTime,
      serializers: { err: serialize, error: serialize },
    },
    destination,
  );
}

/** A logger that drops everything; for library callers who do not pass one. */
export const silentLogger: Logger = pino({ level: 'silent' });

/** Collects log lines in memory: tests search them for secrets and reasons. */
export function memoryLogger(options: Omit<LoggerOptions, 'destination' | 'pretty'> = {}): {
  logger: Logger;
  lines: string[];
  records: () => Array<Record<string, unknown>>;
} {
  const lines: string[] = [];
  const logger = createLogger({
    ...options,
    level: options.level ?? 'trace',
    pretty: false,
    destination: { write: (line: string) => lines.push(line) },
  });
  return { logger, lines, records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/** Masks a secret for error messages: shows only its length. */
export function maskSecret(value: string | undefined): string {
  if (!value) return '(empty)';
  return `[${value.length} characters, hidden]`;
}
