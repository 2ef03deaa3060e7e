import { UsageError } from '../errors.ts';
import { parseIsoInstant } from '../time.ts';

/**
 * Command-line values, parsed strictly: a flag that does not mean exactly one thing is a usage error (exit 64) that
 * quotes what was typed and says what would work, never a silent reinterpretation.
 */

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const AGO = /^(\d+)(h|d)$/;
const HOUR = 3_600_000;

/**
 * A command-line instant: `2026-01-01` (midnight UTC), an ISO 8601 date-time with a zone (`2026-01-01T06:00:00Z`,
 * `2026-01-01T08:00+02:00`), or a time before now in whole hours or days (`36h`, `7d`), rounded down to the hour so
 * that the same flag means the same instant all that hour (a backfill run again resumes instead of starting over).
 * A date that does not exist (2026-02-30) or a date-time without a zone is refused.
 */
export function parseInstant(flag: string, value: string, now = Date.now()): number {
  const text = value.trim();
  const ago = AGO.exec(text);
  if (ago) return Math.floor((now - Number(ago[1]) * (ago[2] === 'd' ? 24 * HOUR : HOUR)) / HOUR) * HOUR;
  const ms = DATE_ONLY.test(text) ? parseIsoInstant(`${text}T00:00:00Z`) : parseIsoInstant(text);
  if (ms !== undefined) return ms;
  let problem = 'not an ISO 8601 date or date-time with a zone, nor a time ago such as 36h or 7d';
  if (DATE_ONLY.test(text) || /^\d{4}-\d{2}-\d{2}T/.test(text)) {
    if (/T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(text)) problem = 'a time needs a zone (add Z for UTC)';
    else problem = 'no such date or time';
  }
  throw new UsageError(`${flag} ${JSON.stringify(value)}: ${problem}. Fix: use e.g. 2026-01-01, 2026-01-01T06:00:00Z or 7d (seven days ago)`);
}
