/**
 * An independent computation of the time-weighted aggregates for tests: minute by minute, with the local time of each
 * minute read from Intl (not from src/zone-offsets.ts or src/working-time.ts), the hold rule written out again. Exact
 * for readings on whole minutes with a max hold of whole minutes: each minute is then wholly held by one reading or
 * by none.
 */

export interface RefReading {
  space: string;
  at: number;
  status: string;
  headcount: number | null;
}

export interface RefCalendar {
  zone: string;
  days: number[];
  /** Minutes after local midnight. */
  start: number;
  end: number;
  holidays: string[];
}

export interface RefFigures {
  knownMs: number;
  occupiedMs: number;
  headcountMs: number;
  headcountKnownMs: number;
  peak: number | null;
  readings: number;
}

const MINUTE = 60_000;
const formats = new Map<string, Intl.DateTimeFormat>();
const WEEKDAYS: Record<string, number> = { Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6, Sun: 7 };

/** The wall clock of `zone` at `ms`: local date, hour, minute of the day and ISO weekday. */
const walls = new Map<string, ReturnType<typeof wallOf>>();
export function wall(zone: string, ms: number): ReturnType<typeof wallOf> {
  const key = `${zone}|${ms}`;
  let w = walls.get(key);
  if (!w) {
    if (walls.size > 500_000) walls.clear();
    walls.set(key, (w = wallOf(zone, ms)));
  }
  return w;
}

function wallOf(zone: string, ms: number): { date: string; hour: number; minuteOfDay: number; weekday: number } {
  let f = formats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', weekday: 'short' });
    formats.set(zone, f);
  }
  const p = Object.fromEntries(f.formatToParts(ms).map((x) => [x.type, x.value]));
  const hour = Number(p.hour);
  return { date: `${p.year}-${p.month}-${p.day}`, hour, minuteOfDay: hour * 60 + Number(p.minute), weekday: WEEKDAYS[p.weekday!]! };
}

export function isWorking(calendar: RefCalendar, w: ReturnType<typeof wall>): boolean {
  return calendar.days.includes(w.weekday) && !calendar.holidays.includes(w.date) && w.minuteOfDay >= calendar.start && w.minuteOfDay < calendar.end;
}

/**
 * Figures per `space|local date|local hour|working` (the two hours a DST end repeats fall together), for every minute
 * in [fromMs, toMs), keeping only the groups that hold data.
 */
export function referenceFigures(readings: readonly RefReading[], calendarOf: (space: string) => RefCalendar, maxHoldMs: number, fromMs: number, toMs: number): Map<string, RefFigures> {
  const bySpace = new Map<string, RefReading[]>();
  for (const r of readings) bySpace.set(r.space, [...(bySpace.get(r.space) ?? []), r]);
  const out = new Map<string, RefFigures>();
  for (const [space, list] of bySpace) {
    list.sort((a, b) => a.at - b.at);
    const calendar = calendarOf(space);
    let i = -1;
    for (let m = fromMs; m < toMs; m += MINUTE) {
      while (i + 1 < list.length && list[i + 1]!.at <= m) i++;
      const w = wall(calendar.zone, m);
      const key = `${space}|${w.date}|${w.hour}|${isWorking(calendar, w)}`;
      const r = i >= 0 ? list[i] : undefined;
      const held = r !== undefined && m < r.at + maxHoldMs;
      const startsHere = r !== undefined && r.at === m;
      if (!held && !startsHere) continue;
      const f = out.get(key) ?? { knownMs: 0, occupiedMs: 0, headcountMs: 0, headcountKnownMs: 0, peak: null, readings: 0 };
      if (startsHere) f.readings++;
      if (held) {
        if (r.status === 'CurrentlyOccupied' || r.status === 'Unoccupied') f.knownMs += MINUTE;
        if (r.status === 'CurrentlyOccupied') f.occupiedMs += MINUTE;
        if (r.headcount !== null) {
          f.headcountMs += r.headcount * MINUTE;
          f.headcountKnownMs += MINUTE;
          f.peak = Math.max(f.peak ?? -1, r.headcount);
        }
      }
      out.set(key, f);
    }
  }
  for (const [key, f] of out) if (f.readings === 0 && f.knownMs === 0 && f.headcountKnownMs === 0) out.delete(key);
  return out;
}

/** Working minutes and length of each local date of `calendar` that has a minute in [fromMs, toMs). */
export function referenceDays(calendar: RefCalendar, fromMs: number, toMs: number): Map<string, { lengthMs: number; workingMs: number }> {
  const out = new Map<string, { lengthMs: number; workingMs: number }>();
  for (let m = fromMs; m < toMs; m += MINUTE) {
    const w = wall(calendar.zone, m);
    const d = out.get(w.date) ?? { lengthMs: 0, workingMs: 0 };
    d.lengthMs += MINUTE;
    if (isWorking(calendar, w)) d.workingMs += MINUTE;
    out.set(w.date, d);
  }
  return out;
}
