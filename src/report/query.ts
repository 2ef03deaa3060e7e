import type { Clock } from '../clock.ts';
import { reportFigureRows, reportProfileRows, type ReportFilter, type ReportRow } from '../store/report-queries.ts';
import type { Store } from '../store/types.ts';
import { toIsoUtc } from '../time.ts';
import { figures, type Sums } from './figures.ts';
import type { BuildingReport, FloorReport, PortfolioReport, ProfileCells, ReportData, ReportOptions, SpaceReport } from './types.ts';

/**
 * Reads a report from the time-weighted views through the store's report queries (src/store/report-queries.ts) and
 * puts it in the order a facility manager reads it: building > floor > floor space, by name. Values are normalised
 * here because drivers differ (Postgres returns COUNT() as a bigint string).
 */

function num(value: unknown, field: string): number {
  const n = typeof value === 'number' ? value : Number(value);
  if (value === null || value === undefined || !Number.isFinite(n)) throw new TypeError(`report: column ${field} is ${String(value)}, expected a number`);
  return n;
}

const numOrNull = (value: unknown, field: string): number | null => (value === null || value === undefined ? null : num(value, field));
const textOrNull = (value: unknown): string | null => (value === null || value === undefined ? null : String(value));
/** Seconds columns back to the integer milliseconds they were made of. */
const ms = (value: unknown, field: string): number => Math.round(num(value ?? 0, field) * 1000);
const msOrNull = (value: unknown, field: string): number | null => (value === null || value === undefined ? null : ms(value, field));

function sumsOf(r: ReportRow): Sums {
  return {
    periodMs: ms(r.period_seconds, 'period_seconds'),
    knownMs: ms(r.known_seconds, 'known_seconds'),
    occupiedMs: ms(r.occupied_seconds, 'occupied_seconds'),
    headcountMs: ms(r.headcount_seconds, 'headcount_seconds'),
    headcountKnownMs: ms(r.headcount_known_seconds, 'headcount_known_seconds'),
    capacityMs: msOrNull(r.capacity_seconds, 'capacity_seconds'),
    capacityHeadcountMs: msOrNull(r.capacity_headcount_seconds, 'capacity_headcount_seconds'),
    peakHeadcount: numOrNull(r.peak_headcount, 'peak_headcount'),
    peakUtilization: numOrNull(r.peak_utilization, 'peak_utilization'),
  };
}

/** Plain code-unit order (identical on both dialects, unlike collations); unnamed after named, then by id. */
function byName<T>(name: (t: T) => string | null, id: (t: T) => string | null): (a: T, b: T) => number {
  const cmp = (x: string | null, y: string | null) => (x === y ? 0 : x === null ? 1 : y === null ? -1 : x < y ? -1 : 1);
  return (a, b) => cmp(name(a), name(b)) || cmp(id(a), id(b));
}

const key = (...parts: Array<string | null>) => parts.map((p) => p ?? '\u0001').join('\u0000');

function emptyProfile(): ProfileCells {
  return Array.from({ length: 7 }, () => new Array(24).fill(null));
}

function profiles(rows: ReportRow[], keyOf: (r: ReportRow) => string): Map<string, ProfileCells> {
  const out = new Map<string, ProfileCells>();
  for (const r of rows) {
    const k = keyOf(r);
    let cells = out.get(k);
    if (!cells) out.set(k, (cells = emptyProfile()));
    cells[num(r.weekday, 'weekday') - 1]![num(r.local_hour, 'local_hour')] = figures(sumsOf(r));
  }
  return out;
}

export async function loadReport(store: Store, options: ReportOptions & { customerNames?: ReadonlyMap<string, string> }, clock: Clock): Promise<ReportData> {
  const filter: ReportFilter = { fromDate: options.from, toDate: options.to, customerId: options.customerId, scope: options.scope };
  const [portfolioRows, buildingRows, floorRows, spaceRows, buildingHours, floorHours] = await Promise.all([
    reportFigureRows(store, 'portfolio', filter),
    reportFigureRows(store, 'building', filter),
    reportFigureRows(store, 'floor', filter),
    reportFigureRows(store, 'space', filter),
    reportProfileRows(store, 'building', filter),
    reportProfileRows(store, 'floor', filter),
  ]);
  const nameOf = (customerId: string) => options.customerNames?.get(customerId) ?? null;
  const buildingProfiles = profiles(buildingHours, (r) => key(String(r.customer_id), String(r.building_id)));
  const floorProfiles = profiles(floorHours, (r) => key(String(r.customer_id), String(r.building_id), textOrNull(r.floor_id)));

  const spaces = new Map<string, SpaceReport[]>();
  for (const r of spaceRows) {
    const k = key(String(r.customer_id), String(r.building_id), textOrNull(r.floor_id));
    const list = spaces.get(k) ?? [];
    list.push({ floorSpaceId: String(r.floor_space_id), name: textOrNull(r.floor_space_name), spaceType: textOrNull(r.space_type), capacity: numOrNull(r.capacity, 'capacity'), figures: figures(sumsOf(r)) });
    spaces.set(k, list);
  }
  const floors = new Map<string, FloorReport[]>();
  for (const r of floorRows) {
    const k = key(String(r.customer_id), String(r.building_id), textOrNull(r.floor_id));
    const list = floors.get(key(String(r.customer_id), String(r.building_id))) ?? [];
    list.push({
      floorId: textOrNull(r.floor_id),
      name: textOrNull(r.floor_name),
      level: numOrNull(r.floor_level, 'floor_level'),
      figures: figures(sumsOf(r)),
      profile: floorProfiles.get(k) ?? emptyProfile(),
      spaces: (spaces.get(k) ?? []).sort(byName((s) => s.name, (s) => s.floorSpaceId)),
    });
    floors.set(key(String(r.customer_id), String(r.building_id)), list);
  }
  // Floors by level, then name: the order of the building's own directory board.
  const byLevel = (a: FloorReport, b: FloorReport) => (a.level ?? Infinity) - (b.level ?? Infinity) || byName<FloorReport>((f) => f.name, (f) => f.floorId)(a, b);
  const buildings: BuildingReport[] = buildingRows
    .map((r) => {
      const k = key(String(r.customer_id), String(r.building_id));
      return {
        customerId: String(r.customer_id),
        customerName: nameOf(String(r.customer_id)),
        buildingId: String(r.building_id),
        name: textOrNull(r.building_name),
        timeZone: textOrNull(r.time_zone),
        figures: figures(sumsOf(r)),
        profile: buildingProfiles.get(k) ?? emptyProfile(),
        floors: (floors.get(k) ?? []).sort(byLevel),
      };
    })
    .sort((a, b) => (a.customerId < b.customerId ? -1 : a.customerId > b.customerId ? 1 : byName<BuildingReport>((x) => x.name, (x) => x.buildingId)(a, b)));
  const portfolios: PortfolioReport[] = portfolioRows
    .map((r) => {
      const own = buildings.filter((b) => b.customerId === String(r.customer_id));
      return {
        customerId: String(r.customer_id),
        customerName: nameOf(String(r.customer_id)),
        buildings: own.length,
        spaces: new Set(own.flatMap((b) => b.floors.flatMap((f) => f.spaces.map((s) => s.floorSpaceId)))).size,
        figures: figures(sumsOf(r)),
      };
    })
    .sort((a, b) => (a.customerId < b.customerId ? -1 : 1));
  return { range: { from: options.from, to: options.to }, scope: options.scope, customerId: options.customerId ?? null, generatedAt: toIsoUtc(clock.now()), portfolios, buildings };
}
