import type { Logger } from '../logger.ts';

/**
 * A one-shot run (`sync`, `backfill`) ends by printing each failure once, as a problem line with its fix. The engine
 * also logs a failure when it meets it (what the daemons, which print no problem lines, rely on), so a wrong key was
 * printed twice in a pipe and three times on a terminal (pino-pretty shows the message and `err.message`). Here error
 * lines that carry an `err` are held until the run's outcome is known: those whose error the report prints are
 * dropped, the others are logged then. At LOG_LEVEL=debug or trace nothing is held (the user asked for every detail,
 * stacks included).
 */
export interface HeldErrors {
  logger: Logger;
  /** Logs the held lines whose error is not among `reported` (or their causes); drops the others. */
  release(reported: readonly unknown[]): void;
}

interface Held {
  error: Error;
  emit(): void;
}

/** The error and the errors it wraps or that wrap it, as far as `{ cause }` goes. */
function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 8; e = (e as { cause?: unknown }).cause, depth += 1) chain.push(e);
  return chain;
}

export function holdErrors(logger: Logger): HeldErrors {
  const held: Held[] = [];
  if (logger.isLevelEnabled('debug')) return { logger, release: () => {} };
  const wrap = (target: Logger): Logger =>
    new Proxy(target, {
      get(object, property) {
        if (property === 'child') return (...args: unknown[]) => wrap((object.child as unknown as (...a: unknown[]) => Logger).apply(object, args));
        if (property === 'error') {
          return (first: unknown, ...rest: unknown[]) => {
            const error = (first as { err?: unknown } | null | undefined)?.err;
            const emit = () => (object.error as (...a: unknown[]) => void)(first, ...rest);
            if (typeof first === 'object' && error instanceof Error) held.push({ error, emit });
            else emit();
          };
        }
        const value: unknown = Reflect.get(object, property, object);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(object) : value;
      },
    });
  return {
    logger: wrap(logger),
    release(reported) {
      const printed = new Set(reported.flatMap(causes));
      for (const line of held.splice(0)) {
        if (!causes(line.error).some((e) => printed.has(e))) line.emit();
      }
    },
  };
}
