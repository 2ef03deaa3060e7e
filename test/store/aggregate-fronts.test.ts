import { describe, expect, it } from 'vitest';
import type { BuildingCalendar } from '../../src/store/aggregate-calendars.ts';
import { frontsSince, holdFronts } from '../../src/store/aggregate-fronts.ts';
import { bucketsCovering } from '../../src/store/aggregate-plan.ts';
import { workingCalendar } from '../../src/working-time.ts';

/**
 * What a refresh beside a run recomputes (src/store/aggregate-fronts.ts): each range up to the bucket its last reading
 * is in, in the building's own buckets (a zone half an hour off UTC, a working day that starts inside an hour); the
 * rest left pending. The buckets before the cut are all there is to recompute, and those from it on are none of it.
 */

const MIN = 60_000;
const calendarOf = (buildingId: string, zone: string, start: string): BuildingCalendar => {
  const calendar = workingCalendar({ zone, days: [1, 2, 3, 4, 5], start, end: '17:00' });
  return { buildingId, zone, canonical: '', calendar, maxHoldMs: 15 * MIN };
};

describe('holdFronts', () => {
  // Monday 2026-03-02. Kolkata is UTC+05:30: its local hours start at half past a UTC hour; work starts at 08:15 local.
  const kolkata = calendarOf('b1', 'Asia/Kolkata', '08:15');
  const utc = calendarOf('b2', 'UTC', '09:00');
  const at = (iso: string) => Date.parse(iso);

  it('cuts each range at the start of the local hour its last reading is in, and leaves [cut, last] pending; a range within one hour is left whole', () => {
    const ranges = new Map<number, Array<[number, number]>>([
      // 07:30 to 11:10 local: the last reading is in the 11:00 local hour (05:30 UTC).
      [1, [[at('2026-03-02T02:00:00Z'), at('2026-03-02T05:40:00Z')]]],
      // 08:20 local, in the working piece of the 08:00 hour (08:15-09:00): the cut is the hour's start, 08:00 (a
      // recompute covers whole hours, both pieces).
      [2, [[at('2026-03-02T01:00:00Z'), at('2026-03-02T02:50:00Z')]]],
      // Within one hour (08:15-08:55 local): nothing to recompute yet.
      [3, [[at('2026-03-02T02:45:00Z'), at('2026-03-02T03:25:00Z')]]],
      // Two ranges days apart (a backfill's windows): each is cut at its own front.
      [4, [[at('2026-03-02T08:00:00Z'), at('2026-03-02T10:30:00Z')], [at('2026-03-05T08:00:00Z'), at('2026-03-05T09:10:00Z')]]],
    ]);
    const { work, fronts, openDates } = holdFronts(new Map([['b1', [1, 2, 3]], ['b2', [4]]]), new Map([['b1', kolkata], ['b2', utc]]), (k) => ranges.get(k));
    expect(work.map((w) => w.calendar.buildingId)).toEqual(['b1', 'b2']);
    expect(work[0]!.spans).toEqual([
      { key: 1, fromMs: at('2026-03-02T02:00:00Z'), toMs: at('2026-03-02T05:30:00Z') },
      { key: 2, fromMs: at('2026-03-02T01:00:00Z'), toMs: at('2026-03-02T02:30:00Z') },
    ]);
    expect(work[1]!.spans).toEqual([
      { key: 4, fromMs: at('2026-03-02T08:00:00Z'), toMs: at('2026-03-02T10:00:00Z') },
      { key: 4, fromMs: at('2026-03-05T08:00:00Z'), toMs: at('2026-03-05T09:00:00Z') },
    ]);
    expect(fronts).toEqual(
      new Map([
        [1, [[at('2026-03-02T05:30:00Z'), at('2026-03-02T05:40:00Z')]]],
        [2, [[at('2026-03-02T02:30:00Z'), at('2026-03-02T02:50:00Z')]]],
        [3, [[at('2026-03-02T02:45:00Z'), at('2026-03-02T03:25:00Z')]]],
        [4, [[at('2026-03-02T10:00:00Z'), at('2026-03-02T10:30:00Z')], [at('2026-03-05T09:00:00Z'), at('2026-03-05T09:10:00Z')]]],
      ]),
    );
    // The local date of each space's last front: its day is summed when that front is recomputed. 20:00 UTC on
    // Monday is already Tuesday in Kolkata.
    expect(openDates).toEqual(new Map([[1, '2026-03-02'], [2, '2026-03-02'], [3, '2026-03-02'], [4, '2026-03-05']]));
    const late = holdFronts(new Map([['b1', [9]]]), new Map([['b1', kolkata]]), () => [[at('2026-03-02T17:00:00Z'), at('2026-03-02T19:00:00Z')]]);
    expect(late.openDates.get(9)).toBe('2026-03-03');
  });

  it('recomputes exactly the buckets before the hour of the last reading, working pieces included, and none of that hour', () => {
    // 07:40 to 08:20 local, and on to 09:50: the last reading in an hour the working day cuts, then in a whole one.
    for (const [last, hour] of [
      [at('2026-03-02T02:50:00Z'), at('2026-03-02T02:30:00Z')],
      [at('2026-03-02T04:20:00Z'), at('2026-03-02T03:30:00Z')],
    ] as const) {
      const first = at('2026-03-02T01:10:00Z');
      const { work, fronts } = holdFronts(new Map([['b1', [7]]]), new Map([['b1', kolkata]]), () => [[first, last]]);
      const [span] = work[0]!.spans;
      const recomputed = bucketsCovering(kolkata.calendar, span!.fromMs, span!.toMs);
      const all = bucketsCovering(kolkata.calendar, first, last + 1);
      expect(recomputed).toEqual(all.filter((b) => b.end <= hour));
      expect(all.filter((b) => b.start >= hour).length).toBeGreaterThan(0);
      expect(fronts.get(7)).toEqual([[hour, last]]);
    }
  });

  it('dates what it leaves by the oldest claimed page that wrote into it, not the oldest page that named the space', () => {
    const fronts = new Map<number, Array<[number, number]>>([
      [1, [[100, 130]]],
      [2, [[200, 210]]],
    ]);
    const claimed = [
      // Readings of both spaces before their fronts: the run's first page.
      { at: '2026-03-02T08:00:00.000Z', groups: [[0, 90, 1, 2]] as Array<[number, number, ...number[]]> },
      // Into space 1's front.
      { at: '2026-03-02T08:01:00.000Z', groups: [[95, 120, 1]] as Array<[number, number, ...number[]]> },
      // Into space 2's front; space 1's readings after its front (a range apart) are not in it.
      { at: '2026-03-02T08:02:00.000Z', groups: [[150, 205, 2], [131, 140, 1]] as Array<[number, number, ...number[]]> },
    ];
    expect(frontsSince(claimed, fronts)).toBe('2026-03-02T08:01:00.000Z');
    expect(frontsSince(claimed.slice(2), fronts)).toBe('2026-03-02T08:02:00.000Z');
    expect(frontsSince(claimed.slice(0, 1), fronts)).toBeUndefined();
  });
});
