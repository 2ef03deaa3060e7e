import { hashInts, hexFrom, mix32, rand01, seriesWords, Tag, uuidFrom, uuidFromWords } from './ids.ts';
import { buildingName, buildingZone, customerName, firstLevel, floorName, floorSpaceName, spaceCapacity, SPACE_TYPES, type SpaceType } from './names.ts';
import type { SandboxKey } from './interfaces.ts';

/**
 * The synthetic world. Customers, buildings and floor spaces are few and held as objects; observations are never
 * stored: one tick of one customer is computed from the seed when asked for, so a million-row dataset costs nothing
 * until it is paged, and a page starts at the cursor's tick by arithmetic instead of scanning from the start.
 */

export const OCCUPIED = 'CurrentlyOccupied';
export const UNOCCUPIED = 'Unoccupied';

export interface FloorSpace {
  id: string;
  buildingId: string;
  floorId: string;
  name: string;
  /** Index within the customer; feeds the hash of its observations. */
  index: number;
  /** What the platform says the space holds; null for the spaces whose capacity it does not know. */
  capacity: number | null;
  /** What the space holds whether or not the platform says so: the most people a reading counts. */
  maxHeadcount: number;
  spaceType: SpaceType;
  /** Hash of (seed, customer, floor space): every observation of the series derives from it and the tick. */
  series: number;
}

/** A storey of a building that has sensed spaces. */
export interface Floor {
  id: string;
  buildingId: string;
  name: string;
  /** 0 the ground floor, negative below it. */
  level: number;
}

export interface Building {
  id: string;
  name: string;
  /** The building's IANA time zone. */
  timeZone: string;
  floors: Floor[];
  floorSpaces: FloorSpace[];
  /** Periods [from, to) in which the building was removed: no observations are produced for ticks inside them. */
  removals: Array<{ from: number; to: number }>;
}

export interface CustomerData {
  index: number;
  id: string;
  name: string;
  buildings: Building[];
  readKey: SandboxKey;
  writeKey: SandboxKey;
  keys: SandboxKey[];
}

export interface Observation {
  id: string;
  floorSpaceId: string;
  buildingId: string;
  occupancyStatus: string;
  headcount: number;
  createdMs: number;
  visibleAtMs: number;
}

export interface DataModelOptions {
  seed: number;
  customers: number;
  buildingsPerCustomer: number;
  floorSpacesPerBuilding: number;
  dataStartMs: number;
  intervalMs: number;
  lateArrivalMaxMs: number;
}

export interface ObservationQuery {
  fromMs: number;
  toMs: number;
  visibleAtMs: number;
  /** Resume strictly after this (created, id). */
  after?: { createdMs: number; id: string };
  /** Skip this many rows first (offset and page-number paging); whole ticks are skipped by arithmetic. */
  skip?: number;
  /** Only this floor space's observations (per-space history), computed alone: not with `skip`. */
  floorSpaceId?: string;
}

const OPEN = Number.POSITIVE_INFINITY;

/** Floors with sensed spaces in a building of `spaces` spaces: two spaces a floor, at most eight floors. */
function floorCount(spaces: number): number {
  return Math.min(8, Math.ceil(spaces / 2));
}

export class DataModel {
  readonly customers: CustomerData[];
  readonly #byId = new Map<string, CustomerData>();
  readonly #o: DataModelOptions;

  constructor(options: DataModelOptions) {
    this.#o = options;
    const { seed } = options;
    this.customers = Array.from({ length: options.customers }, (_, c) => {
      const id = uuidFrom([seed, Tag.customer, c]);
      let fsIndex = 0;
      const buildings = Array.from({ length: options.buildingsPerCustomer }, (_, b): Building => {
        const buildingId = uuidFrom([seed, Tag.building, c, b]);
        const spaces = options.floorSpacesPerBuilding;
        const floors = Array.from({ length: floorCount(spaces) }, (_, n): Floor => {
          const level = firstLevel(b) + n;
          return { id: uuidFrom([seed, Tag.floor, c, b, n]), buildingId, name: floorName(level), level };
        });
        // How many spaces of each kind came before, on the floor (names number them per floor) and in the building.
        const seen = new Map<string, number>();
        const nth = (key: string): number => {
          const n = seen.get(key) ?? 0;
          seen.set(key, n + 1);
          return n;
        };
        const wordOffset = hashInts([seed, Tag.room, c, b]);
        const floorSpaces = Array.from({ length: spaces }, (_, f): FloorSpace => {
          const index = fsIndex++;
          const floor = floors[Math.floor((f * floors.length) / spaces)]!;
          const spaceType = SPACE_TYPES[f % SPACE_TYPES.length]!;
          const count = nth(spaceType === 'meeting_room' ? spaceType : `${spaceType}@${floor.level}`);
          const maxHeadcount = spaceCapacity(spaceType, hashInts([seed, Tag.capacity, c, index]));
          return {
            id: uuidFrom([seed, Tag.floorSpace, c, index]),
            buildingId,
            floorId: floor.id,
            name: floorSpaceName(spaceType, floor.level, count, wordOffset),
            index,
            // Every fifth space of a customer has a capacity the platform does not know.
            capacity: index % 5 === 4 ? null : maxHeadcount,
            maxHeadcount,
            spaceType,
            series: hashInts([seed, Tag.observation, c, index]),
          };
        });
        return { id: buildingId, name: buildingName(seed, c, b), timeZone: buildingZone(c, b), floors, floorSpaces, removals: [] };
      });
      const key = (kind: number, name: string, writeScope: boolean, userCanWrite: boolean): SandboxKey => ({
        key: `sandbox-${c + 1}-${name}`,
        secret: hexFrom([seed, Tag.key, c, kind], 24),
        scopes: writeScope ? ['ReadPublicApi', 'WritePublicApi'] : ['ReadPublicApi'],
        userCanWrite,
      });
      const readKey = key(0, 'read', false, false);
      const writeKey = key(1, 'write', true, true);
      // Scopes are independent of the user's permissions (API document 5.7): this key proves mutations check both.
      const viewerKey = key(2, 'write-viewer', true, false);
      const customer: CustomerData = {
        index: c,
        id,
        name: customerName(c),
        buildings,
        readKey,
        writeKey,
        keys: [readKey, writeKey, viewerKey],
      };
      this.#byId.set(id, customer);
      return customer;
    });
  }

  get dataStartMs(): number {
    return this.#o.dataStartMs;
  }
  get intervalMs(): number {
    return this.#o.intervalMs;
  }
  get lateArrivalMaxMs(): number {
    return this.#o.lateArrivalMaxMs;
  }

  customer(id: string): CustomerData | undefined {
    return this.#byId.get(id);
  }

  requireCustomer(id: string): CustomerData {
    const customer = this.#byId.get(id);
    if (!customer) throw new Error(`sandbox: unknown customer id ${JSON.stringify(id)}; use one of sandbox.customers[].id`);
    return customer;
  }

  building(customer: CustomerData, buildingId: string): Building {
    const building = customer.buildings.find((b) => b.id === buildingId);
    if (!building) {
      throw new Error(`sandbox: customer ${customer.id} has no building ${JSON.stringify(buildingId)}`);
    }
    return building;
  }

  isPresent(building: Building, atMs: number): boolean {
    for (const r of building.removals) if (atMs >= r.from && atMs < r.to) return false;
    return true;
  }

  removeBuilding(customer: CustomerData, buildingId: string, atMs: number): void {
    const building = this.building(customer, buildingId);
    if (this.isPresent(building, atMs)) building.removals.push({ from: atMs, to: OPEN });
  }

  restoreBuilding(customer: CustomerData, buildingId: string, atMs: number): void {
    const building = this.building(customer, buildingId);
    for (const r of building.removals) if (r.to === OPEN) r.to = atMs;
  }

  currentBuildings(customer: CustomerData, atMs: number): Building[] {
    return customer.buildings.filter((b) => this.isPresent(b, atMs));
  }

  tickCreatedMs(k: number): number {
    return this.#o.dataStartMs + k * this.#o.intervalMs;
  }

  /** When tick k of this customer becomes visible: created plus a deterministic delay in [0, lateArrivalMaxMs]. */
  tickVisibleAtMs(customer: CustomerData, k: number): number {
    const max = this.#o.lateArrivalMaxMs;
    const delay = max <= 0 ? 0 : Math.floor(rand01([this.#o.seed, Tag.delay, customer.index, k]) * (max + 1));
    return this.tickCreatedMs(k) + delay;
  }

  /** Every observation of tick k (one per floor space present at that time), ordered by id. */
  tickObservations(customer: CustomerData, k: number, floorSpaceId?: string): Observation[] {
    const createdMs = this.tickCreatedMs(k);
    const visibleAtMs = this.tickVisibleAtMs(customer, k);
    // Scaled to 32 bits so the status draw is an integer comparison with a word of the id hash.
    const occupiedBelow = occupancyChance(createdMs) * 4294967296;
    const words = new Uint32Array(4);
    const rows: Array<Observation & { order: number }> = [];
    for (const building of customer.buildings) {
      if (!this.isPresent(building, createdMs)) continue;
      for (const fs of building.floorSpaces) {
        if (floorSpaceId !== undefined && fs.id !== floorSpaceId) continue;
        seriesWords(fs.series, k, words);
        const draw = mix32(words[3]! ^ 0x5bd1e995);
        const occupied = draw < occupiedBelow;
        rows.push({
          id: uuidFromWords(words),
          order: words[0]!,
          floorSpaceId: fs.id,
          buildingId: building.id,
          occupancyStatus: occupied ? OCCUPIED : UNOCCUPIED,
          headcount: occupied ? 1 + (mix32(draw ^ words[2]!) % fs.maxHeadcount) : 0,
          createdMs,
          visibleAtMs,
        });
      }
    }
    // words[0] is the id's first 8 hex digits, so numeric order equals string order except on (rare) ties.
    rows.sort((a, b) => a.order - b.order || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return rows;
  }

  /**
   * Observations with created in [fromMs, toMs) that are visible at visibleAtMs, ordered (created, id), starting
   * strictly after `after`. Lazy: a consumer that stops early computes only the ticks it read.
   */
  *observations(customer: CustomerData, q: ObservationQuery): Generator<Observation> {
    const start = this.#o.dataStartMs;
    const interval = this.#o.intervalMs;
    let k = Math.max(0, Math.ceil((q.fromMs - start) / interval));
    let skipTick = -1;
    let skipUpTo = '';
    if (q.after) {
      const kc = Math.ceil((q.after.createdMs - start) / interval);
      if (kc >= k) {
        k = kc;
        if (this.tickCreatedMs(kc) === q.after.createdMs) {
          skipTick = kc;
          skipUpTo = q.after.id;
        }
      }
    }
    // Nothing is visible before it is created, so ticks after visibleAtMs cannot contribute.
    const end = Math.min(Math.ceil((q.toMs - start) / interval), Math.floor((q.visibleAtMs - start) / interval) + 1);
    let skip = q.skip ?? 0;
    for (; k < end; k++) {
      if (this.tickVisibleAtMs(customer, k) > q.visibleAtMs) continue;
      if (skip > 0 && k !== skipTick) {
        const size = this.tickSize(customer, this.tickCreatedMs(k));
        if (skip >= size) {
          skip -= size;
          continue;
        }
      }
      for (const row of this.tickObservations(customer, k, q.floorSpaceId)) {
        if (k === skipTick && row.id <= skipUpTo) continue;
        if (skip > 0) {
          skip--;
          continue;
        }
        yield row;
      }
    }
  }

  /** The number of observations of `q` (its `after` and `skip` aside), counted per tick without generating rows. */
  countObservations(customer: CustomerData, q: ObservationQuery): number {
    const start = this.#o.dataStartMs;
    const interval = this.#o.intervalMs;
    const end = Math.min(Math.ceil((q.toMs - start) / interval), Math.floor((q.visibleAtMs - start) / interval) + 1);
    let count = 0;
    for (let k = Math.max(0, Math.ceil((q.fromMs - start) / interval)); k < end; k++) {
      if (this.tickVisibleAtMs(customer, k) <= q.visibleAtMs) count += this.tickSize(customer, this.tickCreatedMs(k));
    }
    return count;
  }

  /** Observations in a tick created at createdMs: one per floor space of the buildings present then. */
  tickSize(customer: CustomerData, createdMs: number): number {
    let size = 0;
    for (const building of customer.buildings) if (this.isPresent(building, createdMs)) size += building.floorSpaces.length;
    return size;
  }

  /** Ticks k whose visibility instant lies in (afterMs, uptoMs], in visibility order. */
  ticksBecomingVisible(customer: CustomerData, afterMs: number, uptoMs: number): number[] {
    const start = this.#o.dataStartMs;
    const interval = this.#o.intervalMs;
    const first = Math.max(0, Math.floor((afterMs - this.#o.lateArrivalMaxMs - start) / interval));
    const last = Math.floor((uptoMs - start) / interval);
    const ticks: Array<{ k: number; at: number }> = [];
    for (let k = first; k <= last; k++) {
      const at = this.tickVisibleAtMs(customer, k);
      if (at > afterMs && at <= uptoMs) ticks.push({ k, at });
    }
    ticks.sort((a, b) => a.at - b.at || a.k - b.k);
    return ticks.map((t) => t.k);
  }
}

/** Offices fill on weekday working hours (UTC) and stay mostly empty otherwise. */
function occupancyChance(createdMs: number): number {
  const date = new Date(createdMs);
  const hour = date.getUTCHours();
  const day = date.getUTCDay();
  const workday = day >= 1 && day <= 5;
  return workday && hour >= 7 && hour < 19 ? 0.65 : 0.08;
}

const CURSOR_PREFIX = 'occ1:';

/**
 * Opaque to clients; encodes the (created, id) of the last row of a page. Each variant has its own prefix, so a
 * cursor or token of one shape is refused by another.
 */
export function encodeCursor(createdMs: number, id: string, prefix = CURSOR_PREFIX): string {
  return Buffer.from(`${prefix}${createdMs}:${id}`, 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string, prefix = CURSOR_PREFIX): { createdMs: number; id: string } | undefined {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!text.startsWith(prefix)) return undefined;
  const rest = text.slice(prefix.length);
  const sep = rest.indexOf(':');
  const createdMs = Number(rest.slice(0, sep));
  const id = rest.slice(sep + 1);
  if (sep < 1 || !Number.isSafeInteger(createdMs) || !/^[0-9a-f-]{36}$/.test(id)) return undefined;
  return { createdMs, id };
}
