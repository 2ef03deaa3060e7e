import { describe, expect, it } from 'vitest';
import { parseWorkingTime } from '../../src/config-working-time.ts';
import type { AggregateSettings, Store } from '../../src/store/index.ts';
import { reportProfileRows, type ReportFilter } from '../../src/store/report-queries.ts';
import { DIALECTS, fresh } from '../store/harness.ts';

/**
 * The report's weekday x hour profiles (reportProfileRows) read the floor-level hourly rollup and the counts of floor
 * spaces per floor or building and local date with the range asked, not through floor_hours and building_hours (where
 * the count is made for every date stored): their rows must be the views' rows summed over the same range, on a
 * real SQLite file and a real Postgres, with a floor space that starts counting mid-range, floor spaces of no floor
 * and of no building, and a building in Europe/Berlin whose range holds the change to summer time (2026-03-29); and
 * their plans read calendar_days (under the counts) by the range asked, which keeps their time to the range.
 */

const C = 'c1';
const MIN = 60_000;
const SETTINGS: AggregateSettings = { workingTime: parseWorkingTime('default:\n  zone: Europe/Berlin\n  days: [1, 2, 3, 4, 5, 7]\n  start: "01:00"\n  end: "18:00"\n', 'w.yaml'), maxHoldMs: 45 * MIN };
const BUILDINGS = [
  { id: 'b1', name: 'Harbour Hall', timeZone: 'Europe/Berlin' },
  { id: 'b2', name: 'Lotus Tower', timeZone: 'Asia/Kolkata' },
];
/** s3 is measured from 2026-03-29 on only: it counts from that day (space_service_days). */
const SPACES = [
  { id: 's1', buildingId: 'b1', floorId: 'f1', name: 's1', capacity: 4, from: '2026-03-25' },
  { id: 's2', buildingId: 'b1', floorId: 'f1', name: 's2', capacity: null, from: '2026-03-25' },
  { id: 's3', buildingId: 'b1', floorId: 'f1', name: 's3', capacity: 2, from: '2026-03-29' },
  { id: 's4', buildingId: 'b1', floorId: null, name: 's4', capacity: 3, from: '2026-03-25' },
  { id: 's5', buildingId: 'b2', floorId: 'f9', name: 's5', capacity: 2, from: '2026-03-25' },
  { id: 's6', buildingId: null, floorId: null, name: 's6', capacity: 1, from: '2026-03-25' },
];
const checkpoint = { customerId: C, stateKey: 'x', watermark: null, windowStart: null, windowEnd: null, pageCursor: null, rangeStart: null, rangeEnd: null };
const AT = '2026-11-01T00:00:00.000Z';

async function commit(store: Store, sink: 'occupancy' | 'buildings' | 'floorSpaces', records: unknown[]): Promise<void> {
  await store.commitPage({ customerId: C, sink, records: records as never, at: AT, checkpoint: { ...checkpoint, stateKey: sink } });
}

/** Seeded readings every 5 to 40 minutes from each space's first day to 2026-04-01. */
function readings(seed: number): Array<Record<string, unknown>> {
  let s = seed;
  const next = () => ((s = (Math.imul(s, 1_103_515_245) + 12_345) & 0x7fffffff) / 0x80000000);
  const out: Array<Record<string, unknown>> = [];
  for (const { id, from } of SPACES) {
    for (let at = Date.parse(`${from}T00:00:00.000Z`) + Math.floor(next() * 30) * MIN; at < Date.parse('2026-04-01T00:00:00.000Z'); at += (5 + Math.floor(next() * 36)) * MIN) {
      const headcount = next() < 0.1 ? null : Math.floor(next() * 5);
      out.push({ floorSpaceId: id, observedAt: new Date(at).toISOString(), occupancyStatus: next() < 0.5 ? 'CurrentlyOccupied' : 'Unoccupied', headcount, eventId: `p-${id}-${at}` });
    }
  }
  return out;
}

type Row = Record<string, unknown>;

/** The profile read through the hour views: what reportProfileRows sent before it read the rollup and the counts. */
function viewProfile(store: Store, level: 'building' | 'floor', filter: ReportFilter): Promise<Row[]> {
  const names = level === 'building' ? ['customer_id', 'building_id'] : ['customer_id', 'building_id', 'floor_id'];
  const params: unknown[] = [filter.fromDate, filter.toDate, filter.customerId];
  let where = 'local_date >= $1 AND local_date < $2 AND customer_id = $3';
  if (filter.buildingId !== undefined) where += ` AND building_id = $${params.push(filter.buildingId)}`;
  if (filter.floorId !== undefined && level === 'floor') where += ` AND floor_id = $${params.push(filter.floorId)}`;
  if (filter.scope === 'working') where += ' AND working = TRUE';
  return store.query<Row>(
    `SELECT ${names.join(', ')}, weekday, local_hour,
            SUM(period_seconds) AS period_seconds, SUM(known_seconds) AS known_seconds, SUM(occupied_seconds) AS occupied_seconds,
            SUM(headcount_seconds) AS headcount_seconds, SUM(headcount_known_seconds) AS headcount_known_seconds,
            SUM(capacity_seconds) AS capacity_seconds, SUM(capacity_headcount_seconds) AS capacity_headcount_seconds,
            MAX(peak_headcount) AS peak_headcount, MAX(peak_utilization) AS peak_utilization, COUNT(*) AS days
       FROM ${level}_hours WHERE ${where} GROUP BY ${names.join(', ')}, weekday, local_hour`,
    params,
  );
}

/**
 * Rows as numbers (Postgres gives COUNT() as a bigint string), in key order; seconds to the microsecond: both sides sum
 * the same per-bucket seconds, but a plan may add them in another order, and float addition is not associative.
 */
function normal(rows: Row[]): Row[] {
  const number = (v: unknown) => Math.round(Number(v) * 1e6) / 1e6;
  const out = rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'string' && /_id$/.test(k) ? v : v === null ? null : number(v)])));
  const key = (r: Row) => JSON.stringify([r.customer_id, r.building_id, r.floor_id ?? null, r.weekday, r.local_hour]);
  return out.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

describe.each(DIALECTS)("the report's profiles (%s)", (dialect) => {
  it('equal the rows of floor_hours and building_hours over the same range: a space counted from mid-range, spaces of no floor and of no building, a DST change, working and all hours, one building and one floor', { timeout: 60_000 }, async () => {
    const { store } = await fresh(dialect, 'report-profiles');
    await commit(store, 'buildings', BUILDINGS);
    await commit(store, 'floorSpaces', SPACES.map(({ from: _from, ...space }) => space));
    await store.reconcileAggregates(C, SETTINGS);
    await commit(store, 'occupancy', readings(7));
    await store.refreshAggregates(C);

    // The mid-range space changes f1's count inside the range: the count must be the one of each date.
    const counts = await store.query<Row>(`SELECT local_date, spaces FROM floor_day_spaces WHERE building_id = 'b1' AND floor_id = 'f1' AND local_date IN ('2026-03-28', '2026-03-30') ORDER BY local_date`);
    expect(counts.map((r) => [r.local_date, Number(r.spaces)])).toEqual([['2026-03-28', 2], ['2026-03-30', 3]]);

    const filters: ReportFilter[] = [];
    for (const scope of ['working', 'all'] as const) {
      for (const [fromDate, toDate] of [['2026-03-27', '2026-03-31'], ['2026-03-20', '2026-04-05'], ['2026-03-29', '2026-03-30']] as const) {
        filters.push({ fromDate, toDate, customerId: C, scope });
      }
      filters.push({ fromDate: '2026-03-27', toDate: '2026-03-31', customerId: C, buildingId: 'b1', scope });
      filters.push({ fromDate: '2026-03-27', toDate: '2026-03-31', customerId: C, buildingId: 'b1', floorId: 'f1', scope });
      filters.push({ fromDate: '2026-03-27', toDate: '2026-03-31', customerId: C, buildingId: '', scope });
    }
    for (const filter of filters) {
      for (const level of ['building', 'floor'] as const) {
        const expected = normal(await viewProfile(store, level, filter));
        expect(expected.length, `${level} ${JSON.stringify(filter)}`).toBeGreaterThan(0);
        expect(normal(await reportProfileRows(store, level, filter)), `${level} ${JSON.stringify(filter)}`).toEqual(expected);
      }
    }
    // What the test covers is in the rows: the building of no building, a floor of no floor, b1's 23-hour day.
    const all = normal(await reportProfileRows(store, 'floor', { fromDate: '2026-03-27', toDate: '2026-03-31', customerId: C, scope: 'all' }));
    expect(new Set(all.map((r) => r.building_id))).toEqual(new Set(['', 'b1', 'b2']));
    expect(all.some((r) => r.building_id === 'b1' && r.floor_id === null)).toBe(true);
    const [day] = await store.query<Row>(`SELECT end_ms - start_ms AS ms FROM calendar_days WHERE customer_id = $1 AND building_id = 'b1' AND local_date = '2026-03-29'`, [C]);
    expect(Number(day!.ms)).toBe(23 * 3_600_000);

    // What keeps the statements' time to the range asked: calendar_days (under the counts) is read by the range.
    for (const level of ['building', 'floor'] as const) {
      const sent: Array<{ text: string; params: unknown[] }> = [];
      await reportProfileRows({ query: async (text: string, params: unknown[]) => (sent.push({ text, params }), []) } as unknown as Store, level, { fromDate: '2026-03-27', toDate: '2026-03-31', customerId: C, buildingId: 'b1', scope: 'working' });
      const plan = (await store.query<Row>(`${dialect === 'sqlite' ? 'EXPLAIN QUERY PLAN' : 'EXPLAIN'} ${sent[0]!.text}`, sent[0]!.params)).map((r) => String(r['QUERY PLAN'] ?? r.detail)).join('\n');
      if (dialect === 'sqlite') expect(plan, plan).toMatch(/SEARCH d USING INDEX \S+ \(customer_id=\? AND building_id=\? AND local_date>\? AND local_date<\?\)/);
      else expect(plan, plan).toMatch(/on calendar_days d\b[^\n]*\n(?:[^\n]*\n){0,3}?\s*(?:Index Cond|Filter|Recheck Cond): [^\n]*local_date >= /);
    }
  });
});
