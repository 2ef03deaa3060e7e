import { ConfigError } from './errors.ts';

/**
 * A time zone or working calendar that cannot be used: an unknown zone, a time that is not `HH:MM`, a working day
 * that ends before it starts. A calendar comes from configuration (working hours per building), so it is a
 * `ConfigError` and exits as one; `field` and `value` say what to correct, the message says how.
 */
export class CalendarError extends ConfigError {
  readonly field: string;
  readonly value: unknown;
  constructor(field: string, value: unknown, problem: string, fix: string, options?: { cause?: unknown; label?: string }) {
    const where = options?.label ? `${options.label}: ${field}` : field;
    super(`${where} ${showValue(value)}: ${problem}. Fix: ${fix}`, { cause: options?.cause });
    this.field = field;
    this.value = value;
  }
}

/** A value as an error message shows it: numbers as written (NaN too), anything else as short JSON. */
export function showValue(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  try {
    const text = JSON.stringify(value);
    if (text === undefined) return String(value);
    return text.length > 80 ? `${text.slice(0, 77)}...` : text;
  } catch {
    return String(value);
  }
}
