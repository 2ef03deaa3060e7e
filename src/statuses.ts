/**
 * The canonical occupancy statuses: what a reading's `occupancy_status` is stored as, whatever the API spells (a
 * stream's value map translates the spellings; docs/api-assumptions.md, "Values"). The platform's document names
 * `CurrentlyOccupied`; `Unoccupied` is its vacant counterpart, as the sandbox and the worked examples store it. Any
 * other stored value is a status nobody can read: the reports count it neither occupied nor vacant (docs/reporting.md,
 * "The hold rule"), and `check`, `sync` and `status` name it as unmapped.
 */

/** The stored value of an occupied reading, the one the reporting views count. */
export const OCCUPIED_STATUS = 'CurrentlyOccupied';
/** The stored value of a vacant reading. */
export const VACANT_STATUS = 'Unoccupied';
export const CANONICAL_STATUSES: readonly string[] = [OCCUPIED_STATUS, VACANT_STATUS];

/** Whether a stored status is one the reports read (occupied or vacant). */
export function isCanonicalStatus(status: unknown): boolean {
  return status === OCCUPIED_STATUS || status === VACANT_STATUS;
}

/** A stored status as the time-weighted figures read it: occupied (true), vacant (false) or unknown (null). */
export function occupiedOf(status: unknown): boolean | null {
  return status === OCCUPIED_STATUS ? true : status === VACANT_STATUS ? false : null;
}

/**
 * The canonical status an API's spelling most likely means, for a suggested value map (`NOT_OCCUPIED`, `vacant`,
 * `Available`: Unoccupied; `Occupied`, `busy`, `in use`: CurrentlyOccupied); `<stored value>` when it cannot tell.
 */
export function canonicalGuess(spelling: string): string {
  return /\b(not|un|no|vacant|free|empty|available)|^(un|not|no)/i.test(spelling.replace(/_/g, ' '))
    ? VACANT_STATUS
    : /occupied|busy|in.?use/i.test(spelling)
      ? OCCUPIED_STATUS
      : '<stored value>';
}
