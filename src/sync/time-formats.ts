import { parseIsoInstant, toIsoUtc, type IsoUtc } from '../time.ts';

/**
 * How an API writes an instant, in one vocabulary for both directions: the window bounds a stream sends
 * (`'{{window.from | epoch-seconds}}'`) and the times its records carry (`{ type: timestamp, format: epoch-milliseconds }`).
 * Pure: values in, values out.
 */
export const TIME_FORMATS = ['iso', 'iso-seconds', 'epoch-seconds', 'epoch-milliseconds', 'date'] as const;
export type TimeFormat = (typeof TIME_FORMATS)[number];

const DAY_MS = 86_400_000;

/** The finest instant a format can write: window bounds sent in it lie on this grid (run/plan.ts aligns them). */
export const FORMAT_UNIT_MS: Record<TimeFormat, number> = {
  iso: 1,
  'iso-seconds': 1000,
  'epoch-seconds': 1000,
  'epoch-milliseconds': 1,
  date: DAY_MS,
};

/** Formats that are numbers unless sent as text (`| string`). */
export const NUMERIC_FORMATS: ReadonlySet<TimeFormat> = new Set(['epoch-seconds', 'epoch-milliseconds']);

export const isTimeFormat = (value: unknown): value is TimeFormat => typeof value === 'string' && (TIME_FORMATS as readonly string[]).includes(value);

/** An instant (epoch ms, on the format's grid) as the API reads it. */
export function formatInstant(ms: number, format: TimeFormat, asText = false): string | number {
  switch (format) {
    case 'iso':
      return toIsoUtc(ms);
    case 'iso-seconds':
      return `${toIsoUtc(ms).slice(0, 19)}Z`;
    case 'date':
      return toIsoUtc(ms).slice(0, 10);
    case 'epoch-seconds':
      return asText ? String(Math.floor(ms / 1000)) : Math.floor(ms / 1000);
    case 'epoch-milliseconds':
      return asText ? String(ms) : ms;
  }
}

/** Years 1970 to 9999: an epoch value outside is not a time this API meant (or the wrong unit). */
const MAX_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
const EPOCH_TEXT = /^\d{1,16}(\.\d{1,6})?$/;

export type ParsedInstant = { ok: true; iso: IsoUtc; ms: number } | { ok: false; reason: string };

/** A value from an answer as an error names it: its type and (shortened) text. */
export function describe(value: unknown): string {
  if (value === undefined) return 'nothing (the field is missing)';
  if (value === null) return 'null';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  if (typeof value === 'number' || typeof value === 'boolean') return `${typeof value} ${String(value)}`;
  return Array.isArray(value) ? 'an array' : 'an object';
}

function epoch(value: unknown, unitMs: number, format: TimeFormat): ParsedInstant {
  const n = typeof value === 'number' ? value : typeof value === 'string' && EPOCH_TEXT.test(value) ? Number(value) : Number.NaN;
  const expected = `expected ${format} (a number, or digits in a string)`;
  if (!Number.isFinite(n) || n < 0) return { ok: false, reason: `${expected}, got ${describe(value)}` };
  const ms = Math.floor(n * unitMs);
  if (ms > MAX_MS) {
    // The usual mix-up, named: milliseconds read as seconds land tens of thousands of years ahead.
    const hint = format === 'epoch-seconds' && n / 1000 <= MAX_MS / 1000 ? ' (it looks like epoch milliseconds: format: epoch-milliseconds)' : '';
    return { ok: false, reason: `${format} ${String(value)} is after the year 9999${hint}` };
  }
  return { ok: true, ms, iso: toIsoUtc(ms) };
}

/** Reads an instant a record carries in `format`; nothing is guessed (a zone-less ISO time is refused, not local). */
export function parseInstantAs(value: unknown, format: TimeFormat): ParsedInstant {
  switch (format) {
    case 'epoch-seconds':
      return epoch(value, 1000, format);
    case 'epoch-milliseconds':
      return epoch(value, 1, format);
    case 'date': {
      const ms = typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value) ? parseIsoInstant(`${value}T00:00:00Z`) : undefined;
      return ms === undefined ? { ok: false, reason: `expected a date (YYYY-MM-DD), got ${describe(value)}` } : { ok: true, ms, iso: toIsoUtc(ms) };
    }
    default: {
      const ms = typeof value === 'string' ? parseIsoInstant(value) : undefined;
      if (ms !== undefined) return { ok: true, ms, iso: toIsoUtc(ms) };
      const hint =
        typeof value === 'number' || (typeof value === 'string' && EPOCH_TEXT.test(value))
          ? ' (a number: declare format: epoch-milliseconds or epoch-seconds)'
          : typeof value === 'string' && /T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(value)
            ? ' (a time without a zone is ambiguous: the API must give Z or an offset)'
            : '';
      return { ok: false, reason: `expected an ISO 8601 date-time with a zone (e.g. 2026-01-01T10:00:00Z), got ${describe(value)}${hint}` };
    }
  }
}
