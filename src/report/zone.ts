import { UsageError } from '../errors.ts';

/**
 * Local time for reports (`report --tz Europe/Berlin`): the views bucket readings by UTC hour; a report shows each
 * hour in the zone it is read in. Hours start where the UTC hour starts, so in a zone with a half-hour offset
 * (Asia/Kolkata) an hour shown as 09:00 is the one from 09:30 to 10:30.
 */

export const UTC = 'UTC';

/** The zone as given, when Intl knows it; a usage error naming the flag otherwise. */
export function validateTimeZone(zone: string, flag = '--tz'): string {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return zone;
  } catch {
    throw new UsageError(`${flag} ${JSON.stringify(zone)}: not a time zone. Fix: use an IANA zone such as Europe/Berlin, America/New_York or UTC`);
  }
}

export interface ZonedTime {
  /** Monday = 0 (ISO weekday order). */
  weekday: number;
  hour: number;
  /** `2026-01-05` */
  date: string;
  /** `09:00` */
  time: string;
  /** `Mon 05 Jan 2026` */
  day: string;
}

const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];
const formatters = new Map<string, Intl.DateTimeFormat>();
const cache = new Map<string, ZonedTime>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', {
      timeZone: zone,
      hourCycle: 'h23',
      weekday: 'short',
      year: 'numeric',
      month: 'short',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
    });
    formatters.set(zone, f);
  }
  return f;
}

/** The wall-clock reading of `ms` in `zone` (cached: reports ask for the same hours many times). */
export function zoned(ms: number, zone: string): ZonedTime {
  const key = `${zone}\u0000${ms}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const parts = Object.fromEntries(formatter(zone).formatToParts(ms).map((p) => [p.type, p.value])) as Record<string, string>;
  const month = new Date(Date.UTC(2000, ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'].indexOf(parts.month!), 1));
  const value: ZonedTime = {
    weekday: WEEKDAYS.indexOf(parts.weekday!),
    hour: Number(parts.hour),
    date: `${parts.year}-${String(month.getUTCMonth() + 1).padStart(2, '0')}-${parts.day}`,
    time: `${parts.hour}:${parts.minute}`,
    day: `${parts.weekday} ${parts.day} ${parts.month} ${parts.year}`,
  };
  if (cache.size > 100_000) cache.clear();
  cache.set(key, value);
  return value;
}

/** How far the wall clock of `zone` is ahead of UTC at `ms`, in milliseconds. */
export function offsetAt(ms: number, zone: string): number {
  const t = zoned(ms, zone);
  const wall = Date.UTC(Number(t.date.slice(0, 4)), Number(t.date.slice(5, 7)) - 1, Number(t.date.slice(8, 10)), t.hour, Number(t.time.slice(3, 5)));
  return wall - Math.floor(ms / 60_000) * 60_000;
}

/**
 * The instant a wall-clock reading of `zone` names, given as the epoch milliseconds the same reading would have in
 * UTC. A reading the clocks skip (the hour lost when DST starts) is read with the offset before the change, so it
 * lands just after the gap; a reading that happens twice (the hour repeated when DST ends) means the first one.
 */
export function fromWallClock(wallAsUtc: number, zone: string): number {
  const before = offsetAt(wallAsUtc - 86_400_000, zone);
  const after = offsetAt(wallAsUtc + 86_400_000, zone);
  // Try the larger offset first: of two readings of an ambiguous wall time, it names the earlier instant.
  for (const offset of before >= after ? [before, after] : [after, before]) {
    if (offsetAt(wallAsUtc - offset, zone) === offset) return wallAsUtc - offset;
  }
  return wallAsUtc - before;
}
