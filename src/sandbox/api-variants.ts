/**
 * The API variants the sandbox serves (`startSandbox({ apiVariant })`, `occupancy-sync sandbox --api-variant NAME`):
 * one data model and one ground truth, served through differently shaped occupancy queries and webhook mutations,
 * after the common public GraphQL API forms, so adapting to an unknown API with a definitions file can be practised
 * and tested. The documented parts (auth, gzip, `buildings(nameLike)`, the webhook delivery body) are the same in all.
 *
 * Facts only, no GraphQL: the CLI lists the variants from here without loading the sandbox.
 */

export const API_VARIANTS = ['v1', 'v2', 'edges', 'token', 'pages', 'capped', 'presence', 'change', 'per-space'] as const;
export type ApiVariant = (typeof API_VARIANTS)[number];

/**
 * A variant's spelling of the two canonical statuses (the ground truth and the deliveries keep the canonical ones);
 * a Boolean status by its text (`true`), as a value map in the definitions reads it.
 */
export interface StatusSpelling {
  CurrentlyOccupied: string;
  Unoccupied: string;
}

export interface ApiVariantInfo {
  /** One line for --help and the docs. */
  summary: string;
  /** The schema it serves, relative to the package root. */
  schemaFile: string;
  /** Its occupancy query, as a client calls it. */
  query: string;
  statuses: StatusSpelling;
  /** The largest page the occupancy query serves; a larger request is a GraphQL error, except for `capped`, which cuts silently. */
  maxPageSize: number;
  /** Its readings carry a headcount; false: presence-only sensors, whose truth holds null (never 0). */
  headcount: boolean;
  /**
   * How its sensors report (a stream's `sampling:`): `interval`, a reading of every space every tick; `change`, a
   * space's reading only at a tick whose status differs from the tick before (src/sandbox/variants/change.ts).
   */
  sampling: 'interval' | 'change';
}

const CANONICAL: StatusSpelling = { CurrentlyOccupied: 'CurrentlyOccupied', Unoccupied: 'Unoccupied' };

export const API_VARIANT_INFO: Readonly<Record<ApiVariant, ApiVariantInfo>> = {
  v1: {
    summary: 'the API occupancy-sync assumes: Relay nodes + pageInfo, [from, to) in ISO 8601',
    schemaFile: 'jobs/schema.graphql',
    query: 'occupancy(from, to, first, after)',
    statuses: CANONICAL,
    maxPageSize: 5000,
    headcount: true,
    sampling: 'interval',
  },
  v2: {
    summary: 'offset-paged, readings nested under buildings and floor spaces, other field names, times at +02:00',
    schemaFile: 'src/sandbox/schema-v2.graphql',
    query: 'floorSpaceReadings(since, until, limit, offset)',
    statuses: CANONICAL,
    maxPageSize: 5000,
    headcount: true,
    sampling: 'interval',
  },
  edges: {
    summary: 'Relay edges { cursor node } as GitHub and Shopify, the window in an input, an enum status, +00:00 times',
    schemaFile: 'src/sandbox/schema-edges.graphql',
    query: 'occupancyEvents(filter: { observedFrom, observedBefore }, first, after)',
    statuses: { CurrentlyOccupied: 'CURRENTLY_OCCUPIED', Unoccupied: 'NOT_OCCUPIED' },
    maxPageSize: 100,
    headcount: true,
    sampling: 'interval',
  },
  token: {
    summary: 'AppSync-like items + nextToken, epoch-second bounds with an inclusive end, epoch-millisecond times',
    schemaFile: 'src/sandbox/schema-token.graphql',
    query: 'listOccupancyReadings(startTime, endTime, limit, nextToken)',
    statuses: { CurrentlyOccupied: 'occupied', Unoccupied: 'vacant' },
    maxPageSize: 500,
    headcount: true,
    sampling: 'interval',
  },
  pages: {
    summary: 'page numbers from 1 with totalCount, bounds and times as epoch milliseconds in strings',
    schemaFile: 'src/sandbox/schema-pages.graphql',
    query: 'occupancyPage(from, to, page, pageSize)',
    statuses: { CurrentlyOccupied: 'Occupied', Unoccupied: 'Unoccupied' },
    maxPageSize: 200,
    headcount: true,
    sampling: 'interval',
  },
  capped: {
    summary: 'one unpaged list that silently stops at 500 readings (what paging none meets on a capping server), epoch-second times',
    schemaFile: 'src/sandbox/schema-capped.graphql',
    query: 'occupancyReadings(from, to)',
    statuses: CANONICAL,
    maxPageSize: 500,
    headcount: true,
    sampling: 'interval',
  },
  presence: {
    summary: 'presence-only sensors: an occupied Boolean and no headcount field, Relay nodes + pageInfo, ISO 8601',
    schemaFile: 'src/sandbox/schema-presence.graphql',
    query: 'presence(from, to, first, after)',
    statuses: { CurrentlyOccupied: 'true', Unoccupied: 'false' },
    maxPageSize: 1000,
    headcount: false,
    sampling: 'interval',
  },
  change: {
    summary: "change-only sensors: an event only when a space's status changes, items + nextCursor, statuses Occupied/Available",
    schemaFile: 'src/sandbox/schema-change.graphql',
    query: 'statusChanges(from, to, limit, cursor)',
    statuses: { CurrentlyOccupied: 'Occupied', Unoccupied: 'Available' },
    maxPageSize: 500,
    headcount: true,
    sampling: 'change',
  },
  'per-space': {
    summary: 'readings reachable only per floor space (no query returns them all), the floor spaces listed, Relay nodes',
    schemaFile: 'src/sandbox/schema-per-space.graphql',
    query: 'floorSpaceOccupancy(floorSpaceId, from, to, first, after)',
    statuses: CANONICAL,
    maxPageSize: 1000,
    headcount: true,
    sampling: 'interval',
  },
};

export function isApiVariant(value: string): value is ApiVariant {
  return (API_VARIANTS as readonly string[]).includes(value);
}

/** How `variant` spells a canonical status (`CurrentlyOccupied` or `Unoccupied`). */
export function spellStatus(variant: ApiVariant, canonical: string): string {
  const spelled = API_VARIANT_INFO[variant].statuses[canonical as keyof StatusSpelling];
  if (spelled === undefined) throw new RangeError(`sandbox: ${JSON.stringify(canonical)} is not a canonical status; use CurrentlyOccupied or Unoccupied`);
  return spelled;
}
