import type { FloorSpaceSummary, HourlyPoint } from './types.ts';

/**
 * Which floor spaces a chart draws when there are too many to draw them all: chosen by what a facilities team asks
 * first, and said on the page. The table, the CSV and the JSON always list every floor space.
 */
export type SelectionRule = 'busiest' | 'emptiest' | 'change';
export const SELECTION_RULES: readonly SelectionRule[] = ['busiest', 'emptiest', 'change'];
/** More lines than this are not told apart on a chart (the palette has this many colours). */
export const MAX_CHOSEN = 10;

export interface Selection {
  rule: SelectionRule;
  /** The chosen floor spaces, in the order of the rule (first: most of it). */
  chosen: FloorSpaceSummary[];
  /** Of how many. */
  of: number;
  /** How the choice is described on the page, e.g. "the 10 busiest of 100 floor spaces by average headcount". */
  description: string;
}

const key = (p: { customerId: string; floorSpaceId: string }) => `${p.customerId}\u0000${p.floorSpaceId}`;
const byId = (a: FloorSpaceSummary, b: FloorSpaceSummary) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0);

/**
 * The change of each floor space: its average headcount in the second half of the range minus the first half,
 * from its hourly points (weighted by readings).
 */
export function changes(hourly: readonly HourlyPoint[], range: { from: string; to: string }): Map<string, number> {
  const middle = (Date.parse(range.from) + Date.parse(range.to)) / 2;
  const halves = new Map<string, { a: [number, number]; b: [number, number] }>();
  for (const p of hourly) {
    const k = key(p);
    const h = halves.get(k) ?? { a: [0, 0], b: [0, 0] };
    const half = Date.parse(p.hour) < middle ? h.a : h.b;
    half[0] += p.totalHeadcount;
    half[1] += p.readings;
    halves.set(k, h);
  }
  const avg = ([total, readings]: [number, number]) => (readings ? total / readings : 0);
  return new Map([...halves].map(([k, h]) => [k, avg(h.b) - avg(h.a)]));
}

export function selectFloorSpaces(
  rows: readonly FloorSpaceSummary[],
  hourly: readonly HourlyPoint[],
  range: { from: string; to: string },
  rule: SelectionRule,
  top: number,
): Selection {
  let sorted: FloorSpaceSummary[];
  if (rule === 'change') {
    const delta = changes(hourly, range);
    const of = (r: FloorSpaceSummary) => Math.abs(delta.get(key(r)) ?? 0);
    sorted = [...rows].sort((a, b) => of(b) - of(a) || byId(a, b));
  } else {
    const sign = rule === 'busiest' ? -1 : 1;
    sorted = [...rows].sort((a, b) => sign * (a.avgHeadcount - b.avgHeadcount) || sign * (a.occupiedShare - b.occupiedShare) || byId(a, b));
  }
  const chosen = sorted.slice(0, top);
  const n = rows.length;
  const description =
    n === 1
      ? 'the only floor space'
      : chosen.length === n
      ? `all ${n} floor spaces`
      : rule === 'change'
        ? `the ${chosen.length} of ${n} floor spaces with the biggest change in average headcount between the first and the second half of the range`
        : `the ${chosen.length} ${rule} of ${n} floor spaces by average headcount`;
  return { rule, chosen, of: n, description };
}
