/**
 * The pure cores of time-weighted reporting, timed on this machine: a zone's local hours for a year (first call,
 * which reads the zone's offsets from Intl, and cached), working time per hour for a year, and the time-weighted
 * figures of one floor space for a year of hours (5-minute interval sensors and change-only ones), scaled to the
 * 50,000 spaces of a large portfolio. Prints a table; writes nothing.
 *
 *   node --import tsx bench/time-weight.ts [--repeat N]
 */
import { columnsOf, timeWeightColumns, defaultMaxHold, type Reading } from '../src/time-weight.ts';
import { localDays, localHours, startOfLocalDate, workingCalendar, workingMs } from '../src/working-time.ts';
import { formatNumber, median } from './stats.ts';

const repeat = Number(process.argv[process.argv.indexOf('--repeat') + 1]) || 20;
const PORTFOLIO_SPACES = 50_000;
const MIN = 60_000;

function time(run: () => unknown): number {
  const start = performance.now();
  run();
  return performance.now() - start;
}

function timeMedian(run: () => unknown, times = repeat): number {
  run();
  return median(Array.from({ length: times }, () => time(run)));
}

/** A deterministic pseudo-random sequence (mulberry32), so every run times the same data. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const rows: Array<[string, string, string]> = [];
const shown = (ms: number) => (ms < 0.1 ? `${formatNumber(ms * 1000, 1)} µs` : `${formatNumber(ms, ms < 10 ? 2 : 0)} ms`);
const row = (what: string, ms: number, note = '') => rows.push([what, shown(ms), note]);

// Zones whose offsets no earlier line of this process has read: the first call is cold.
const ZONES = ['Europe/Berlin', 'America/New_York', 'Australia/Sydney', 'Asia/Kolkata', 'America/St_Johns', 'Australia/Adelaide'];
const YEAR = 2026;
const cold: number[] = [];
const warm: number[] = [];
let hoursPerYear = 0;
for (const zone of ZONES) {
  // Nothing has read these years of this zone yet: the first call reads its offsets (the year after too, where the
  // last hour ends).
  cold.push(time(() => localHours(zone, Date.UTC(YEAR + 5, 0, 1), Date.UTC(YEAR + 6, 0, 1))));
  const from = startOfLocalDate(zone, `${YEAR}-01-01`);
  const to = startOfLocalDate(zone, `${YEAR + 1}-01-01`);
  warm.push(timeMedian(() => (hoursPerYear = localHours(zone, from, to).length)));
}
row(`Local hours of one zone for a year, first call (${ZONES.length} zones, median)`, median(cold), 'reads the zone\'s offsets from Intl, then cached');
row(`Local hours of one zone for a year, cached (${hoursPerYear} hours)`, median(warm), `median of ${repeat} x ${ZONES.length} zones`);
row('Local days of one zone for a year, cached', timeMedian(() => localDays('Europe/Berlin', startOfLocalDate('Europe/Berlin', `${YEAR}-01-01`), startOfLocalDate('Europe/Berlin', `${YEAR + 1}-01-01`))));

const calendar = workingCalendar({ zone: 'Europe/Berlin', days: [1, 2, 3, 4, 5], start: '08:00', end: '18:00', holidays: [`${YEAR}-12-25`] });
const berlinHours = localHours('Europe/Berlin', startOfLocalDate('Europe/Berlin', `${YEAR}-01-01`), startOfLocalDate('Europe/Berlin', `${YEAR + 1}-01-01`));
let working = 0;
row(
  'Working time of each local hour of a year (one call per hour)',
  timeMedian(() => {
    working = 0;
    for (const h of berlinHours) working += workingMs(calendar, h.start, h.end);
  }),
  `${formatNumber(working / 3_600_000)} working hours`,
);

const bounds = [...berlinHours.map((h) => h.start), berlinHours.at(-1)!.end];
const yearFrom = bounds[0]!;
const yearTo = bounds.at(-1)!;

function intervalReadings(stepMs: number): Reading[] {
  const next = random(1);
  const out: Reading[] = [];
  for (let t = yearFrom; t < yearTo; t += stepMs) {
    // A missed sample now and then, so holds and gaps both occur.
    if (next() < 0.02) continue;
    const headcount = Math.floor(next() * 8);
    out.push({ at: t + Math.floor(next() * 1_000), occupied: headcount > 0, headcount });
  }
  return out;
}

function changeReadings(perDay: number): Reading[] {
  const next = random(2);
  const out: Reading[] = [];
  let occupied = false;
  for (let t = yearFrom; t < yearTo; t += Math.floor(next() * (2 * 86_400_000) / perDay) + 1) {
    occupied = !occupied;
    out.push({ at: t, occupied, headcount: null });
  }
  return out;
}

for (const [name, readings, maxHoldMs] of [
  ['5-minute interval sensor', intervalReadings(5 * MIN), defaultMaxHold('interval', 5 * MIN)],
  ['1-minute interval sensor', intervalReadings(MIN), defaultMaxHold('interval', MIN)],
  ['change-only sensor, about 20 changes a day', changeReadings(20), defaultMaxHold('change')],
] as const) {
  const columns = columnsOf(readings);
  const ms = timeMedian(() => timeWeightColumns(columns, bounds, { maxHoldMs }), Math.max(5, Math.floor(repeat / 2)));
  row(`Time-weighted figures of one space for a year of hours, ${name} (${formatNumber(readings.length)} readings)`, ms, `x ${formatNumber(PORTFOLIO_SPACES)} spaces: ${formatNumber((ms * PORTFOLIO_SPACES) / 1000, 0)} s of one core`);
}

// What an aggregate refresher does for a late reading: the hours it touches, not the year.
const readings = columnsOf(intervalReadings(5 * MIN));
const late = readings.at[Math.floor(readings.at.length / 2)]!;
const k = bounds.findIndex((b) => b > late) - 1;
const touched = bounds.slice(k, k + 2);
row('Refresh of the one hour a late 5-minute reading touches (figures of one bucket)', timeMedian(() => timeWeightColumns(readings, touched, { maxHoldMs: defaultMaxHold('interval', 5 * MIN) }), repeat * 50), 'binary search into a year of readings');

const width = [0, 1, 2].map((i) => Math.max(...rows.map((r) => r[i]!.length), ['What', 'Time', 'Note'][i]!.length));
const line = (cells: readonly string[]) => `| ${cells.map((c, i) => (i === 1 ? c.padStart(width[i]!) : c.padEnd(width[i]!))).join(' | ')} |`;
console.log(`Node ${process.version}, ${repeat} repeats, medians`);
console.log(line(['What', 'Time', 'Note']));
console.log(line(width.map((w) => '-'.repeat(w))));
for (const r of rows) console.log(line(r));
