import { describe, expect, it } from 'vitest';
import { parseWorkingTime } from '../../src/config-working-time.ts';
import type { AggregateSettings, Store } from '../../src/store/index.ts';
import { referenceDays, referenceFigures, type RefCalendar, type RefFigures, type RefReading } from './aggregate-reference.ts';
import { loadMigrations } from '../../src/store/migrations.ts';
import { DIALECTS, fresh } from './harness.ts';

/**
 * The time-weighted aggregates as commits keep them (poll pages, webhook deliveries, late and corrected readings,
 * a listing that moves a space) equal an independent per-minute computation, across both DST changes of a year in
 * Europe/Berlin (23- and 25-hour days), in a half-hour zone (Asia/Kolkata) and in a building whose platform gives
 * no zone; and `rebuildAggregates` (the `aggregates rebuild` command) gives back exactly the rows kept.
 */

const C = 'c1';
const MIN = 60_000;
const MAX_HOLD = 45 * MIN;
const STATUSES = ['CurrentlyOccupied', 'CurrentlyOccupied', 'Unoccupied', 'Unoccupied', 'Maintenance'];

const WORKING_TIME = parseWorkingTime(
  `
default:
  zone: America/St_Johns
  days: [1, 2, 3, 4, 5]
  start: "08:00"
  end: "18:00"
  holidays: [2026-10-26]
buildings:
  - building: Harbour Hall
    days: [1, 2, 3, 4, 5, 6, 7]
    start: "08:30"
    end: "17:30"
`,
  'working-time.yaml',
);
const SETTINGS: AggregateSettings = { workingTime: WORKING_TIME, maxHoldMs: MAX_HOLD };

const BUILDINGS = [
  { id: 'b-ber', name: 'Harbour Hall', timeZone: 'Europe/Berlin' },
  { id: 'b-kol', name: 'Lotus Tower', timeZone: 'Asia/Kolkata' },
  { id: 'b-none', name: 'Annex', timeZone: null },
];
const HARBOUR: RefCalendar = { zone: 'Europe/Berlin', days: [1, 2, 3, 4, 5, 6, 7], start: 510, end: 1050, holidays: ['2026-10-26'] };
const LOTUS: RefCalendar = { zone: 'Asia/Kolkata', days: [1, 2, 3, 4, 5], start: 480, end: 1080, holidays: ['2026-10-26'] };
const ANNEX: RefCalendar = { ...LOTUS, zone: 'America/St_Johns' };
const SPACES: Record<string, { building: string; calendar: RefCalendar }> = {
  s1: { building: 'b-ber', calendar: HARBOUR },
  s2: { building: 'b-ber', calendar: HARBOUR },
  s3: { building: 'b-kol', calendar: LOTUS },
  s4: { building: 'b-none', calendar: ANNEX },
  // Never listed until the end: in no building (the default calendar) until a listing puts it in Lotus Tower.
  s5: { building: 'b-kol', calendar: LOTUS },
};
/** The two weeks of 2026 with a DST change in Berlin: 29 March (23 hours) and 25 October (25 hours). */
const PERIODS: Array<[string, string]> = [
  ['2026-03-27T00:00:00.000Z', '2026-03-31T00:00:00.000Z'],
  ['2026-10-23T00:00:00.000Z', '2026-10-28T00:00:00.000Z'],
];

/** A seeded generator: the same readings on every run. */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (Math.imul(s, 1_103_515_245) + 12_345) & 0x7fffffff;
    return s / 0x80000000;
  };
}

function makeReadings(): RefReading[] {
  const next = random(42);
  const gaps = [1, 2, 5, 5, 5, 10, 15, 30, 44, 45, 46, 90];
  const out: RefReading[] = [];
  for (const space of Object.keys(SPACES)) {
    for (const [from, to] of PERIODS) {
      for (let at = Date.parse(from) + Math.floor(next() * 30) * MIN; at < Date.parse(to); at += gaps[Math.floor(next() * gaps.length)]! * MIN) {
        const status = STATUSES[Math.floor(next() * STATUSES.length)]!;
        // s4 is presence-only: no headcount ever.
        const headcount = space === 's4' || next() < 0.1 ? null : Math.floor(next() * 9);
        out.push({ space, at, status, headcount });
      }
    }
  }
  return out;
}

const record = (r: RefReading, tag: string) => ({ floorSpaceId: r.space, observedAt: new Date(r.at).toISOString(), occupancyStatus: r.status, headcount: r.headcount, eventId: `${tag}-${r.space}-${r.at}` });
const checkpoint = { customerId: C, stateKey: 'occupancy', watermark: null, windowStart: null, windowEnd: null, pageCursor: null, rangeStart: null, rangeEnd: null };

async function commit(store: Store, sink: 'occupancy' | 'buildings' | 'floorSpaces', records: unknown[]): Promise<void> {
  await store.commitPage({ customerId: C, sink, records: records as never, at: '2026-11-01T00:00:00.000Z', checkpoint: { ...checkpoint, stateKey: sink } });
}

async function deliver(store: Store, id: string, readings: RefReading[]): Promise<void> {
  const at = '2026-11-01T00:00:00.000Z';
  const result = await store.storeDelivery({ id, customerId: C, type: 'OccupancyChanged', createdAt: at, sentAt: at, receivedAt: at, body: '{}' }, readings.map((r) => record(r, 'wh')));
  expect(result).toBe('stored');
}

/** Every row of the three tables, in key order, as text: what "bit for bit" compares. */
async function dump(store: Store): Promise<string[]> {
  const buckets = await store.query<Record<string, unknown>>(`
    SELECT f.floor_space_id, b.start_ms, b.end_ms, b.local_date, b.local_hour, b.weekday, b.working, b.known_ms, b.occupied_ms,
           b.headcount_ms, b.headcount_known_ms, b.peak_headcount, b.readings
      FROM occupancy_buckets b JOIN floor_spaces f ON f.floor_space_key = b.floor_space_key ORDER BY f.floor_space_id, b.start_ms`);
  const days = await store.query<Record<string, unknown>>('SELECT * FROM calendar_days ORDER BY customer_id, building_id, local_date');
  const calendars = await store.query<Record<string, unknown>>('SELECT customer_id, building_id, time_zone, calendar, max_hold_ms FROM aggregate_calendars ORDER BY building_id');
  const rollup = await store.query<Record<string, unknown>>(`
    SELECT f.floor_space_id, r.local_date, r.known_ms, r.occupied_ms, r.headcount_ms, r.headcount_known_ms, r.readings, r.peak_headcount,
           r.working_known_ms, r.working_occupied_ms, r.working_headcount_ms, r.working_headcount_known_ms, r.working_peak_headcount
      FROM occupancy_days r JOIN floor_spaces f ON f.floor_space_key = r.floor_space_key ORDER BY f.floor_space_id, r.local_date`);
  const text = (row: Record<string, unknown>) => Object.values(row).map((v) => (typeof v === 'boolean' ? Number(v) : String(v))).join(' ');
  return [...buckets.map(text), '--', ...days.map(text), '--', ...calendars.map(text), '--', ...rollup.map(text)];
}

/**
 * The daily rollup as stored, and as the buckets sum up per floor space and local date, here in TypeScript: they
 * must be equal row for row (a day with no bucket has no row).
 */
async function expectRollupOfBuckets(store: Store): Promise<void> {
  const rows = await store.query<Record<string, string | number | boolean | null>>(`
    SELECT f.floor_space_id AS s, b.local_date AS d, b.working AS w, b.known_ms AS k, b.occupied_ms AS o, b.headcount_ms AS hm,
           b.headcount_known_ms AS hk, b.readings AS n, b.peak_headcount AS p
      FROM occupancy_buckets b JOIN floor_spaces f ON f.floor_space_key = b.floor_space_key`);
  const expected = new Map<string, number[] | (number | null)[]>();
  const max = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.max(a, b));
  for (const r of rows) {
    const key = `${r.s}|${r.d}`;
    const e = (expected.get(key) ?? [0, 0, 0, 0, 0, null, 0, 0, 0, 0, null]) as Array<number | null>;
    const working = Boolean(Number(r.w));
    const p = r.p === null ? null : Number(r.p);
    const add = [Number(r.k), Number(r.o), Number(r.hm), Number(r.hk)];
    add.forEach((v, i) => {
      e[i] = (e[i] as number) + v;
      if (working) e[6 + i] = (e[6 + i] as number) + v;
    });
    e[4] = (e[4] as number) + Number(r.n);
    e[5] = max(e[5]!, p);
    if (working) e[10] = max(e[10]!, p);
    expected.set(key, e);
  }
  const stored = await store.query<Record<string, string | number | null>>(`
    SELECT f.floor_space_id AS s, r.local_date AS d, r.known_ms, r.occupied_ms, r.headcount_ms, r.headcount_known_ms, r.readings, r.peak_headcount,
           r.working_known_ms, r.working_occupied_ms, r.working_headcount_ms, r.working_headcount_known_ms, r.working_peak_headcount
      FROM occupancy_days r JOIN floor_spaces f ON f.floor_space_key = r.floor_space_key`);
  const actual = new Map(stored.map(({ s, d, ...figures }) => [`${s}|${d}`, Object.values(figures).map((v) => (v === null ? null : Number(v)))]));
  const sorted = (m: Map<string, unknown>) => [...m.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
  expect(actual.size).toBeGreaterThan(0);
  expect(sorted(actual)).toEqual(sorted(expected));
}

/** The stored buckets grouped as the reference groups them. */
async function stored(store: Store): Promise<Map<string, RefFigures>> {
  const rows = await store.query<Record<string, string | number | boolean | null>>(`
    SELECT f.floor_space_id AS s, b.local_date AS d, b.local_hour AS h, b.working AS w, sum(b.known_ms) AS k, sum(b.occupied_ms) AS o,
           sum(b.headcount_ms) AS hm, sum(b.headcount_known_ms) AS hk, max(b.peak_headcount) AS p, sum(b.readings) AS n
      FROM occupancy_buckets b JOIN floor_spaces f ON f.floor_space_key = b.floor_space_key
     GROUP BY f.floor_space_id, b.local_date, b.local_hour, b.working`);
  return new Map(
    rows.map((r) => [
      `${r.s}|${r.d}|${Number(r.h)}|${Boolean(Number(r.w))}`,
      { knownMs: Number(r.k), occupiedMs: Number(r.o), headcountMs: Number(r.hm), headcountKnownMs: Number(r.hk), peak: r.p === null ? null : Number(r.p), readings: Number(r.n) },
    ]),
  );
}

function expectReference(actual: Map<string, RefFigures>, readings: RefReading[], calendarOf: (space: string) => RefCalendar): void {
  // Minute by minute over each period (and the holds reaching out of it): the months between hold no reading.
  const expected = new Map<string, RefFigures>();
  for (const [from, to] of PERIODS) {
    const own = readings.filter((r) => r.at >= Date.parse(from) && r.at < Date.parse(to));
    for (const [key, f] of referenceFigures(own, calendarOf, MAX_HOLD, Date.parse(from) - 60 * MIN, Date.parse(to) + MAX_HOLD + 60 * MIN)) expected.set(key, f);
  }
  expect(expected.size).toBeGreaterThan(300);
  const sorted = (m: Map<string, RefFigures>) => [...m.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
  expect(sorted(actual)).toEqual(sorted(expected));
}

describe.each(DIALECTS)('time-weighted aggregates kept by every commit (%s)', (dialect) => {
  it('equal a per-minute reference across DST changes and a half-hour zone, through pages, deliveries, late and corrected readings; a rebuild gives the same rows', { timeout: 60_000 }, async () => {
    // The store's own refresh of the deliveries an hour away: the counts below are of what the deliveries and pages left
    // pending, whatever the time they took (a second of them on a loaded machine ran that refresh mid-test).
    const { store } = await fresh(dialect, 'aggregates', true, { deliveryRefreshMs: 3_600_000 });
    await commit(store, 'buildings', BUILDINGS);
    await commit(
      store,
      'floorSpaces',
      Object.entries(SPACES)
        .filter(([id]) => id !== 's5')
        .map(([id, s]) => ({ id, buildingId: s.building, floorId: `${s.building}-1`, name: id, capacity: 8, spaceType: 'meeting_room' })),
    );
    expect(await store.reconcileAggregates(C, SETTINGS)).toEqual([]);

    const all = makeReadings();
    const next = random(7);
    const late: RefReading[] = [];
    const polled: RefReading[] = [];
    for (const r of all) (next() < 0.15 ? late : polled).push(r);
    // Pages of 300 out of time order (windows of a backfill commit in parallel), then the late ones by webhook.
    const pages: RefReading[][] = [];
    for (let i = 0; i < polled.length; i += 300) pages.push(polled.slice(i, i + 300));
    pages.sort(() => next() - 0.5);
    for (const page of pages) await commit(store, 'occupancy', page.map((r) => record(r, 'poll')));
    for (let i = 0; i < late.length; i += 7) await deliver(store, `d-${i}`, late.slice(i, i + 7));
    // A rewind reads a stretch again and finds some readings corrected (a status, a headcount that became NULL).
    const final = new Map(all.map((r) => [`${r.space}|${r.at}`, r]));
    const again = all.filter((_, i) => i % 11 === 0).map((r, i) => ({ ...r, status: STATUSES[i % STATUSES.length]!, headcount: i % 3 === 0 ? null : r.headcount }));
    await commit(store, 'occupancy', again.map((r) => record(r, 'poll')));
    for (const r of again) final.set(`${r.space}|${r.at}`, r);
    const readings = [...final.values()];
    // Poll pages left their buckets stale (recorded, not recomputed); the refresh brings them up to date once each.
    expect((await store.pendingAggregates(C))[0]?.floorSpaces).toBe(5);
    const refreshed = await store.refreshAggregates(C);
    expect([refreshed.spaces, refreshed.left]).toEqual([5, 0]);
    expect(await store.pendingAggregates(C)).toEqual([]);

    // s5 is in no building yet: its buckets are in the default calendar (St. John's, half an hour off too).
    expectReference(await stored(store), readings, (s) => (s === 's5' ? ANNEX : SPACES[s]!.calendar));

    // The listing that finally names s5's building recomputes its buckets in Lotus Tower's zone and calendar.
    await commit(store, 'floorSpaces', [{ id: 's5', buildingId: 'b-kol', floorId: 'b-kol-1', name: 's5', capacity: 4, spaceType: 'desk' }]);
    expectReference(await stored(store), readings, (s) => SPACES[s]!.calendar);

    await expectRollupOfBuckets(store);
    const kept = await dump(store);
    const rebuilt = await store.rebuildAggregates({ customerId: C }, SETTINGS);
    expect(rebuilt.map((b) => [b.buildingId, b.zone, b.zoneSource, b.whole])).toEqual([
      ['', 'America/St_Johns', 'configured', true],
      ['b-ber', 'Europe/Berlin', 'platform', true],
      ['b-kol', 'Asia/Kolkata', 'platform', true],
      ['b-none', 'America/St_Johns', 'configured', true],
    ]);
    expect(await dump(store)).toEqual(kept);
    // A range of local dates, recomputed alone, is the same too.
    await store.rebuildAggregates({ customerId: C, buildingId: 'b-ber', from: '2026-10-24', to: '2026-10-26' }, SETTINGS);
    expect(await dump(store)).toEqual(kept);
    // Open ends are the start and end of time (a year 9000 end built 61 million hours and ran out of memory): the work
    // is bounded by what the spaces hold, and a range of months is done a day at a time.
    await store.rebuildAggregates({ customerId: C, from: '2026-10-24' }, SETTINGS);
    await store.rebuildAggregates({ customerId: C, to: '2026-03-30' }, SETTINGS);
    await store.rebuildAggregates({ customerId: C, from: '2026-01-01', to: '2027-01-01' }, SETTINGS);
    expect(await dump(store)).toEqual(kept);
  });

  it('calendar_days: every local date from the first to the last, 23- and 25-hour days with their working time, holidays', { timeout: 60_000 }, async () => {
    const { store } = await fresh(dialect, 'aggregate-days');
    await commit(store, 'buildings', BUILDINGS);
    await commit(store, 'floorSpaces', [
      { id: 's1', buildingId: 'b-ber', name: 's1' },
      { id: 's3', buildingId: 'b-kol', name: 's3' },
    ]);
    await store.reconcileAggregates(C, SETTINGS);
    const sparse = [
      { space: 's1', at: Date.parse('2026-03-27T10:00:00.000Z'), status: 'CurrentlyOccupied', headcount: 2 },
      { space: 's1', at: Date.parse('2026-03-31T10:00:00.000Z'), status: 'Unoccupied', headcount: 0 },
      { space: 's1', at: Date.parse('2026-10-23T10:00:00.000Z'), status: 'Unoccupied', headcount: 0 },
      { space: 's1', at: Date.parse('2026-10-27T10:00:00.000Z'), status: 'Unoccupied', headcount: 0 },
      { space: 's3', at: Date.parse('2026-10-23T10:00:00.000Z'), status: 'Unoccupied', headcount: 0 },
      { space: 's3', at: Date.parse('2026-10-27T10:00:00.000Z'), status: 'Unoccupied', headcount: 0 },
    ];
    // The October readings first: the March ones then extend the days backwards.
    await commit(store, 'occupancy', sparse.slice(2).map((r) => record(r, 'p')));
    await commit(store, 'occupancy', sparse.slice(0, 2).map((r) => record(r, 'p')));
    await store.refreshAggregates(C);
    const rows = await store.query<{ building_id: string; local_date: string; start_ms: number; end_ms: number; weekday: number; working_ms: number; holiday: unknown; time_zone: string }>(
      'SELECT * FROM calendar_days ORDER BY building_id, local_date',
    );
    const berlin = rows.filter((r) => r.building_id === 'b-ber');
    // From 27 March to 27 October without a gap: days nobody measured are still days.
    expect(berlin[0]!.local_date).toBe('2026-03-27');
    expect(berlin[berlin.length - 1]!.local_date).toBe('2026-10-27');
    expect(berlin).toHaveLength(215);
    for (const [calendar, building] of [
      [HARBOUR, 'b-ber'],
      [LOTUS, 'b-kol'],
    ] as const) {
      const own = rows.filter((r) => r.building_id === building);
      const from = Number(own[0]!.start_ms);
      const to = Number(own[own.length - 1]!.end_ms);
      const expected = referenceDays(calendar, from, to);
      expect(own.map((r) => [r.local_date, Number(r.end_ms) - Number(r.start_ms), Number(r.working_ms)])).toEqual([...expected].map(([d, v]) => [d, v.lengthMs, v.workingMs]));
      expect(own.every((r) => r.time_zone === calendar.zone)).toBe(true);
    }
    const day = (date: string) => berlin.find((r) => r.local_date === date)!;
    expect([Number(day('2026-03-29').end_ms) - Number(day('2026-03-29').start_ms), Number(day('2026-03-29').working_ms)]).toEqual([23 * 3_600_000, 9 * 3_600_000]);
    expect([Number(day('2026-10-25').end_ms) - Number(day('2026-10-25').start_ms), Number(day('2026-10-25').working_ms)]).toEqual([25 * 3_600_000, 9 * 3_600_000]);
    expect([Number(day('2026-10-26').working_ms), Boolean(Number(day('2026-10-26').holiday))]).toEqual([0, true]);
    expect(day('2026-10-25').weekday).toBe(7);
  });

  it('the migration that adds the daily rollup fills it from the buckets an upgraded database holds: every day figure kept', { timeout: 60_000 }, async () => {
    const { store, another } = await fresh(dialect, 'aggregate-rollup-upgrade');
    await commit(store, 'buildings', BUILDINGS);
    await commit(store, 'floorSpaces', [
      { id: 's1', buildingId: 'b-ber', name: 's1', capacity: 6 },
      { id: 's3', buildingId: 'b-kol', name: 's3' },
    ]);
    await store.reconcileAggregates(C, SETTINGS);
    await commit(store, 'occupancy', makeReadings().filter((r) => r.space === 's1' || r.space === 's3').map((r) => record(r, 'p')));
    await store.refreshAggregates(C);
    const days = () => store.query('SELECT * FROM space_days ORDER BY floor_space_id, local_date');
    const before = { dump: await dump(store), days: await days() };
    expect(before.days.length).toBeGreaterThan(10);
    // The database as the version before it left it: no rollup, the migration not applied.
    const added = loadMigrations(dialect).find((m) => m.name.endsWith('_occupancy_days'))!;
    await store.query(dialect === 'postgres' ? 'DROP TABLE occupancy_days CASCADE' : 'DROP TABLE occupancy_days');
    // And none of the migrations after it (drizzle applies only those later than the last applied): their tables go too.
    await store.query('DROP TABLE aggregate_page_invalidations');
    await store.query(dialect === 'postgres' ? 'DROP TABLE occupancy_floor_hours CASCADE' : 'DROP TABLE occupancy_floor_hours');
    await store.query(`DELETE FROM __drizzle_migrations WHERE created_at >= ${added.folderMillis}`);
    // Its views read the buckets (this version's views, which read the rollup, are applied with the upgrade).
    await store.query('DELETE FROM __repeatable_migrations');
    const upgraded = await another();
    await upgraded.migrate();
    expect(await dump(upgraded)).toEqual(before.dump);
    expect(await upgraded.query('SELECT * FROM space_days ORDER BY floor_space_id, local_date')).toEqual(before.days);
    await expectRollupOfBuckets(upgraded);
  });

  it('a change of calendar, zone or max hold rebuilds that building alone, once', { timeout: 60_000 }, async () => {
    const { store } = await fresh(dialect, 'aggregate-reconcile');
    await commit(store, 'buildings', BUILDINGS);
    await commit(store, 'floorSpaces', [
      { id: 's1', buildingId: 'b-ber', name: 's1' },
      { id: 's3', buildingId: 'b-kol', name: 's3' },
    ]);
    await store.reconcileAggregates(C, SETTINGS);
    const readings = makeReadings().filter((r) => r.space === 's1' || r.space === 's3');
    await commit(store, 'occupancy', readings.map((r) => record(r, 'p')));
    const harbourLater = parseWorkingTime('buildings:\n  - building: b-ber\n    start: "09:00"\n    end: "17:00"\n', 'later.yaml');
    const changed = await store.reconcileAggregates(C, { workingTime: harbourLater, maxHoldMs: MAX_HOLD });
    // Lotus Tower's calendar changed too (the default lost its holiday): both, each said once.
    expect(changed.map((b) => [b.buildingId, b.change])).toEqual([
      ['b-ber', 'calendar {"days":[1,2,3,4,5,6,7],"start":"08:30","end":"17:30","holidays":["2026-10-26"]} -> {"days":[1,2,3,4,5],"start":"09:00","end":"17:00","holidays":[]}'],
      ['b-kol', 'calendar {"days":[1,2,3,4,5],"start":"08:00","end":"18:00","holidays":["2026-10-26"]} -> {"days":[1,2,3,4,5],"start":"08:00","end":"18:00","holidays":[]}'],
    ]);
    expect(await store.reconcileAggregates(C, { workingTime: harbourLater, maxHoldMs: MAX_HOLD })).toEqual([]);
    const harbour: RefCalendar = { zone: 'Europe/Berlin', days: [1, 2, 3, 4, 5], start: 540, end: 1020, holidays: [] };
    const lotus: RefCalendar = { ...LOTUS, holidays: [] };
    expectReference(await stored(store), readings, (s) => (s === 's1' ? harbour : lotus));
    await expectRollupOfBuckets(store);
    const longer = await store.reconcileAggregates(C, { workingTime: harbourLater, maxHoldMs: 60 * MIN });
    expect(longer.map((b) => b.change)).toEqual(['max hold 2700000 ms -> 3600000 ms', 'max hold 2700000 ms -> 3600000 ms']);
  });
});
