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
    if (value && value.length >= 8) this.#values.add(value);
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
  const destination: DestinationStream = { write: (line: string) => void sink.write(secrets.scrub(line)) };
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
