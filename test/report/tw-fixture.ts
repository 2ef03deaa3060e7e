import { expect } from 'vitest';
import { parseWorkingTime } from '../../src/config-working-time.ts';
import type { AggregateSettings, Store } from '../../src/store/index.ts';
import type { RefCalendar, RefReading } from '../store/aggregate-reference.ts';

/**
 * A small portfolio for the time-weighted views and the report: three buildings in three zones (one with a half-hour
 * offset) with named floors and floor spaces, interval, change-only and presence-only sensors, a sensor silent for
 * hours and one for good, a listed space never measured, a space only readings named, capacities known, unknown and 0.
 * Written through the store as sync writes it; the readings are whole minutes, so a per-minute reference is exact.
 */

export const C = 'c1';
export const MIN = 60_000;
export const MAX_HOLD = 45 * MIN;
export const WORKING_TIME = parseWorkingTime(
  `
default:
  zone: UTC
  days: [1, 2, 3, 4, 5]
  start: "08:00"
  end: "18:00"
buildings:
  - building: Harbour Hall
    start: "08:30"
    end: "17:30"
`,
  'working-time.yaml',
);
export const SETTINGS: AggregateSettings = { workingTime: WORKING_TIME, maxHoldMs: MAX_HOLD };
const WEEKDAYS = [1, 2, 3, 4, 5];
export const CALENDARS: Record<string, RefCalendar> = {
  'b-hh': { zone: 'Europe/Berlin', days: WEEKDAYS, start: 510, end: 1050, holidays: [] },
  'b-lt': { zone: 'Asia/Kolkata', days: WEEKDAYS, start: 480, end: 1080, holidays: [] },
  'b-an': { zone: 'America/New_York', days: WEEKDAYS, start: 480, end: 1080, holidays: [] },
  '': { zone: 'UTC', days: WEEKDAYS, start: 480, end: 1080, holidays: [] },
};
export const BUILDINGS = [
  { id: 'b-hh', name: 'Harbour Hall', timeZone: 'Europe/Berlin' },
  { id: 'b-lt', name: 'Lotus Tower', timeZone: 'Asia/Kolkata' },
  { id: 'b-an', name: 'Annex', timeZone: 'America/New_York' },
];
export const FLOORS = [
  { id: 'hh-2', buildingId: 'b-hh', name: 'Second floor', level: 2 },
  { id: 'hh-3', buildingId: 'b-hh', name: 'Third floor', level: 3 },
  { id: 'lt-0', buildingId: 'b-lt', name: 'Ground floor', level: 0 },
  { id: 'an-0', buildingId: 'b-an', name: 'Ground floor', level: 0 },
];
export interface Space {
  building: string;
  floor: string | null;
  name: string | null;
  capacity: number | null;
  type: string | null;
}
export const SPACES: Record<string, Space> = {
  'hh-fjord': { building: 'b-hh', floor: 'hh-2', name: 'Fjord', capacity: 8, type: 'meeting_room' },
  'hh-desk': { building: 'b-hh', floor: 'hh-2', name: 'Desk 2.14', capacity: 1, type: 'desk' },
  'hh-quiet': { building: 'b-hh', floor: 'hh-3', name: 'Quiet room', capacity: null, type: 'focus_room' },
  'hh-booth': { building: 'b-hh', floor: 'hh-3', name: 'Phone booth 3.01', capacity: 1, type: 'phone_booth' },
  'lt-banyan': { building: 'b-lt', floor: 'lt-0', name: 'Banyan', capacity: 6, type: 'meeting_room' },
  'lt-desk': { building: 'b-lt', floor: 'lt-0', name: 'Desk 0.02', capacity: 0, type: 'desk' },
  'an-lounge': { building: 'b-an', floor: 'an-0', name: 'Lounge', capacity: null, type: 'lounge' },
  // Never listed: readings alone name it, so it is in no building ('' : the default calendar) and on no floor.
  'x-unlisted': { building: '', floor: null, name: null, capacity: null, type: null },
};
export const LISTED = Object.keys(SPACES).filter((s) => s !== 'x-unlisted');
/** Listed before any reading: a listed space never measured (hh-booth) counts from its building's first day. */
const LISTED_AT = '2026-03-20T00:00:00.000Z';
export const FROM = Date.parse('2026-03-23T00:00:00.000Z');
export const TO = Date.parse('2026-03-26T00:00:00.000Z');

function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (Math.imul(s, 1_103_515_245) + 12_345) & 0x7fffffff;
    return s / 0x80000000;
  };
}

/**
 * Interval sensors every 5 minutes (hh-fjord silent 09:00-11:30Z on the 24th), change-only ones (an event only when
 * the status changes: hh-desk, which falls silent for good on the 24th at 14:00Z, and lt-desk), presence-only ones with
 * no headcount (hh-quiet, whose sensor first reports on the 24th, days after its listing, and an-lounge) and one with
 * an unmapped status now and then (x-unlisted).
 */
export function makeReadings(): RefReading[] {
  const next = random(39);
  const out: RefReading[] = [];
  const interval = (space: string, every: number, headcount: boolean, skip: (at: number) => boolean = () => false) => {
    for (let at = FROM; at < TO; at += every * MIN) {
      if (skip(at)) continue;
      const occupied = next() < 0.5;
      out.push({ space, at, status: occupied ? 'CurrentlyOccupied' : 'Unoccupied', headcount: headcount ? (occupied ? 1 + Math.floor(next() * 7) : 0) : null });
    }
  };
  const change = (space: string, until: number) => {
    let occupied = false;
    for (let at = FROM + 7 * MIN; at < until; at += (5 + Math.floor(next() * 40)) * MIN) {
      // The gap after an event may exceed the max hold: the time beyond it is unknown.
      if (next() < 0.1) at += 60 * MIN;
      occupied = !occupied;
      out.push({ space, at, status: occupied ? 'CurrentlyOccupied' : 'Unoccupied', headcount: occupied ? 1 : 0 });
    }
  };
  const QUIET_FROM = Date.parse('2026-03-24T06:00:00.000Z');
  const silentFjord = (at: number) => at >= Date.parse('2026-03-24T09:00:00.000Z') && at < Date.parse('2026-03-24T11:30:00.000Z');
  interval('hh-fjord', 5, true, silentFjord);
  change('hh-desk', Date.parse('2026-03-24T14:00:00.000Z'));
  // Listed days before its sensor first reported: it counts from its first measured day, not from its listing.
  interval('hh-quiet', 10, false, (at) => at < QUIET_FROM);
  interval('lt-banyan', 5, true);
  change('lt-desk', TO);
  interval('an-lounge', 15, false);
  for (let at = FROM + 3 * MIN; at < TO; at += 20 * MIN) {
    const roll = next();
    out.push({ space: 'x-unlisted', at, status: roll < 0.1 ? 'Maintenance' : roll < 0.5 ? 'CurrentlyOccupied' : 'Unoccupied', headcount: roll < 0.5 ? 2 : 0 });
  }
  return out;
}

export const record = (r: RefReading, tag: string) => ({ floorSpaceId: r.space, observedAt: new Date(r.at).toISOString(), occupancyStatus: r.status, headcount: r.headcount, eventId: `${tag}-${r.space}-${r.at}` });
const checkpoint = { customerId: C, stateKey: 'occupancy', watermark: null, windowStart: null, windowEnd: null, pageCursor: null, rangeStart: null, rangeEnd: null };

export async function commit(store: Store, sink: 'occupancy' | 'buildings' | 'floors' | 'floorSpaces', records: unknown[], at = LISTED_AT, customerId = C): Promise<void> {
  await store.commitPage({ customerId, sink, records: records as never, at, checkpoint: { ...checkpoint, customerId, stateKey: sink } });
}

/** The portfolio, for customer `customerId` (default C). */
export async function load(store: Store, readings: RefReading[], customerId = C, refresh = true): Promise<void> {
  await commit(store, 'buildings', BUILDINGS, LISTED_AT, customerId);
  await commit(store, 'floors', FLOORS, LISTED_AT, customerId);
  const spaces = LISTED.map((id) => ({ id, buildingId: SPACES[id]!.building, floorId: SPACES[id]!.floor, name: SPACES[id]!.name, capacity: SPACES[id]!.capacity, spaceType: SPACES[id]!.type }));
  await commit(store, 'floorSpaces', spaces, LISTED_AT, customerId);
  expect(await store.reconcileAggregates(customerId, SETTINGS)).toEqual([]);
  for (let i = 0; i < readings.length; i += 500) await commit(store, 'occupancy', readings.slice(i, i + 500).map((r) => record(r, 'poll')), '2026-03-27T00:00:00.000Z', customerId);
  // What a run's end does: the pages' invalidations recomputed (left pending for a run killed before it).
  if (refresh) await store.refreshAggregates(customerId);
}
