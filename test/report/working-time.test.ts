import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError, ExitCode, exitCodeFor } from '../../src/errors.ts';
import {
  CalendarError,
  localDays,
  localHours,
  startOfLocalDate,
  workingCalendar,
  workingIntervals,
  workingMs,
  type WorkingCalendarInput,
} from '../../src/working-time.ts';
import { offsetAt, offsetSpans } from '../../src/zone-offsets.ts';

const MIN = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];

/** The reference reading of a wall clock: Intl's own parts, no arithmetic shared with the code under test. */
const readers = new Map<string, Intl.DateTimeFormat>();
function wall(zone: string, ms: number) {
  let f = readers.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', { timeZone: zone, weekday: 'short', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
    readers.set(zone, f);
  }
  const p = Object.fromEntries(f.formatToParts(ms).map((x) => [x.type, x.value]));
  return { date: `${p.year}-${p.month}-${p.day}`, hour: Number(p.hour), minute: Number(p.minute), second: Number(p.second), weekday: WEEKDAYS.indexOf(p.weekday!) + 1 };
}

const utc = (iso: string) => Date.parse(iso);
const dayOf = (zone: string, date: string) => {
  const start = startOfLocalDate(zone, date);
  return { start, end: localDays(zone, start, start + 1)[0]!.end };
};

/** 2026's DST days: [zone, date, hours that day]. Kolkata has none: any day is 24 hours, half an hour off UTC's. */
const DST_DAYS: Array<[string, string, number]> = [
  ['Europe/Berlin', '2026-03-29', 23],
  ['Europe/Berlin', '2026-10-25', 25],
  ['America/New_York', '2026-03-08', 23],
  ['America/New_York', '2026-11-01', 25],
  ['Australia/Sydney', '2026-04-05', 25],
  ['Australia/Sydney', '2026-10-04', 23],
  ['Australia/Adelaide', '2026-04-05', 25],
  ['Australia/Adelaide', '2026-10-04', 23],
  ['America/St_Johns', '2026-03-08', 23],
  ['America/St_Johns', '2026-11-01', 25],
  ['Asia/Kolkata', '2026-03-29', 24],
];
const ZONES = [...new Set(DST_DAYS.map(([z]) => z)), 'UTC', 'America/Santiago', 'Australia/Lord_Howe', 'Asia/Kathmandu', 'Pacific/Chatham'];

describe('local hours', () => {
  it.each(DST_DAYS)('%s on %s has %i hour buckets, as long as the day', (zone, date, hours) => {
    const day = dayOf(zone, date);
    expect(day.end - day.start).toBe(hours * HOUR);
    const found = localHours(zone, day.start, day.end);
    expect(found).toHaveLength(hours);
    expect(found.every((h) => h.end - h.start === HOUR && h.date === date)).toBe(true);
    expect(found[0]!.start).toBe(day.start);
    expect(found.at(-1)!.end).toBe(day.end);
  });

  it('Berlin skips 02:00 in spring and lives 02:00 twice in autumn, each hour keyed by its UTC start', () => {
    const spring = localHours('Europe/Berlin', utc('2026-03-28T23:00:00Z'), utc('2026-03-29T03:00:00Z'));
    expect(spring.map((h) => [new Date(h.start).toISOString(), h.hour])).toEqual([
      ['2026-03-28T23:00:00.000Z', 0],
      ['2026-03-29T00:00:00.000Z', 1],
      ['2026-03-29T01:00:00.000Z', 3],
      ['2026-03-29T02:00:00.000Z', 4],
    ]);
    const autumn = localHours('Europe/Berlin', utc('2026-10-24T23:00:00Z'), utc('2026-10-25T03:00:00Z'));
    expect(autumn.map((h) => [new Date(h.start).toISOString(), h.hour, h.weekday])).toEqual([
      ['2026-10-24T23:00:00.000Z', 1, 7],
      ['2026-10-25T00:00:00.000Z', 2, 7],
      ['2026-10-25T01:00:00.000Z', 2, 7],
      ['2026-10-25T02:00:00.000Z', 3, 7],
    ]);
  });

  it('in half-hour zones hours start at half past the UTC hour (Kolkata, St. John\'s, Adelaide)', () => {
    const [k] = localHours('Asia/Kolkata', utc('2026-01-05T03:00:00Z'), utc('2026-01-05T04:00:00Z'));
    expect(k).toEqual({ start: utc('2026-01-05T03:30:00Z'), end: utc('2026-01-05T04:30:00Z'), date: '2026-01-05', hour: 9, weekday: 1 });
    const [s] = localHours('America/St_Johns', utc('2026-07-06T11:00:00Z'), utc('2026-07-06T12:00:00Z'));
    expect(s).toMatchObject({ start: utc('2026-07-06T11:30:00Z'), hour: 9 });
    // Adelaide in January is +10:30 (summer time in the southern hemisphere), in July +09:30.
    expect(localHours('Australia/Adelaide', utc('2026-01-05T22:00:00Z'), utc('2026-01-05T23:00:00Z'))[0]).toMatchObject({ start: utc('2026-01-05T22:30:00Z'), hour: 9, date: '2026-01-06', weekday: 2 });
    expect(localHours('Australia/Adelaide', utc('2026-07-05T23:00:00Z'), utc('2026-07-06T00:00:00Z'))[0]).toMatchObject({ start: utc('2026-07-05T23:30:00Z'), hour: 9, date: '2026-07-06' });
  });

  it('Lord Howe Island\'s half-hour DST change makes a half-hour bucket: every change of offset starts an hour', () => {
    const spring = localHours('Australia/Lord_Howe', ...range(dayOf('Australia/Lord_Howe', '2026-10-04')));
    expect(spring.map((h) => (h.end - h.start) / MIN).slice(0, 4)).toEqual([60, 60, 30, 60]);
    expect(spring.map((h) => h.hour).slice(0, 4)).toEqual([0, 1, 2, 3]);
  });

  it('equal the wall clock read by Intl, tile the range, last at most an hour, and no wall hour starts inside one', () => {
    fc.assert(
      fc.property(fc.constantFrom(...ZONES), arbInstant, fc.integer({ min: 1, max: 96 }), (zone, from, span) => {
        const hours = localHours(zone, from, from + span * HOUR);
        expect(hours.length).toBeGreaterThanOrEqual(span - 2);
        hours.forEach((h, i) => {
          const w = wall(zone, h.start);
          expect({ date: h.date, hour: h.hour, weekday: h.weekday }).toEqual({ date: w.date, hour: w.hour, weekday: w.weekday });
          // An hour starts on the hour, or where the offset changes.
          if (w.minute !== 0 || w.second !== 0) expect(offsetAt(zone, h.start - 1)).not.toBe(offsetAt(zone, h.start));
          expect(h.end - h.start).toBeGreaterThan(0);
          expect(h.end - h.start).toBeLessThanOrEqual(HOUR);
          if (i > 0) expect(h.start).toBe(hours[i - 1]!.end);
          for (let t = h.start + 5 * MIN; t < h.end; t += 5 * MIN) expect(wall(zone, t).hour).toBe(h.hour);
        });
        if (hours.length) {
          expect(hours[0]!.start - from).toBeLessThan(HOUR);
          expect(hours.at(-1)!.start).toBeLessThan(from + span * HOUR);
        }
      }),
      { numRuns: 150 },
    );
  });

  it('refuses an unknown zone and a reversed range with a CalendarError naming the field, the value and the fix', () => {
    expect(() => localHours('Europe/Berln', 0, HOUR)).toThrow(CalendarError);
    expect(() => localHours('Europe/Berln', 0, HOUR)).toThrow(/^zone "Europe\/Berln": not a time zone this Node\.js knows\. Fix: use an IANA zone name such as Europe\/Berlin/);
    expect(() => localHours('UTC', HOUR, 0)).toThrow(/^toMs 0: before fromMs 3600000\. Fix: /);
    expect(() => localHours('UTC', 0.5, HOUR)).toThrow(/^fromMs 0\.5: not an instant in epoch milliseconds/);
  });
});

describe('local days', () => {
  it('a year of Berlin has 365 days, 23 hours on the spring DST day and 25 on the autumn one', () => {
    const days = localDays('Europe/Berlin', startOfLocalDate('Europe/Berlin', '2026-01-01'), startOfLocalDate('Europe/Berlin', '2027-01-01'));
    expect(days).toHaveLength(365);
    expect(days[0]).toMatchObject({ date: '2026-01-01', weekday: 4 });
    expect(days.filter((d) => d.end - d.start !== DAY).map((d) => [d.date, (d.end - d.start) / HOUR])).toEqual([
      ['2026-03-29', 23],
      ['2026-10-25', 25],
    ]);
    days.forEach((d, i) => {
      expect(wall('Europe/Berlin', d.start)).toMatchObject({ date: d.date, hour: 0, minute: 0, weekday: d.weekday });
      if (i > 0) expect(d.start).toBe(days[i - 1]!.end);
    });
  });

  it('a day whose midnight the clocks skip starts when they jump (Santiago, 2026-09-06 at 01:00)', () => {
    expect(startOfLocalDate('America/Santiago', '2026-09-06')).toBe(utc('2026-09-06T04:00:00Z'));
    expect(wall('America/Santiago', utc('2026-09-06T04:00:00Z'))).toMatchObject({ date: '2026-09-06', hour: 1 });
    const [day] = localDays('America/Santiago', utc('2026-09-06T00:00:00Z'), utc('2026-09-06T12:00:00Z'));
    expect(day).toMatchObject({ start: utc('2026-09-06T04:00:00Z'), date: '2026-09-06', weekday: 7 });
    expect((day!.end - day!.start) / HOUR).toBe(23);
    expect(localHours('America/Santiago', day!.start, day!.end).map((h) => h.hour)).toEqual(Array.from({ length: 23 }, (_, i) => i + 1));
  });

  it('start at the local date\'s first instant, tile the range and follow each other by one date, in any zone', () => {
    fc.assert(
      fc.property(fc.constantFrom(...ZONES), arbInstant, fc.integer({ min: 1, max: 40 }), (zone, from, count) => {
        const days = localDays(zone, from, from + count * DAY);
        expect(days.length).toBeGreaterThanOrEqual(count - 1);
        days.forEach((d, i) => {
          const w = wall(zone, d.start);
          expect({ date: d.date, weekday: d.weekday }).toEqual({ date: w.date, weekday: w.weekday });
          expect(wall(zone, d.start - 1).date).not.toBe(d.date);
          expect(startOfLocalDate(zone, d.date)).toBe(d.start);
          expect(d.end - d.start).toBeGreaterThanOrEqual(22 * HOUR);
          expect(d.end - d.start).toBeLessThanOrEqual(26 * HOUR);
          expect(wall(zone, d.end - 1).date).toBe(d.date);
          if (i > 0) expect(d.start).toBe(days[i - 1]!.end);
        });
      }),
      { numRuns: 150 },
    );
  });

  it('where the clocks went back across midnight (St. John\'s at 00:01 in 2010) a date starts once: the day that began keeps the repeated hour', () => {
    const days = localDays('America/St_Johns', utc('2010-11-06T00:00:00Z'), utc('2010-11-09T00:00:00Z'));
    expect(days.map((d) => [d.date, new Date(d.start).toISOString(), (d.end - d.start) / HOUR])).toEqual([
      ['2010-11-06', '2010-11-06T02:30:00.000Z', 24],
      ['2010-11-07', '2010-11-07T02:30:00.000Z', 25],
      ['2010-11-08', '2010-11-08T03:30:00.000Z', 24],
    ]);
    // Hours keep the wall clock's own date: a minute of 7 November, then 23:01 of the 6th again.
    const hours = localHours('America/St_Johns', days[1]!.start, days[1]!.end);
    expect(hours.slice(0, 3).map((h) => [h.date, h.hour, (h.end - h.start) / MIN])).toEqual([
      ['2010-11-07', 0, 1],
      ['2010-11-06', 23, 59],
      ['2010-11-07', 0, 60],
    ]);
  });

  it('startOfLocalDate refuses a date that does not exist', () => {
    expect(() => startOfLocalDate('UTC', '2026-02-30')).toThrow(/^date "2026-02-30": not a real date in the form YYYY-MM-DD\. Fix: /);
  });
});

const calendar = (over: Partial<WorkingCalendarInput> & { zone: string }) => workingCalendar({ days: [1, 2, 3, 4, 5, 6, 7], start: '08:00', end: '18:00', ...over });

describe('working time', () => {
  it.each(DST_DAYS)('%s on %s: 08:00-18:00 is 10 hours', (zone, date) => {
    const day = dayOf(zone, date);
    expect(workingMs(calendar({ zone }), day.start, day.end)).toBe(10 * HOUR);
    const [[start, end]] = workingIntervals(calendar({ zone }), day.start, day.end) as [[number, number]];
    expect(wall(zone, start)).toMatchObject({ date, hour: 8, minute: 0 });
    expect(wall(zone, end)).toMatchObject({ date, hour: 18, minute: 0 });
  });

  it.each(DST_DAYS)('%s in the week of %s: Monday to Friday 08:00-18:00 is 50 hours, and 00:00-24:00 every day is the week\'s length', (zone, date) => {
    const dstDay = dayOf(zone, date);
    const days = localDays(zone, dstDay.start - 7 * DAY, dstDay.start + 7 * DAY);
    const monday = days.find((d) => d.weekday === 1 && d.start <= dstDay.start && dstDay.start < d.start + 7 * DAY)!;
    const nextMonday = days.find((d) => d.weekday === 1 && d.start > monday.start)!;
    expect(workingMs(calendar({ zone, days: [1, 2, 3, 4, 5] }), monday.start, nextMonday.start)).toBe(50 * HOUR);
    expect(workingMs(calendar({ zone, start: '00:00', end: '24:00' }), monday.start, nextMonday.start)).toBe(nextMonday.start - monday.start);
  });

  it('a 02:30 start on a spring-forward day begins when the clock jumps to 03:00; on the autumn day the repeated half hour counts twice', () => {
    const cal = calendar({ zone: 'Europe/Berlin', start: '02:30', end: '10:00' });
    const spring = dayOf('Europe/Berlin', '2026-03-29');
    const ordinary = dayOf('Europe/Berlin', '2026-03-28');
    const autumn = dayOf('Europe/Berlin', '2026-10-25');
    expect(workingMs(cal, ordinary.start, ordinary.end) / MIN).toBe(450);
    expect(workingMs(cal, spring.start, spring.end) / MIN).toBe(420);
    expect(workingIntervals(cal, spring.start, spring.end)).toEqual([[utc('2026-03-29T01:00:00Z'), utc('2026-03-29T08:00:00Z')]]);
    expect(workingMs(cal, autumn.start, autumn.end) / MIN).toBe(480);
    // 02:30-03:00 summer time, then the clock reads 02:00-02:30 again (not working time), then 02:30 to 10:00.
    expect(workingIntervals(cal, autumn.start, autumn.end)).toEqual([
      [utc('2026-10-25T00:30:00Z'), utc('2026-10-25T01:00:00Z')],
      [utc('2026-10-25T01:30:00Z'), utc('2026-10-25T09:00:00Z')],
    ]);
  });

  it('in Kolkata 09:00-17:00 is 03:30Z to 11:30Z, and each local hour bucket is wholly working or not', () => {
    const cal = calendar({ zone: 'Asia/Kolkata', start: '09:00', end: '17:00' });
    const day = dayOf('Asia/Kolkata', '2026-01-05');
    expect(workingIntervals(cal, day.start, day.end)).toEqual([[utc('2026-01-05T03:30:00Z'), utc('2026-01-05T11:30:00Z')]]);
    const perHour = localHours('Asia/Kolkata', day.start, day.end).map((h) => workingMs(cal, h.start, h.end) / MIN);
    expect(perHour).toEqual([...Array(9).fill(0), ...Array(8).fill(60), ...Array(7).fill(0)]);
  });

  it('a start at half past cuts its hour: the 08:00 bucket holds 30 working minutes, and the intervals give the cut', () => {
    const cal = calendar({ zone: 'America/New_York', start: '08:30', end: '17:00' });
    const day = dayOf('America/New_York', '2026-03-09');
    const hours = localHours('America/New_York', day.start, day.end);
    expect(hours.map((h) => workingMs(cal, h.start, h.end) / MIN).slice(7, 18)).toEqual([0, 30, 60, 60, 60, 60, 60, 60, 60, 60, 0]);
    expect(workingIntervals(cal, hours[8]!.start, hours[8]!.end)).toEqual([[hours[8]!.start + 30 * MIN, hours[8]!.end]]);
  });

  it('a holiday and a day not worked have no working time; a range that is not a whole day gets its share', () => {
    const cal = calendar({ zone: 'Australia/Sydney', days: [1, 2, 3, 4, 5], holidays: ['2026-01-26'] });
    const holiday = dayOf('Australia/Sydney', '2026-01-26');
    expect(workingMs(cal, holiday.start, holiday.end)).toBe(0);
    const saturday = dayOf('Australia/Sydney', '2026-01-24');
    expect(workingMs(cal, saturday.start, saturday.end)).toBe(0);
    const tuesday = dayOf('Australia/Sydney', '2026-01-27');
    expect(workingMs(cal, tuesday.start + 9 * HOUR, tuesday.start + 12 * HOUR + 15 * MIN)).toBe(3 * HOUR + 15 * MIN);
    expect(workingMs(cal, tuesday.start, tuesday.start)).toBe(0);
  });

  it('equals a per-minute count of the wall clock read by Intl, around DST changes and in half-hour zones', () => {
    const arbCalendar = fc.record({
      zone: fc.constantFrom(...ZONES),
      days: fc.uniqueArray(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 7 }),
      startQ: fc.integer({ min: 0, max: 94 }),
      lengthQ: fc.integer({ min: 1, max: 96 }),
      holidayOffset: fc.option(fc.integer({ min: -1, max: 3 }), { nil: null }),
    });
    fc.assert(
      fc.property(arbCalendar, arbNearChange, fc.integer({ min: 1, max: 3 * 24 * 60 }), (c, near, minutes) => {
        const from = near(c.zone);
        const to = from + minutes * MIN;
        const startMin = c.startQ * 15;
        const endMin = Math.min(24 * 60, startMin + c.lengthQ * 15);
        const hhmm = (m: number) => `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
        const holidays = c.holidayOffset === null ? [] : [wall(c.zone, from + c.holidayOffset * DAY).date];
        const cal = workingCalendar({ zone: c.zone, days: c.days, start: hhmm(startMin), end: hhmm(endMin), holidays });
        let expected = 0;
        for (let t = from; t < to; t += MIN) {
          const w = wall(c.zone, t);
          const m = w.hour * 60 + w.minute;
          if (c.days.includes(w.weekday) && !holidays.includes(w.date) && m >= startMin && m < endMin) expected += MIN;
        }
        expect(workingMs(cal, from, to)).toBe(expected);
        const intervals = workingIntervals(cal, from, to);
        expect(intervals.reduce((s, [a, b]) => s + b - a, 0)).toBe(expected);
        intervals.forEach(([a, b], i) => {
          expect(b).toBeGreaterThan(a);
          if (i > 0) expect(a).toBeGreaterThan(intervals[i - 1]![1]);
        });
      }),
      { numRuns: 60 },
    );
  });
});

describe('working calendars: refused input', () => {
  const base: WorkingCalendarInput = { zone: 'Europe/Berlin', days: [1, 2, 3, 4, 5], start: '08:00', end: '18:00' };
  const cases: Array<[string, Partial<WorkingCalendarInput>, string, RegExp]> = [
    ['an unknown zone', { zone: 'Mars/Olympus' }, 'zone', /^building Harbour Hall: zone "Mars\/Olympus": not a time zone this Node\.js knows\. Fix: use an IANA zone name/],
    ['a start without two-digit hours', { start: '8:00' }, 'start', /^building Harbour Hall: start "8:00": not a time of day in the form HH:MM \(00:00 to 23:59\)\. Fix: write it as 08:00/],
    ['an impossible minute', { end: '17:60' }, 'end', /^building Harbour Hall: end "17:60": .* Fix: write it as 18:00, or 24:00 for the end of the day$/],
    ['a start at 24:00', { start: '24:00' }, 'start', /^building Harbour Hall: start "24:00": not a time of day/],
    ['an end not after the start', { start: '22:00', end: '06:00' }, 'end', /^building Harbour Hall: end "06:00": not after start 22:00\. Fix: .*overnight shifts are not supported$/],
    ['an end equal to the start', { start: '09:00', end: '09:00' }, 'end', /not after start 09:00/],
    ['no working days', { days: [] }, 'days', /^building Harbour Hall: days \[\]: no working days\. Fix: list ISO weekdays/],
    ['a weekday 0', { days: [0, 1] }, 'days', /^building Harbour Hall: days \[0,1\]: 0 is not an ISO weekday\. Fix: use 1 \(Monday\) to 7 \(Sunday\)/],
    ['a holiday that is not a date', { holidays: ['2026-12-25', '2026-02-29'] }, 'holidays[1]', /^building Harbour Hall: holidays\[1\] "2026-02-29": not a real date in the form YYYY-MM-DD\. Fix: /],
  ];
  for (const [what, over, field, message] of cases) {
    it(`refuses ${what}, naming the field ${field}, the value and the fix`, () => {
      const make = () => workingCalendar({ ...base, ...over }, { label: 'building Harbour Hall' });
      expect(make).toThrow(message);
      try {
        make();
      } catch (error) {
        expect(error).toBeInstanceOf(CalendarError);
        expect(error).toBeInstanceOf(ConfigError);
        expect((error as CalendarError).field).toBe(field);
        expect(exitCodeFor(error)).toBe(ExitCode.CONFIG);
      }
    });
  }

  it('accepts 24:00 as the end of the day and a calendar of every day', () => {
    const cal = workingCalendar({ ...base, days: [1, 2, 3, 4, 5, 6, 7], start: '00:00', end: '24:00' });
    const day = dayOf('Europe/Berlin', '2026-10-25');
    expect(workingMs(cal, day.start, day.end)).toBe(25 * HOUR);
  });
});

describe('zone offsets', () => {
  it('cover a range with spans of constant offset, each later one starting at a change', () => {
    const spans = offsetSpans('Europe/Berlin', utc('2025-12-01T00:00:00Z'), utc('2027-01-01T00:00:00Z'));
    expect(spans.map((s) => [new Date(s.start).toISOString(), s.offsetMs / HOUR])).toEqual([
      ['2025-12-01T00:00:00.000Z', 1],
      ['2026-03-29T01:00:00.000Z', 2],
      ['2026-10-25T01:00:00.000Z', 1],
    ]);
    expect(spans.at(-1)!.end).toBe(utc('2027-01-01T00:00:00Z'));
    expect(offsetAt('Asia/Kolkata', utc('2026-06-01T00:00:00Z'))).toBe(5.5 * HOUR);
    expect(offsetAt('America/St_Johns', utc('2026-01-01T00:00:00Z'))).toBe(-3.5 * HOUR);
  });

  it('found a month at a time, equal the offsets Intl gives hour by hour across months and years, from any instant to any other', () => {
    // The offset at `ms` from the reference reader's parts: its wall clock minus the instant, to the minute.
    const reference = (zone: string, ms: number) => {
      const w = wall(zone, ms);
      const [y, mo, d] = w.date.split('-').map(Number) as [number, number, number];
      return Date.UTC(y, mo - 1, d, w.hour, w.minute) - Math.floor(ms / MIN) * MIN;
    };
    for (const zone of ['Europe/Berlin', 'Australia/Lord_Howe', 'America/Santiago', 'Africa/Casablanca', 'Asia/Kolkata']) {
      // Mid-month and mid-hour ends: the first span starts at fromMs, the last ends at toMs, whatever months they are in.
      const fromMs = utc('2025-11-17T13:45:00Z');
      const toMs = utc('2027-02-09T05:15:00Z');
      const spans = offsetSpans(zone, fromMs, toMs);
      expect(spans[0]!.start).toBe(fromMs);
      expect(spans.at(-1)!.end).toBe(toMs);
      for (let i = 1; i < spans.length; i++) {
        expect(spans[i]!.start).toBe(spans[i - 1]!.end);
        expect(spans[i]!.offsetMs).not.toBe(spans[i - 1]!.offsetMs);
        // A change is where the reference's offset changes: the second before it still has the old one.
        expect(reference(zone, spans[i]!.start)).toBe(spans[i]!.offsetMs);
        expect(reference(zone, spans[i]!.start - 1_000)).toBe(spans[i - 1]!.offsetMs);
      }
      let s = 0;
      for (let at = fromMs; at < toMs; at += HOUR) {
        while (spans[s]!.end <= at) s++;
        expect(spans[s]!.offsetMs, `${zone} at ${new Date(at).toISOString()}`).toBe(reference(zone, at));
        expect(offsetAt(zone, at)).toBe(spans[s]!.offsetMs);
      }
    }
  });
});

// ---- Generators -------------------------------------------------------------------------------------------------------

function range(day: { start: number; end: number }): [number, number] {
  return [day.start, day.end];
}

/** Any minute between 1995 and 2035. */
const arbInstant = fc.integer({ min: Date.UTC(1995, 0, 1) / MIN, max: Date.UTC(2035, 0, 1) / MIN }).map((m) => m * MIN);

/** A minute up to two days before one of the zone's changes of offset in 2018-2030 (any minute, for zones without). */
const arbNearChange = fc.tuple(fc.integer({ min: 2018, max: 2030 }), fc.nat(), fc.integer({ min: 0, max: 2 * 24 * 60 })).map(
  ([year, pick, before]) =>
    (zone: string): number => {
      const spans = offsetSpans(zone, Date.UTC(year, 0, 1), Date.UTC(year + 1, 0, 1));
      const changes = spans.slice(1).map((s) => s.start);
      const anchor = changes.length ? changes[pick % changes.length]! : Date.UTC(year, 0, 1) + (pick % 360) * DAY;
      return Math.floor(anchor / MIN) * MIN - before * MIN;
    },
);
