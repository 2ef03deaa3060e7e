import type { Store } from '../../src/store/types.ts';

/** Every row of the aggregate tables, in key order, as text: what "maintained equals rebuilt" compares bit for bit. */
export async function dumpAggregates(store: Store): Promise<string[]> {
  const rows = async (sql: string) => (await store.query<Record<string, unknown>>(sql)).map((r) => Object.values(r).map((v) => (typeof v === 'boolean' ? Number(v) : String(v))).join(' '));
  return [
    ...(await rows('SELECT floor_space_key, start_ms, end_ms, local_date, local_hour, weekday, working, known_ms, occupied_ms, headcount_ms, headcount_known_ms, peak_headcount, readings FROM occupancy_buckets ORDER BY floor_space_key, start_ms')),
    '--',
    ...(await rows('SELECT * FROM calendar_days ORDER BY customer_id, building_id, local_date')),
    '--',
    ...(await rows('SELECT customer_id, building_id, time_zone, calendar, max_hold_ms FROM aggregate_calendars ORDER BY customer_id, building_id')),
    '--',
    ...(await rows('SELECT * FROM occupancy_days ORDER BY floor_space_key, local_date')),
    '--',
    ...(await rows('SELECT * FROM occupancy_floor_hours ORDER BY customer_id, building_id, floor_key, floor_id, start_ms, local_date')),
  ];
}
