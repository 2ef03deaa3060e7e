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

export function floorSpaceName(floorIndex: number): string {
  return floorIndex === 0 ? 'Ground floor' : `Floor ${floorIndex}`;
}
