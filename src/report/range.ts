import { UsageError } from '../errors.ts';
import { parseInstant, parseIsoInstant } from '../time.ts';
import type { ReportRange } from './types.ts';
import { UTC, zoned } from './zone.ts';

/** Without --from, a report covers this many local dates before --to. */
export const DEFAULT_REPORT_DAYS = 7;

const DAY_MS = 86_400_000;
const LOCAL = /^(\d{4}-\d{2}-\d{2})(?:T(\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?))?$/;

/**
 * A --from/--to value as a local date: `today` (today's date; as --to, the report ends with yesterday); `now` (as
 * --to: up to this instant, so today so far is in; as --from: today); a date; a date-time without a zone (its date);
 * anything `parseInstant` reads (a date-time with a zone, `36h`, `7d`), as the date it falls on in `zone` (`--tz`,
 * UTC by default). A date that does not exist is refused, never rolled over into the next month. The report then
 * covers each building's own local dates: 2026-03-23 is the 23rd in Berlin for a Berlin building and in Kolkata for
 * one in Kolkata.
 */
export function parseDateArg(flag: string, text: string, now: number, zone: string = UTC): string {
  const value = text.trim();
  if (value === 'today' || (value === 'now' && flag !== '--to')) return zoned(now, zone).date;
  // Up to this instant: today so far is in (its rest of the working day counts as not measured yet).
  if (value === 'now') return addDays(zoned(now, zone).date, 1);
  const local = LOCAL.exec(value);
  if (local) {
    if (parseIsoInstant(`${local[1]}T${local[2] ?? '00:00'}Z`) === undefined) {
      throw new UsageError(`${flag} ${JSON.stringify(text)}: no such ${local[2] ? 'date or time' : 'date'}. Fix: use a date that exists, e.g. 2026-01-05`);
    }
    return local[1]!;
  }
  return zoned(parseInstant(flag, value, now), zone).date;
}

/** `date` moved by whole days. */
export function addDays(date: string, days: number): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);
}

/** Resolves --from/--to to local dates [from, to): by default the 7 dates before today (--to is exclusive). */
export function resolveRange(args: { from?: string | undefined; to?: string | undefined }, now: number, zone: string = UTC): ReportRange {
  const to = args.to !== undefined ? parseDateArg('--to', args.to, now, zone) : zoned(now, zone).date;
  const from = args.from !== undefined ? parseDateArg('--from', args.from, now, zone) : addDays(to, -DEFAULT_REPORT_DAYS);
  if (from >= to) {
    throw new UsageError(`--from ${from} is not before --to ${to} (--to is the day after the last one reported). Fix: give a --from earlier than --to, e.g. --from ${addDays(to, -7)} --to ${to}`);
  }
  return { from, to };
}
