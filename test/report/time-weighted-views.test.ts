import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/index.ts';
import { isWorking, referenceDays, referenceFigures, wall, type RefFigures, type RefReading } from '../store/aggregate-reference.ts';
import { DIALECTS, fresh } from '../store/harness.ts';
import { waitFor } from '../support/wait.ts';
import { parseWorkingTime } from '../../src/config-working-time.ts';
import { BUILDINGS, C, CALENDARS, commit, FLOORS, FROM, LISTED, load, MAX_HOLD, MIN, record, SPACES, TO, makeReadings } from './tw-fixture.ts';

/**
 * The time-weighted views (db/views/*.sql, docs/reporting.md "Time-weighted views") against an independent computation:
 * the per-minute reference of test/store/aggregate-reference.ts (Intl for local time, the hold rule written out again),
 * summed up here per space, floor, building and portfolio, local hour and local day, into ratios of sums. Interval,
 * change-only and presence-only sensors, buildings in three zones (one with a half-hour offset), a listed space never
 * measured, a space only readings named, a sensor silent for hours and one for good, capacities known and unknown, and
 * a late delivery that changes an hour already read.
 */

// ---- The independent computation, summed up ----

/** Sums of a group of space figures; every time figure in integer ms. */
interface Sums {
  periodMs: number;
  knownMs: number;
  occupiedMs: number;
  headcountMs: number;
  headcountKnownMs: number;
  capacityMs: number | null;
  capacityHeadcountMs: number | null;
  readings: number;
  peak: number | null;
  peakUtilization: number | null;
}

const none = (periodMs: number): Sums => ({ periodMs, knownMs: 0, occupiedMs: 0, headcountMs: 0, headcountKnownMs: 0, capacityMs: null, capacityHeadcountMs: null, readings: 0, peak: null, peakUtilization: null });
const maxOf = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.max(a, b));
const addNull = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : a + b);

/** A space's figures as Sums (capacity 0 counts as unknown). */
function ofSpace(f: RefFigures | undefined, periodMs: number, capacity: number | null): Sums {
  const s = none(periodMs);
  if (f) Object.assign(s, { knownMs: f.knownMs, occupiedMs: f.occupiedMs, headcountMs: f.headcountMs, headcountKnownMs: f.headcountKnownMs, readings: f.readings, peak: f.peak });
  if (capacity) Object.assign(s, { capacityMs: capacity * s.headcountKnownMs, capacityHeadcountMs: s.headcountMs, peakUtilization: s.peak === null ? null : s.peak / capacity });
  return s;
}

function add(a: Sums, b: Sums): Sums {
  return {
    periodMs: a.periodMs + b.periodMs,
    knownMs: a.knownMs + b.knownMs,
    occupiedMs: a.occupiedMs + b.occupiedMs,
    headcountMs: a.headcountMs + b.headcountMs,
    headcountKnownMs: a.headcountKnownMs + b.headcountKnownMs,
    capacityMs: addNull(a.capacityMs, b.capacityMs),
    capacityHeadcountMs: addNull(a.capacityHeadcountMs, b.capacityHeadcountMs),
    readings: a.readings + b.readings,
    peak: maxOf(a.peak, b.peak),
    peakUtilization: maxOf(a.peakUtilization, b.peakUtilization),
  };
}

const ratio = (a: number | null, b: number | null) => (a === null || b === null || b === 0 ? null : a / b);
/** The figures a view shows for Sums, named as its columns; seconds as ms (exact), ratios to 9 digits. */
function shown(s: Sums, prefix = ''): Record<string, number | null> {
  const r9 = (v: number | null) => (v === null ? null : Math.round(v * 1e9) / 1e9);
  return {
    [`${prefix}${prefix ? 'seconds' : 'period_seconds'}`]: s.periodMs,
    [`${prefix}known_seconds`]: s.knownMs,
    [`${prefix}occupied_seconds`]: s.occupiedMs,
    [`${prefix}headcount_seconds`]: s.headcountMs,
    [`${prefix}headcount_known_seconds`]: s.headcountKnownMs,
    [`${prefix}capacity_seconds`]: s.capacityMs,
    [`${prefix}capacity_headcount_seconds`]: s.capacityHeadcountMs,
    ...(prefix ? {} : { readings: s.readings }),
    [`${prefix}coverage`]: r9(ratio(s.knownMs, s.periodMs)),
    [`${prefix}time_used`]: r9(ratio(s.occupiedMs, s.knownMs)),
    [`${prefix}avg_headcount`]: r9(ratio(s.headcountMs, s.headcountKnownMs)),
    [`${prefix}peak_headcount`]: s.peak,
    [`${prefix}utilization`]: r9(ratio(s.capacityHeadcountMs, s.capacityMs)),
    [`${prefix}peak_utilization`]: r9(s.peakUtilization),
  };
}

/** A view row's figure columns as `shown` gives them: seconds back to integer ms, ratios to 9 digits. */
function figuresOf(row: Record<string, unknown>, columns: readonly string[]): Record<string, number | null> {
  const out: Record<string, number | null> = {};
  for (const c of columns) {
    const v = row[c];
    if (v === null || v === undefined) out[c] = null;
    else if (c.endsWith('seconds')) out[c] = Math.round(Number(v) * 1000);
    else if (c === 'readings' || c.endsWith('peak_headcount')) out[c] = Number(v);
    else out[c] = Math.round(Number(v) * 1e9) / 1e9;
  }
  return out;
}

/** What the views should show, from the readings, computed minute by minute. */
function expected(readings: RefReading[]) {
  const figures = referenceFigures(readings, (s) => CALENDARS[SPACES[s]!.building]!, MAX_HOLD, FROM - 2 * 60 * MIN, TO + MAX_HOLD + 2 * 60 * MIN);
  const days = new Map(Object.entries(CALENDARS).map(([b, cal]) => [b, referenceDays(cal, FROM - 2 * 86_400_000, TO + 2 * 86_400_000)]));
  // Per space and local day (all hours, working hours), per space and hour slot.
  const bySpaceDay = new Map<string, { all?: RefFigures; working?: RefFigures }>();
  const plus = (a: RefFigures | undefined, b: RefFigures): RefFigures =>
    a ? { knownMs: a.knownMs + b.knownMs, occupiedMs: a.occupiedMs + b.occupiedMs, headcountMs: a.headcountMs + b.headcountMs, headcountKnownMs: a.headcountKnownMs + b.headcountKnownMs, peak: maxOf(a.peak, b.peak), readings: a.readings + b.readings } : { ...b };
  const firstDate = new Map<string, string>();
  const buildingDates = new Map<string, { lo: string; hi: string }>();
  for (const [key, f] of figures) {
    const [space, date, , working] = key.split('|') as [string, string, string, string];
    const day = bySpaceDay.get(`${space}|${date}`) ?? {};
    day.all = plus(day.all, f);
    if (working === 'true') day.working = plus(day.working, f);
    bySpaceDay.set(`${space}|${date}`, day);
    if (!firstDate.has(space) || date < firstDate.get(space)!) firstDate.set(space, date);
    const b = SPACES[space]!.building;
    const span = buildingDates.get(b) ?? { lo: date, hi: date };
    buildingDates.set(b, { lo: date < span.lo ? date : span.lo, hi: date > span.hi ? date : span.hi });
  }
  // space_days: each space on each day of its building's calendar from its first measured day (listed spaces never
  // measured: every day, they were listed before the first).
  const spaceDays: Array<{ space: string; date: string; all: Sums; working: Sums }> = [];
  for (const [space, s] of Object.entries(SPACES)) {
    const span = buildingDates.get(s.building);
    if (!span) continue;
    for (const [date, d] of days.get(s.building)!) {
      if (date < span.lo || date > span.hi) continue;
      if (firstDate.has(space) ? date < firstDate.get(space)! : !LISTED.includes(space)) continue;
      const f = bySpaceDay.get(`${space}|${date}`);
      spaceDays.push({ space, date, all: ofSpace(f?.all, d.lengthMs, s.capacity), working: ofSpace(f?.working, d.workingMs, s.capacity) });
    }
  }
  const group = (keyOf: (r: (typeof spaceDays)[number]) => string) => {
    const out = new Map<string, { spaces: number; all: Sums; working: Sums; buildings: Set<string> }>();
    for (const r of spaceDays) {
      const k = keyOf(r);
      const g = out.get(k) ?? { spaces: 0, all: none(0), working: none(0), buildings: new Set<string>() };
      out.set(k, { spaces: g.spaces + 1, all: add(g.all, r.all), working: add(g.working, r.working), buildings: g.buildings.add(SPACES[r.space]!.building) });
    }
    return out;
  };
  // Building hours: every slot (local date, hour, working) some space of the building measured; its period is the
  // building's spaces counted that day x the slot's length.
  const spacesOnDay = group((r) => `${SPACES[r.space]!.building}|${r.date}`);
  const slotLength = new Map<string, number>();
  for (const [b, cal] of Object.entries(CALENDARS)) {
    for (let m = FROM - 2 * 86_400_000; m < TO + 2 * 86_400_000; m += MIN) {
      const w = wall(cal.zone, m);
      const k = `${b}|${w.date}|${w.hour}|${isWorking(cal, w)}`;
      slotLength.set(k, (slotLength.get(k) ?? 0) + MIN);
    }
  }
  const buildingHours = new Map<string, Sums>();
  const floorHours = new Map<string, Sums>();
  const floorSpacesOnDay = group((r) => `${SPACES[r.space]!.building}|${SPACES[r.space]!.floor}|${r.date}`);
  for (const [key, f] of figures) {
    const [space, date, hour, working] = key.split('|') as [string, string, string, string];
    const { building, floor, capacity } = SPACES[space]!;
    const slot = `${building}|${date}|${hour}|${working}`;
    const length = slotLength.get(slot)!;
    const b = buildingHours.get(slot) ?? none(spacesOnDay.get(`${building}|${date}`)!.spaces * length);
    buildingHours.set(slot, add(b, ofSpace(f, 0, capacity)));
    const fk = `${building}|${floor}|${date}|${hour}|${working}`;
    const fl = floorHours.get(fk) ?? none(floorSpacesOnDay.get(`${building}|${floor}|${date}`)!.spaces * length);
    floorHours.set(fk, add(fl, ofSpace(f, 0, capacity)));
  }
  return {
    spaceDays,
    spaceHours: figures,
    floorDays: group((r) => `${SPACES[r.space]!.building}|${SPACES[r.space]!.floor}|${r.date}`),
    buildingDays: group((r) => `${SPACES[r.space]!.building}|${r.date}`),
    portfolioDays: group((r) => r.date),
    buildingHours,
    floorHours,
  };
}

const DAY_FIGURES = Object.keys({ ...shown(none(0)), ...shown(none(0), 'working_') });
const HOUR_FIGURES = Object.keys(shown(none(0)));
const sortBy = <T>(rows: T[], key: (r: T) => string) => [...rows].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
type Row = Record<string, unknown>;
const flag = (v: unknown) => String(v === true || v === 1 || v === '1');

async function expectViews(store: Store, readings: RefReading[]): Promise<void> {
  const want = expected(readings);

  const spaceHours = await store.query<Row>('SELECT * FROM space_hours');
  // The reference groups a local hour's slots (working or not) as the buckets are cut: compare per space and slot.
  const gotHours = new Map<string, Record<string, number | null>>();
  for (const r of spaceHours) {
    const key = `${r.floor_space_id}|${r.local_date}|${Number(r.local_hour)}|${flag(r.working)}`;
    expect(gotHours.has(key), key).toBe(false);
    gotHours.set(key, figuresOf(r, HOUR_FIGURES.filter((c) => c !== 'period_seconds')));
    const s = SPACES[String(r.floor_space_id)]!;
    expect([r.building_id, r.building_name, r.floor_id, r.floor_name, r.floor_space_name, r.space_type, r.capacity, r.time_zone]).toEqual([
      s.building,
      BUILDINGS.find((b) => b.id === s.building)?.name ?? null,
      s.floor,
      FLOORS.find((f) => f.id === s.floor)?.name ?? null,
      s.name,
      s.type,
      s.capacity,
      CALENDARS[s.building]!.zone,
    ]);
    expect(Math.round(Number(r.period_seconds) * 1000)).toBe(Date.parse(String(new Date(r.ends_at as string).toISOString())) - Date.parse(new Date(r.starts_at as string).toISOString()));
  }
  const wantHours = new Map(
    [...want.spaceHours].map(([k, f]) => {
      const { period_seconds: _p, ...rest } = shown(ofSpace(f, 0, SPACES[k.split('|')[0]!]!.capacity));
      return [k, { ...rest, coverage: null }];
    }),
  );
  for (const v of gotHours.values()) v.coverage = null;
  expect(sortBy([...gotHours], ([k]) => k)).toEqual(sortBy([...wantHours], ([k]) => k));
  // Coverage of an hour: its known time over its length.
  for (const r of spaceHours) expect(Number(r.coverage)).toBeCloseTo(Number(r.known_seconds) / Number(r.period_seconds), 12);

  const spaceDays = await store.query<Row>('SELECT * FROM space_days');
  expect(sortBy(spaceDays.map((r) => ({ k: `${r.floor_space_id}|${r.local_date}`, names: [r.building_name, r.floor_name, r.floor_space_name, r.space_type], ...figuresOf(r, DAY_FIGURES) })), (r) => r.k)).toEqual(
    sortBy(
      want.spaceDays.map((d) => {
        const s = SPACES[d.space]!;
        return { k: `${d.space}|${d.date}`, names: [BUILDINGS.find((b) => b.id === s.building)?.name ?? null, FLOORS.find((f) => f.id === s.floor)?.name ?? null, s.name, s.type], ...shown(d.all), ...shown(d.working, 'working_') };
      }),
      (r) => r.k,
    ),
  );

  const floorDays = await store.query<Row>('SELECT * FROM floor_days');
  expect(sortBy(floorDays.map((r) => ({ k: `${r.building_id}|${r.floor_id}|${r.local_date}`, spaces: Number(r.spaces), ...figuresOf(r, DAY_FIGURES) })), (r) => r.k)).toEqual(
    sortBy([...want.floorDays].map(([k, g]) => ({ k, spaces: g.spaces, ...shown(g.all), ...shown(g.working, 'working_') })), (r) => r.k),
  );
  const buildingDays = await store.query<Row>('SELECT * FROM building_days');
  expect(sortBy(buildingDays.map((r) => ({ k: `${r.building_id}|${r.local_date}`, name: r.building_name, zone: r.time_zone, spaces: Number(r.spaces), ...figuresOf(r, DAY_FIGURES) })), (r) => r.k)).toEqual(
    sortBy(
      [...want.buildingDays].map(([k, g]) => ({ k, name: BUILDINGS.find((b) => b.id === k.split('|')[0])?.name ?? null, zone: CALENDARS[k.split('|')[0]!]!.zone, spaces: g.spaces, ...shown(g.all), ...shown(g.working, 'working_') })),
      (r) => r.k,
    ),
  );
  const portfolioDays = await store.query<Row>('SELECT * FROM portfolio_days');
  expect(sortBy(portfolioDays.map((r) => ({ k: String(r.local_date), buildings: Number(r.buildings), spaces: Number(r.spaces), ...figuresOf(r, DAY_FIGURES) })), (r) => r.k)).toEqual(
    sortBy([...want.portfolioDays].map(([k, g]) => ({ k, buildings: g.buildings.size, spaces: g.spaces, ...shown(g.all), ...shown(g.working, 'working_') })), (r) => r.k),
  );

  const buildingHours = await store.query<Row>('SELECT * FROM building_hours');
  expect(sortBy(buildingHours.map((r) => ({ k: `${r.building_id}|${r.local_date}|${Number(r.local_hour)}|${flag(r.working)}`, ...figuresOf(r, HOUR_FIGURES) })), (r) => r.k)).toEqual(
    sortBy([...want.buildingHours].map(([k, s]) => ({ k, ...shown(s) })), (r) => r.k),
  );
  const floorHours = await store.query<Row>('SELECT * FROM floor_hours');
  expect(sortBy(floorHours.map((r) => ({ k: `${r.building_id}|${r.floor_id}|${r.local_date}|${Number(r.local_hour)}|${flag(r.working)}`, ...figuresOf(r, HOUR_FIGURES) })), (r) => r.k)).toEqual(
    sortBy([...want.floorHours].map(([k, s]) => ({ k, ...shown(s) })), (r) => r.k),
  );

  // The portfolio's hours and the weekday x hour profile sum the building hours; the busiest hour leads its building.
  const portfolioHours = new Map<string, Sums>();
  const profile = new Map<string, Sums & { days: Set<string> }>();
  for (const [k, s] of want.buildingHours) {
    const [b, date, hour, working] = k.split('|') as [string, string, string, string];
    const pk = `${date}|${hour}|${working}`;
    portfolioHours.set(pk, add(portfolioHours.get(pk) ?? none(0), s));
    if (working !== 'true') continue;
    const weekday = wall('UTC', Date.parse(`${date}T12:00:00Z`)).weekday;
    const prev = profile.get(`${b}|${weekday}|${hour}`);
    profile.set(`${b}|${weekday}|${hour}`, { ...add(prev ?? none(0), s), days: (prev?.days ?? new Set<string>()).add(date) });
  }
  const gotPortfolioHours = await store.query<Row>('SELECT * FROM portfolio_hours');
  expect(sortBy(gotPortfolioHours.map((r) => ({ k: `${r.local_date}|${Number(r.local_hour)}|${flag(r.working)}`, ...figuresOf(r, HOUR_FIGURES) })), (r) => r.k)).toEqual(
    sortBy([...portfolioHours].map(([k, s]) => ({ k, ...shown(s) })), (r) => r.k),
  );
  const gotProfile = await store.query<Row>('SELECT * FROM usage_profile');
  expect(sortBy(gotProfile.map((r) => ({ k: `${r.building_id}|${Number(r.weekday)}|${Number(r.local_hour)}`, days: Number(r.days), ...figuresOf(r, HOUR_FIGURES) })), (r) => r.k)).toEqual(
    sortBy([...profile].map(([k, s]) => ({ k, days: s.days.size, ...shown(s) })), (r) => r.k),
  );
  const busiest = await store.query<Row>('SELECT building_id, weekday, local_hour, avg_headcount, time_used FROM busiest_hours WHERE rank = 1');
  for (const r of busiest) {
    const own = gotProfile.filter((p) => p.building_id === r.building_id);
    const best = own.some((p) => p.avg_headcount !== null) ? Math.max(...own.map((p) => (p.avg_headcount === null ? -1 : Number(p.avg_headcount)))) : null;
    if (best === null) expect(Number(r.time_used)).toBe(Math.max(...own.map((p) => Number(p.time_used ?? -1))));
    else expect(Number(r.avg_headcount)).toBe(best);
  }
  expect(busiest.map((r) => r.building_id).sort()).toEqual(['', 'b-an', 'b-hh', 'b-lt']);
}

describe.each(DIALECTS)('time-weighted views (%s)', (dialect) => {
  it('equal a per-minute reference at space, floor, building and portfolio level, per local hour and day; a late delivery changes its hour on the next read', { timeout: 60_000 }, async () => {
    const { store } = await fresh(dialect, 'tw-views');
    const readings = makeReadings();
    await load(store, readings);
    await expectViews(store, readings);

    // What a facility manager would check by hand.
    const day = (building: string, date: string) => store.query<Row>(`SELECT * FROM building_days WHERE building_id = '${building}' AND local_date = '${date}'`).then((r) => r[0]!);
    const fjord = await store.query<Row>(`SELECT local_hour, working, coverage FROM space_hours WHERE floor_space_id = 'hh-fjord' AND local_date = '2026-03-24' ORDER BY starts_at`);
    // Silent 10:00-12:30 Berlin time: the 09:55 reading holds until 10:40 (max hold 45 min), so hour 10 is two-thirds
    // known and hour 11 has no row at all (unknown, not vacant); the building's working coverage drops that day.
    expect(fjord.filter((r) => Number(r.local_hour) === 10).map((r) => Number(r.coverage))).toEqual([40 / 60]);
    expect(fjord.filter((r) => Number(r.local_hour) === 11)).toEqual([]);
    expect(Number((await day('b-hh', '2026-03-24')).working_coverage)).toBeLessThan(Number((await day('b-hh', '2026-03-23')).working_coverage));
    // hh-desk fell silent for good on the 24th: on the 25th it counts, with nothing known.
    const desk = await store.query<Row>(`SELECT known_seconds, coverage, working_coverage FROM space_days WHERE floor_space_id = 'hh-desk' AND local_date = '2026-03-25'`);
    expect(desk.map((r) => [Number(r.known_seconds), Number(r.coverage), Number(r.working_coverage)])).toEqual([[0, 0, 0]]);
    // The phone booth was listed and never measured: every day a row, coverage 0, time used unknown.
    const booth = await store.query<Row>(`SELECT local_date, coverage, time_used FROM space_days WHERE floor_space_id = 'hh-booth' ORDER BY local_date`);
    expect(booth.map((r) => [r.local_date, Number(r.coverage), r.time_used])).toEqual(['2026-03-23', '2026-03-24', '2026-03-25', '2026-03-26'].map((d) => [d, 0, null]));
    // Presence-only: no headcount, so no average headcount nor utilization, but time used is known.
    const quiet = await store.query<Row>(`SELECT avg_headcount, utilization, time_used FROM space_days WHERE floor_space_id = 'hh-quiet' AND local_date = '2026-03-24'`);
    expect([quiet[0]!.avg_headcount, quiet[0]!.utilization, Number(quiet[0]!.time_used) > 0]).toEqual([null, null, true]);
    // Capacity unknown in the whole building (Annex) or 0 (lt-desk): utilization NULL, headcount still averaged.
    const annex = await day('b-an', '2026-03-24');
    expect([annex.utilization, annex.working_utilization, annex.peak_utilization]).toEqual([null, null, null]);
    const ltDesk = await store.query<Row>(`SELECT utilization, avg_headcount FROM space_days WHERE floor_space_id = 'lt-desk' AND local_date = '2026-03-24'`);
    expect([ltDesk[0]!.utilization, Number(ltDesk[0]!.avg_headcount) > 0]).toEqual([null, true]);

    // The example queries of docs/reporting.md run as printed, on both dialects, and say what the views say.
    const docs = readFileSync(join(import.meta.dirname, '../../docs/reporting.md'), 'utf8');
    const block = /```sql\n(-- Working-hours utilization per floor[\s\S]*?)```/.exec(docs)![1]!;
    const answers = [];
    for (const statement of block.split(';').filter((s) => /SELECT/.test(s))) answers.push(await store.query<Row>(statement.replace(/2026-03-01/, '2026-03-23')));
    expect(answers.map((a) => a.length)).toEqual([5, 6, 4]);
    const thirdFloor = answers[0]!.find((r) => r.floor_name === 'Third floor')!;
    const own = await store.query<Row>(`SELECT SUM(working_known_seconds) AS k, SUM(working_seconds) AS w FROM space_days WHERE floor_id = 'hh-3'`);
    expect(Number(thirdFloor.coverage)).toBeCloseTo(Number(own[0]!.k) / Number(own[0]!.w), 12);

    // A delivery arrives late for an hour already read: the store refreshes it within a second, and the views have it.
    const before = await store.query<Row>(`SELECT known_seconds FROM building_hours WHERE building_id = 'b-hh' AND local_date = '2026-03-24' AND local_hour = 11`);
    const late: RefReading = { space: 'hh-fjord', at: Date.parse('2026-03-24T10:20:00.000Z'), status: 'CurrentlyOccupied', headcount: 5 };
    const at = '2026-03-27T00:00:00.000Z';
    expect(await store.storeDelivery({ id: 'late-1', customerId: C, type: 'OccupancyChanged', createdAt: at, sentAt: at, receivedAt: at, body: '{}' }, [record(late, 'wh')])).toBe('stored');
    await waitFor(async () => (await store.pendingAggregates(C)).length === 0, "the store's refresh of the late delivery", 10_000);
    const after = await store.query<Row>(`SELECT known_seconds FROM building_hours WHERE building_id = 'b-hh' AND local_date = '2026-03-24' AND local_hour = 11`);
    expect(Number(after[0]!.known_seconds) - Number(before[0]?.known_seconds ?? 0)).toBe(40 * 60);
    await expectViews(store, [...readings, late]);
  });

  it('a DST change in the building\'s zone gives 23- and 25-hour days, each with its whole working time', { timeout: 60_000 }, async () => {
    const { store } = await fresh(dialect, 'tw-dst');
    const settings = { workingTime: parseWorkingTime('default:\n  days: [1, 2, 3, 4, 5, 6, 7]\n  start: "08:00"\n  end: "18:00"\n', 'working-time.yaml'), maxHoldMs: MAX_HOLD };
    await commit(store, 'buildings', [{ id: 'b-ber', name: 'Harbour Hall', timeZone: 'Europe/Berlin' }]);
    await commit(store, 'floors', [{ id: 'f-0', buildingId: 'b-ber', name: 'Ground floor', level: 0 }]);
    await commit(store, 'floorSpaces', ['s1', 's2'].map((id) => ({ id, buildingId: 'b-ber', floorId: 'f-0', name: id, capacity: 4, spaceType: 'desk' })));
    expect(await store.reconcileAggregates(C, settings)).toEqual([]);
    // s1 reports every 10 minutes around both changes of 2026; s2 once, then never again: it counts, unmeasured.
    const readings: RefReading[] = [{ space: 's2', at: Date.parse('2026-03-27T12:00:00.000Z'), status: 'Unoccupied', headcount: 0 }];
    for (const [from, to] of [['2026-03-27T00:00:00.000Z', '2026-03-31T00:00:00.000Z'], ['2026-10-23T00:00:00.000Z', '2026-10-27T00:00:00.000Z']] as const) {
      for (let at = Date.parse(from); at < Date.parse(to); at += 10 * MIN) readings.push({ space: 's1', at, status: (at / (10 * MIN)) % 3 === 0 ? 'CurrentlyOccupied' : 'Unoccupied', headcount: 1 });
    }
    await commit(store, 'occupancy', readings.map((r) => record(r, 'dst')), '2026-11-01T00:00:00.000Z');
    await store.refreshAggregates(C);
    const rows = await store.query<Row>(`SELECT local_date, spaces, period_seconds, working_seconds, working_known_seconds, working_coverage FROM building_days
      WHERE local_date IN ('2026-03-28', '2026-03-29', '2026-10-25', '2026-10-26') ORDER BY local_date`);
    const H = 3600;
    expect(rows.map((r) => [r.local_date, Number(r.spaces), Number(r.period_seconds), Number(r.working_seconds), Number(r.working_known_seconds), Number(r.working_coverage)])).toEqual([
      ['2026-03-28', 2, 2 * 24 * H, 2 * 10 * H, 10 * H, 0.5],
      ['2026-03-29', 2, 2 * 23 * H, 2 * 10 * H, 10 * H, 0.5],
      ['2026-10-25', 2, 2 * 25 * H, 2 * 10 * H, 10 * H, 0.5],
      ['2026-10-26', 2, 2 * 24 * H, 2 * 10 * H, 10 * H, 0.5],
    ]);
    // The months between: days nobody measured, every one of them a row (s1 and s2 counted, nothing known).
    const [between] = await store.query<Row>(`SELECT COUNT(*) AS n, SUM(known_seconds) AS k FROM space_days WHERE local_date > '2026-04-01' AND local_date < '2026-10-22'`);
    expect([Number(between!.n), Number(between!.k)]).toEqual([2 * 203, 0]);
    // The repeated hour of 25 October: two buckets of hour 2 in the space's hours, one local hour in the portfolio's.
    const repeated = await store.query<Row>(`SELECT starts_at FROM space_hours WHERE floor_space_id = 's1' AND local_date = '2026-10-25' AND local_hour = 2`);
    expect(repeated).toHaveLength(2);
    // Its period is both buckets' (two spaces x two hours); its floor spaces are the building's two, once each.
    const portfolio = await store.query<Row>(`SELECT buildings, spaces, period_seconds FROM portfolio_hours WHERE local_date = '2026-10-25' AND local_hour = 2`);
    expect(portfolio.map((r) => [Number(r.buildings), Number(r.spaces), Number(r.period_seconds)])).toEqual([[1, 2, 2 * 2 * H]]);
  });
});
