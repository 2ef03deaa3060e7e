import pino, { type Logger, type DestinationStream } from 'pino';
import pretty from 'pino-pretty';

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
 * Every secret value the process knows (API secrets, tokens, webhook secrets) is registered here, and the log
 * destination replaces any occurrence of one in the serialized line. This second net catches secrets that slipped
 * into free text, such as an error message quoting a request.
 */
export class SecretRegistry {
  readonly #values = new Set<string>();
  add(value: string | undefined | null): void {
    // Very short values would censor ordinary words; real secrets and tokens are long.
    if (value && value.length >= 8) {
      this.#values.add(value);
      for (const tap of taps) tap.secret?.(value);
    }
  }
  delete(value: string | undefined | null): void {
    if (value) this.#values.delete(value);
  }
  scrub(text: string): string {
    let out = text;
    for (const value of this.#values) {
      if (out.includes(value)) out = out.split(value).join(CENSOR);
    }
    return out;
  }
  get size(): number {
    return this.#values.size;
  }
}

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
  return () => void taps.delete(tap);
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
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const secrets = options.secrets ?? globalSecrets;
  const usePretty = options.pretty ?? (!options.destination && process.stderr.isTTY === true);
  const sink: { write(line: string): unknown } = usePretty
    ? pretty({ colorize: true, destination: 2, sync: true })
    : (options.destination ?? { write: (line: string) => process.stderr.write(line) });
  const destination: DestinationStream = {
    write: (line: string) => {
      const clean = secrets.scrub(line);
      for (const tap of taps) tap.line?.(clean, line);
      sink.write(clean);
    },
  };
  return pino(
    {
      name: options.name ?? 'occupancy-sync',
      level: options.level ?? 'info',
      redact: { paths: REDACT_PATHS, censor: CENSOR },
      timestamp: pino.stdTimeFunctions.isoTime,
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
