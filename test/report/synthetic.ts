import { addSums, figures, NO_SUMS, type Sums } from '../../src/report/figures.ts';
import type { BuildingReport, FloorReport, ProfileCells, ReportData, SpaceReport } from '../../src/report/types.ts';

/**
 * Deterministic report data for rendering tests: buildings with named floors and floor spaces, figures with an
 * office-hours shape and weekday x hour profiles in working hours (Monday to Friday, 08:00-18:00). The store-backed
 * tests (cli.test.ts, time-weighted-views.test.ts) use a real database instead.
 */

const HOUR = 3_600_000;

function sums(seed: number, capacity: number | null, coverage = 0.95): Sums {
  const periodMs = 10 * HOUR;
  const knownMs = Math.round(periodMs * coverage);
  const occupiedMs = Math.round(knownMs * (0.2 + ((seed * 37) % 60) / 100));
  const headcountMs = occupiedMs * (1 + (seed % 4));
  return {
    periodMs,
    knownMs,
    occupiedMs,
    headcountMs,
    headcountKnownMs: knownMs,
    capacityMs: capacity ? capacity * knownMs : null,
    capacityHeadcountMs: capacity ? headcountMs : null,
    peakHeadcount: Math.min(capacity ?? 8, 1 + (seed % 4) * 2),
    peakUtilization: capacity ? Math.min(capacity, 1 + (seed % 4) * 2) / capacity : null,
  };
}

function profile(seed: number, empty: boolean): ProfileCells {
  return Array.from({ length: 7 }, (_, d) =>
    Array.from({ length: 24 }, (_, h) => {
      if (empty || d >= 5 || h < 8 || h >= 18) return null;
      const peak = Math.sin(((h - 8 + 0.5) / 10) * Math.PI);
      const knownMs = HOUR;
      return figures({ ...NO_SUMS, periodMs: HOUR, knownMs, occupiedMs: Math.round(knownMs * Math.min(1, 0.1 + peak * (0.5 + (seed % 5) / 10))), headcountMs: 2 * knownMs, headcountKnownMs: knownMs });
    }),
  );
}

export interface SyntheticOptions {
  buildings?: number;
  floors?: number;
  spaces?: number;
  /** No profile cell holds data: every heat map is empty. */
  emptyProfiles?: boolean;
}

export function syntheticReport(o: SyntheticOptions = {}): ReportData {
  const zones = ['Europe/Berlin', 'Asia/Kolkata', 'America/New_York'];
  const names = ['Harbour Hall', 'Lotus Tower', 'Annex', 'Quay House'];
  let seed = 0;
  const buildings: BuildingReport[] = Array.from({ length: o.buildings ?? 2 }, (_, b) => {
    const floors: FloorReport[] = Array.from({ length: o.floors ?? 2 }, (_, f) => {
      const spaces: SpaceReport[] = Array.from({ length: o.spaces ?? 3 }, (_, s) => {
        seed++;
        const capacity = s === 2 ? null : 2 + s * 4;
        return { floorSpaceId: `fs-${b}-${f}-${s}`, name: `Room ${f + 1}.${String(s + 1).padStart(2, '0')}`, spaceType: s === 0 ? 'desk' : 'meeting_room', capacity, figures: figures(sums(seed, capacity, s === 1 && f === 1 ? 0.6 : 0.95)) };
      });
      return { floorId: `fl-${b}-${f}`, name: `Floor ${f + 1}`, level: f + 1, spaces, profile: profile(b * 10 + f, o.emptyProfiles ?? false), figures: figures(spaces.reduce((a, s) => addSums(a, s.figures), NO_SUMS)) };
    });
    return {
      customerId: 'cust-1',
      customerName: null,
      buildingId: `b-${b}`,
      name: names[b % names.length]!,
      timeZone: zones[b % zones.length]!,
      floors,
      profile: profile(b, o.emptyProfiles ?? false),
      figures: figures(floors.reduce((a, f) => addSums(a, f.figures), NO_SUMS)),
    };
  });
  const all = buildings.reduce((a, b) => addSums(a, b.figures), NO_SUMS);
  return {
    range: { from: '2026-03-23', to: '2026-03-30' },
    scope: 'working',
    customerId: null,
    generatedAt: '2026-03-30T06:00:00.000Z',
    portfolios: [{ customerId: 'cust-1', customerName: null, buildings: buildings.length, spaces: buildings.reduce((n, b) => n + b.floors.reduce((m, f) => m + f.spaces.length, 0), 0), figures: figures(all) }],
    buildings,
  };
}
