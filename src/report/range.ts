import { UsageError } from '../errors.ts';
import { parseInstant, parseIsoInstant, toIsoUtc } from '../time.ts';
import type { ReportRange } from './types.ts';
import { fromWallClock, UTC } from './zone.ts';

/** Without --from, a report covers this much time before --to (or now). */
export const DEFAULT_REPORT_SPAN_MS = 7 * 86_400_000;

const LOCAL = /^(\d{4}-\d{2}-\d{2})(?:T(\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?))?$/;

/**
 * A --from/--to value: `now`; a date or a date-time without a zone, read on the wall clock of the report's zone
 * (`--tz`, UTC by default) so that `--tz Europe/Berlin --from 2026-01-05` starts at midnight in Berlin; anything
 * `parseInstant` reads (a date-time with a zone, `36h`, `7d`). A date that does not exist is refused, never rolled
 * over into the next month.
 */
export function parseTimeArg(flag: string, text: string, now: number, zone: string = UTC): number {
  const value = text.trim();
  if (value === 'now') return now;
  const local = LOCAL.exec(value);
  if (local) {
    const wall = parseIsoInstant(`${local[1]}T${local[2] ?? '00:00'}Z`);
    if (wall === undefined) {
      throw new UsageError(
        `${flag} ${JSON.stringify(text)}: no such ${local[2] ? 'date or time' : 'date'}. Fix: use a date that exists, e.g. 2026-01-05 or 2026-01-05T08:00`,
      );
    }
    return zone === UTC ? wall : fromWallClock(wall, zone);
  }
  return parseInstant(flag, value, now);
}

/** Resolves --from/--to against now, defaulting to the 7 days before --to. */
export function resolveRange(args: { from?: string | undefined; to?: string | undefined }, now: number, zone: string = UTC): ReportRange {
  const to = args.to ? parseTimeArg('--to', args.to, now, zone) : now;
  const from = args.from ? parseTimeArg('--from', args.from, now, zone) : to - DEFAULT_REPORT_SPAN_MS;
  if (from >= to) {
    throw new UsageError(`--from ${toIsoUtc(from)} is not before --to ${toIsoUtc(to)}. Fix: give a --from earlier than --to`);
  }
  return { from: toIsoUtc(from), to: toIsoUtc(to) };
}
