/**
 * The report's figures from the sums the time-weighted views give (docs/reporting.md, "Time-weighted views"): every
 * ratio a ratio of sums, NULL (null) where its denominator is 0. Time sums are kept in integer milliseconds, so adding
 * rows is exact in any order. Pure.
 */

/** What a group of floor spaces over a period sums to. */
export interface Sums {
  /** The time measured against: working time (working hours) or the whole days, x the floor spaces counted. */
  periodMs: number;
  knownMs: number;
  occupiedMs: number;
  headcountMs: number;
  headcountKnownMs: number;
  /** Σ capacity x headcount-known time over floor spaces whose capacity is known; null when none is. */
  capacityMs: number | null;
  /** Headcount time of those floor spaces; null when none is. */
  capacityHeadcountMs: number | null;
  peakHeadcount: number | null;
  peakUtilization: number | null;
}

/** The figures a reader sees, each a ratio of sums (0..1 for shares), null when unknown. */
export interface Figures extends Sums {
  /** known / period. */
  coverage: number | null;
  /** % time used: occupied / known. */
  timeUsed: number | null;
  avgHeadcount: number | null;
  /** capacityHeadcount / capacity: average headcount against capacity, over floor spaces with a known capacity. */
  utilization: number | null;
}

/** Below this coverage a figure rests on too little measured time to be trusted (Planon's rule): it is flagged. */
export const COVERAGE_THRESHOLD = 0.8;

export const NO_SUMS: Sums = Object.freeze({ periodMs: 0, knownMs: 0, occupiedMs: 0, headcountMs: 0, headcountKnownMs: 0, capacityMs: null, capacityHeadcountMs: null, peakHeadcount: null, peakUtilization: null });

const ratio = (a: number | null, b: number | null): number | null => (a === null || b === null || b === 0 ? null : a / b);
const addNull = (a: number | null, b: number | null): number | null => (a === null ? b : b === null ? a : a + b);
const maxNull = (a: number | null, b: number | null): number | null => (a === null ? b : b === null ? a : Math.max(a, b));

export function addSums(a: Sums, b: Sums): Sums {
  return {
    periodMs: a.periodMs + b.periodMs,
    knownMs: a.knownMs + b.knownMs,
    occupiedMs: a.occupiedMs + b.occupiedMs,
    headcountMs: a.headcountMs + b.headcountMs,
    headcountKnownMs: a.headcountKnownMs + b.headcountKnownMs,
    capacityMs: addNull(a.capacityMs, b.capacityMs),
    capacityHeadcountMs: addNull(a.capacityHeadcountMs, b.capacityHeadcountMs),
    peakHeadcount: maxNull(a.peakHeadcount, b.peakHeadcount),
    peakUtilization: maxNull(a.peakUtilization, b.peakUtilization),
  };
}

export function figures(s: Sums): Figures {
  return {
    ...s,
    coverage: ratio(s.knownMs, s.periodMs),
    timeUsed: ratio(s.occupiedMs, s.knownMs),
    avgHeadcount: ratio(s.headcountMs, s.headcountKnownMs),
    utilization: ratio(s.capacityHeadcountMs, s.capacityMs),
  };
}

/** A coverage under the threshold (and not unknown): the figure is flagged. */
export function lowCoverage(f: Pick<Figures, 'coverage'>): boolean {
  return f.coverage !== null && f.coverage < COVERAGE_THRESHOLD;
}
