import { hashInts, Tag } from './ids.ts';

// Word lists for readable, deterministic building and customer names. Several buildings share a first word on
// purpose, so `buildings(nameLike: ...)` filters have something to select.
const BUILDING_FIRST = ['North', 'South', 'Harbour', 'River', 'Park', 'Central', 'Station', 'Garden', 'Market', 'Bridge'];
const BUILDING_SECOND = ['Tower', 'House', 'Court', 'Plaza', 'Works', 'Yard', 'Hall', 'Point'];
const CUSTOMER_NAMES = ['Acme Offices', 'Globex Workplace', 'Initech Campus', 'Umbrella Estates', 'Stark Spaces', 'Wayne Properties'];

export function customerName(index: number): string {
  const base = CUSTOMER_NAMES[index % CUSTOMER_NAMES.length]!;
  return index < CUSTOMER_NAMES.length ? base : `${base} ${Math.floor(index / CUSTOMER_NAMES.length) + 1}`;
}

/** Unique within a customer: the building number is part of the name. */
export function buildingName(seed: number, customerIndex: number, buildingIndex: number): string {
  const h = hashInts([seed, Tag.name, customerIndex, buildingIndex]);
  const first = BUILDING_FIRST[h % BUILDING_FIRST.length]!;
  const second = BUILDING_SECOND[(h >>> 8) % BUILDING_SECOND.length]!;
  return `${first} ${second} ${buildingIndex + 1}`;
}

/**
 * The buildings' IANA zones, in the order buildings take them (building b of customer c takes entry (b + c) mod
 * length), so every customer of the default sandbox (3 buildings) has buildings on three continents, and one of
 * them in Adelaide: a half-hour offset (+09:30, +10:30 in summer) whose daylight saving time runs October to April.
 * Kolkata (+05:30, no DST) is the second half-hour zone; the others move on their own dates.
 */
export const BUILDING_ZONES = [
  'Europe/London',
  'America/New_York',
  'Australia/Adelaide',
  'Asia/Kolkata',
  'Europe/Berlin',
  'America/Los_Angeles',
  'Asia/Tokyo',
] as const;

export function buildingZone(customerIndex: number, buildingIndex: number): string {
  return BUILDING_ZONES[(buildingIndex + customerIndex) % BUILDING_ZONES.length]!;
}

/**
 * The storey a building's first sensed floor is on: building 0 of each customer starts in its basement (level -1),
 * building 1 on level 2 (a tenant of the upper floors), building 2 on the ground floor, and so on in turn.
 */
export function firstLevel(buildingIndex: number): number {
  return [-1, 2, 0][buildingIndex % 3]!;
}

/** `Basement`, `Ground Floor`, `Level 3`; below the first basement `Basement 2`. */
export function floorName(level: number): string {
  if (level === 0) return 'Ground Floor';
  if (level === -1) return 'Basement';
  if (level < 0) return `Basement ${-level}`;
  return `Level ${level}`;
}

/** The short label of a level in room numbers: `B1`, `G`, `3`. */
function levelLabel(level: number): string {
  return level === 0 ? 'G' : level < 0 ? `B${-level}` : String(level);
}

/** The kinds of space, as the platform spells them; space n of a building is of kind n mod 4. */
export const SPACE_TYPES = ['open_area', 'meeting_room', 'focus_room', 'desk'] as const;
export type SpaceType = (typeof SPACE_TYPES)[number];

const ROOM_WORDS = ['Harbour', 'Summit', 'Lagoon', 'Cedar', 'Atlas', 'Beacon', 'Orchard', 'Meridian', 'Quarry', 'Willow', 'Compass', 'Lantern'];

/**
 * A space's name, unique within its building: `Level 3 Open Desks`, `Meeting Room Harbour`, `Focus Room 3.1`,
 * `Desk G.04`. `nth` counts the spaces of this kind before it: on its floor (open areas, focus rooms, desks) or in
 * its building (meeting rooms, named after a word list from the building's own `wordOffset`, numbered once the list
 * is used up).
 */
export function floorSpaceName(type: SpaceType, level: number, nth: number, wordOffset = 0): string {
  switch (type) {
    case 'open_area':
      return `${floorName(level)} Open Desks${nth > 0 ? ` ${nth + 1}` : ''}`;
    case 'meeting_room': {
      const round = Math.floor(nth / ROOM_WORDS.length);
      return `Meeting Room ${ROOM_WORDS[(nth + wordOffset) % ROOM_WORDS.length]}${round > 0 ? ` ${round + 1}` : ''}`;
    }
    case 'focus_room':
      return `Focus Room ${levelLabel(level)}.${nth + 1}`;
    case 'desk':
      return `Desk ${levelLabel(level)}.${String(nth + 1).padStart(2, '0')}`;
  }
}

/**
 * How many people a space of the kind holds: a desk 1, a focus room 1 or 2, a meeting room 4 to 12, an open area 12
 * to 32. `h` is the space's own hash, so equal kinds differ.
 */
export function spaceCapacity(type: SpaceType, h: number): number {
  switch (type) {
    case 'desk':
      return 1;
    case 'focus_room':
      return 1 + (h % 2);
    case 'meeting_room':
      return 4 + 2 * (h % 5);
    case 'open_area':
      return 12 + 4 * (h % 6);
  }
}
