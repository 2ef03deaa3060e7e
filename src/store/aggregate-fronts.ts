import type { BuildingCalendar } from './aggregate-calendars.ts';
import { addRange, bucketsCovering, type Bucket, type Ranges, type Span } from './aggregate-plan.ts';
import type { ClaimedPage } from './aggregate-page-invalidations.ts';
import type { BuildingSpans } from './aggregates.ts';

/**
 * What a refresh beside a run recomputes and what it leaves (docs/reporting.md, "When the aggregates are current").
 * The run is still committing the hour that holds each floor space's last reading so far, and the max hold after
 * it: a refresh that wrote them would read that hour's readings again at the next refresh and write it again
 * (docs/performance.md, "A refresh beside a run leaves each floor space's latest hour"). So a refresh beside the
 * run recomputes each stale range only up to the start of that hour, and leaves the rest of the range pending for the
 * next refresh (the run's end does everything). The buckets before the cut are final: a bucket's figures depend only
 * on the readings from a max hold before it to its end, all before the cut.
 */

/**
 * A building's floor spaces' work up to their fronts, per floor space the ranges left pending (Ranges), and the local
 * date of its last front (RecomputeOptions.openDates: its day is summed when that front is).
 */
export interface HeldFronts {
  work: BuildingSpans[];
  fronts: Map<number, Ranges>;
  openDates: Map<number, string>;
}

/**
 * Each floor space's stale ranges (`ranges`: [first, last] of its readings, Ranges) cut at the start of the local hour
 * holding `last` in its building's calendar: [first, cut) recomputed, [max(first, cut), last] left pending. A range
 * within one hour is left whole. `batch`: the floor spaces by building, as locked.
 */
export function holdFronts(batch: ReadonlyMap<string, readonly number[]>, calendars: ReadonlyMap<string, BuildingCalendar>, ranges: (key: number) => ReadonlyArray<readonly [number, number]> | undefined): HeldFronts {
  const work: BuildingSpans[] = [];
  const fronts = new Map<number, Ranges>();
  const openDates = new Map<number, string>();
  for (const [building, keys] of batch) {
    const calendar = calendars.get(building)!;
    // Most floor spaces of a page share their last instant: its hour is found once. The whole local hour, not the
    // piece of it holding `last` where the working time starts or ends inside it: a recompute covers whole hours.
    const cuts = new Map<number, Bucket>();
    const cutAt = (last: number) => {
      let cut = cuts.get(last);
      if (cut === undefined) cuts.set(last, (cut = bucketsCovering(calendar.calendar, last, last + 1)[0]!));
      return cut;
    };
    const spans: Span[] = [];
    for (const key of keys) {
      const held: Ranges = [];
      for (const [first, last] of ranges(key) ?? []) {
        const { start: cut, date } = cutAt(last);
        // Ranges come in time order: the last one's date stays.
        openDates.set(key, date);
        // The ranges are closed ([first, last]); a span's end is exclusive: [first, cut) is the buckets before the cut.
        if (cut > first) addRange(held, first, cut - 1);
        let own = fronts.get(key);
        if (!own) fronts.set(key, (own = []));
        addRange(own, Math.max(first, cut), last);
      }
      for (const [fromMs, toMs] of held) spans.push({ key, fromMs, toMs: toMs + 1 });
    }
    work.push({ calendar, spans });
  }
  return { work, fronts, openDates };
}

/**
 * When the oldest claimed page that wrote readings into a range left pending (`fronts`) committed: what the row of
 * those ranges is stale since. The oldest page naming a floor space would do, but in a long run that is a page of the
 * run's first minutes for every refresh beside it, while its latest hour was written by the latest pages.
 */
export function frontsSince(claimed: readonly ClaimedPage[], fronts: ReadonlyMap<number, Ranges>): string | undefined {
  let oldest: string | undefined;
  for (const { at, groups } of claimed) {
    if (oldest !== undefined && at >= oldest) continue;
    if (groups.some((g) => wroteInto(g, fronts))) oldest = at;
  }
  return oldest;
}

/** Whether a page's group [first, last, key...] has readings of one of its floor spaces in that space's fronts. */
function wroteInto(group: readonly number[], fronts: ReadonlyMap<number, Ranges>): boolean {
  const first = group[0]!;
  const last = group[1]!;
  for (let i = 2; i < group.length; i++) {
    const own = fronts.get(group[i]!);
    if (own?.some(([a, b]) => last >= a && first <= b)) return true;
  }
  return false;
}
