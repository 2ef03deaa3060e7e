import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { authenticate, gql } from './helpers.ts';

/**
 * The default sandbox offers the hierarchy (docs/sandbox.md, "The hierarchy"): buildings with an IANA zone, their
 * floors and floor spaces, through the assumed queries of jobs/schema.graphql; the answers equal the truth, and the
 * truth has what reports must cope with (zones on three continents, a half-hour offset, a southern DST, a basement,
 * unknown capacities).
 */

const clock = new FakeClock('2026-01-08T00:00:00Z');
let s: Sandbox;
let token: string;

beforeAll(async () => {
  s = await startSandbox({ clock, seed: 3 });
  token = await authenticate(s.url, s.customers[0]!.readKey);
});
afterAll(() => s.close());

const HIERARCHY = `{
  buildings { id name timeZone }
  floors { id buildingId name level }
  floorSpaces { id buildingId floorId name capacity spaceType }
}`;

/** The UTC offset of `zone` at `ms`, in minutes, read from Intl (not from the code under test). */
function offsetMinutes(zone: string, ms: number): number {
  const parts = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric' }).formatToParts(ms);
  const get = (type: string) => Number(parts.find((p) => p.type === type)!.value);
  return (Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute')) - ms) / 60_000;
}

describe('sandbox hierarchy (default variant)', () => {
  it('answers buildings, floors and floorSpaces exactly as its truth holds them', async () => {
    const customer = s.customers[0]!.id;
    const res = await gql(s.url, token, { query: HIERARCHY });
    expect(res.status).toBe(200);
    expect(res.json.data.buildings).toEqual(s.truth.buildings(customer));
    expect(res.json.data.floors).toEqual(s.truth.floors(customer));
    expect(res.json.data.floorSpaces).toEqual(s.truth.floorSpaces(customer));
  });

  it('places every customer on three continents, with a half-hour offset and a southern-hemisphere DST zone', () => {
    for (const c of s.customers) {
      const zones = s.truth.buildings(c.id).map((b) => b.timeZone);
      expect(new Set(zones.map((z) => z.split('/')[0])).size).toBeGreaterThanOrEqual(3);
    }
    const all = s.customers.flatMap((c) => s.truth.buildings(c.id).map((b) => b.timeZone));
    const january = Date.UTC(2026, 0, 15);
    const july = Date.UTC(2026, 6, 15);
    // A half-hour offset, and a zone whose summer (larger offset) is in January: the southern hemisphere's DST.
    expect(all.some((z) => offsetMinutes(z, january) % 60 !== 0)).toBe(true);
    expect(all.some((z) => offsetMinutes(z, january) > offsetMinutes(z, july))).toBe(true);
    expect(all).toContain('Australia/Adelaide');
  });

  it('links each floor space to a floor of its own building, with a basement, space types and unknown capacities', () => {
    for (const c of s.customers) {
      const buildings = new Set(s.truth.buildings(c.id).map((b) => b.id));
      const floors = new Map(s.truth.floors(c.id).map((f) => [f.id, f]));
      const spaces = s.truth.floorSpaces(c.id);
      expect(spaces).toHaveLength(12);
      for (const f of floors.values()) expect(buildings.has(f.buildingId)).toBe(true);
      for (const space of spaces) {
        expect(floors.get(space.floorId)?.buildingId).toBe(space.buildingId);
        if (space.capacity !== null) expect(space.capacity).toBeGreaterThanOrEqual(1);
      }
      // Names are unique within a building: a report can name a space without its id.
      for (const b of buildings) {
        const names = spaces.filter((x) => x.buildingId === b).map((x) => x.name);
        expect(new Set(names).size).toBe(names.length);
      }
      expect([...floors.values()].some((f) => f.level === -1 && f.name === 'Basement')).toBe(true);
      expect(new Set(spaces.map((x) => x.spaceType))).toEqual(new Set(['open_area', 'meeting_room', 'focus_room', 'desk']));
      expect(spaces.some((x) => x.capacity === null)).toBe(true);
      expect(spaces.some((x) => /^Level \d+ Open Desks$/.test(x.name))).toBe(true);
      expect(spaces.some((x) => x.name.startsWith('Meeting Room '))).toBe(true);
    }
  });

  it('counts no more people in a reading than its space holds', () => {
    const customer = s.customers[0]!.id;
    const capacity = new Map(s.truth.floorSpaces(customer).map((f) => [f.id, f.capacity]));
    let counted = 0;
    for (const o of s.truth.observations(customer, { from: '2026-01-07T08:00:00Z', to: '2026-01-07T18:00:00Z' })) {
      const max = capacity.get(o.floorSpaceId);
      if (max !== null && max !== undefined) {
        expect(o.headcount).toBeLessThanOrEqual(max);
        counted += 1;
      }
    }
    expect(counted).toBeGreaterThan(0);
  });

  it('lists no floor or space of a removed building', async () => {
    const customer = s.customers[1]!;
    const [removed] = s.truth.buildings(customer.id);
    s.removeBuilding(customer.id, removed!.id);
    try {
      const res = await gql(s.url, await authenticate(s.url, customer.readKey), { query: HIERARCHY });
      expect(res.json.data.floors.some((f: { buildingId: string }) => f.buildingId === removed!.id)).toBe(false);
      expect(res.json.data.floorSpaces.some((f: { buildingId: string }) => f.buildingId === removed!.id)).toBe(false);
      expect(res.json.data.floorSpaces).toEqual(s.truth.floorSpaces(customer.id));
    } finally {
      s.restoreBuilding(customer.id, removed!.id);
    }
  });
});
