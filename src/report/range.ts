import { parseDuration } from '../config.ts';
import { ConfigError } from '../errors.ts';
import { toIsoUtc } from '../store/types.ts';
import type { ReportRange } from './types.ts';

/** Without --from, a report covers this much time before --to (or now). */
export const DEFAULT_REPORT_SPAN_MS = 7 * 86_400_000;

/**
 * Parses a --from/--to value: an ISO 8601 date or date-time (no offset means UTC), `now`, or a duration meaning
 * "that long before now" (`36h`, `7d`).
 */
export function parseTimeArg(flag: string, text: string, now: number): number {
  const value = text.trim();
  if (value === 'now') return now;
  const ago = parseDuration(value);
  if (ago !== undefined && /[a-z]$/i.test(value)) return now - ago;
  const match = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?)(Z|[+-]\d{2}:?\d{2})?)?$/i.exec(value);
  if (match) {
    const [, date, time, zone] = match;
    const ms = Date.parse(`${date}T${time ?? '00:00'}${zone ?? 'Z'}`);
    if (!Number.isNaN(ms)) return ms;
  }
  throw new ConfigError(
    `${flag} ${JSON.stringify(text)}: not a time. Fix: use an ISO date or time (2026-01-05, 2026-01-05T08:00Z), ` +
      '`now`, or a duration before now (36h, 7d)',
  );
}

/** Resolves --from/--to against now, defaulting to the 7 days before --to. */
export function resolveRange(args: { from?: string; to?: string }, now: number): ReportRange {
  const to = args.to ? parseTimeArg('--to', args.to, now) : now;
  const from = args.from ? parseTimeArg('--from', args.from, now) : to - DEFAULT_REPORT_SPAN_MS;
  if (from >= to) {
    throw new ConfigError(
      `--from ${toIsoUtc(from)} is not before --to ${toIsoUtc(to)}. Fix: give a --from earlier than --to`,
    );
  }
  return { from: toIsoUtc(from), to: toIsoUtc(to) };
}
