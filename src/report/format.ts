import { COVERAGE_THRESHOLD, lowCoverage, type Figures } from './figures.ts';
import type { BuildingReport, FloorReport, ReportData, ReportFormat, SpaceReport } from './types.ts';

/**
 * Text renderings of a report: an aligned table for people, RFC 4180 CSV and JSON for machines. Pure functions of
 * ReportData, so the exact output is testable. Building > floor > floor space, by name, then each customer's
 * portfolio; coverage under 80 % flagged in every format.
 */

/**
 * `value` rounded half away from zero to `digits` decimals after moving the point `scale` places (2: a percent), as
 * text (docs/reporting.md, "The rounding rule"). The point is moved in the value's shortest decimal text, not by
 * multiplying: 0.37625 times 10,000 is 3762.4999999999995 in binary and rounded down, where its text moved is 3762.5.
 */
export function fixed(value: number, digits: number, scale = 0): string {
  const [mantissa, exponent = '0'] = String(value).split('e') as [string, string?];
  const shifted = Number(`${mantissa}e${Number(exponent) + digits + scale}`);
  const whole = Math.round(Math.abs(shifted)) * Math.sign(shifted);
  return Number(`${whole}e-${digits}`).toFixed(digits);
}

/** Ratios keep 4 decimals: enough for any share or headcount, without float noise (0.30000000000000004). */
export function round4(value: number | null): number | null {
  return value === null ? null : Number(fixed(value, 4));
}

/** A customer as people know it: its name and id when a name is configured, else the id. */
export function customerLabel(row: { customerId: string; customerName: string | null }): string {
  return row.customerName ? `${row.customerName} (${row.customerId})` : row.customerId;
}

/**
 * A name as a label shows it: on one line (a line break or tab in a listed name would break the table's rows), and
 * none when it is empty or blank, so the label falls back to the id as for a missing name.
 */
export function shownName(name: string | null): string | null {
  if (name === null) return null;
  const line = name.replace(/[\r\n\t\f\v\u2028\u2029]+/g, ' ').trim();
  return line === '' ? null : line;
}

export const buildingLabel = (b: Pick<BuildingReport, 'buildingId' | 'name'>): string => shownName(b.name) ?? (b.buildingId === '' ? 'No building' : b.buildingId);
export const floorLabel = (f: Pick<FloorReport, 'floorId' | 'name'>): string => shownName(f.name) ?? f.floorId ?? 'No floor';
export const spaceLabel = (s: Pick<SpaceReport, 'floorSpaceId' | 'name'>): string => shownName(s.name) ?? s.floorSpaceId;

export function scopeLabel(data: Pick<ReportData, 'scope'>): string {
  return data.scope === 'working' ? 'in working hours' : 'over all hours';
}

/** One line of any format: a portfolio, a building, a floor or a floor space, with what names it. */
export interface ReportLine {
  rowType: 'building' | 'floor' | 'floor_space' | 'portfolio';
  depth: number;
  label: string;
  customerId: string;
  customerName: string | null;
  building?: BuildingReport;
  floor?: FloorReport;
  space?: SpaceReport;
  figures: Figures;
}

/** Every line in reading order: per customer, each building, its floors, their floor spaces; then its portfolio. */
export function reportLines(data: ReportData): ReportLine[] {
  const out: ReportLine[] = [];
  for (const p of data.portfolios) {
    out.push(...buildingLines(data.buildings.filter((b) => b.customerId === p.customerId)));
    out.push({ rowType: 'portfolio', depth: 0, label: `Portfolio ${customerLabel(p)}`, customerId: p.customerId, customerName: p.customerName, figures: p.figures });
  }
  return out;
}

function buildingLines(buildings: readonly BuildingReport[]): ReportLine[] {
  const out: ReportLine[] = [];
  for (const b of buildings) {
    const who = { customerId: b.customerId, customerName: b.customerName };
    out.push({ rowType: 'building', depth: 0, label: buildingLabel(b), ...who, building: b, figures: b.figures });
    for (const f of b.floors) {
      out.push({ rowType: 'floor', depth: 1, label: floorLabel(f), ...who, building: b, floor: f, figures: f.figures });
      for (const s of f.spaces) out.push({ rowType: 'floor_space', depth: 2, label: spaceLabel(s), ...who, building: b, floor: f, space: s, figures: s.figures });
    }
  }
  return out;
}

type Cell = string | number | boolean | null;
const seconds = (ms: number | null) => (ms === null ? null : ms / 1000);

const CSV: Array<[string, (l: ReportLine, d: ReportData) => Cell]> = [
  ['row_type', (l) => l.rowType],
  ['customer_id', (l) => l.customerId],
  ['customer_name', (l) => l.customerName],
  ['building_id', (l) => l.building?.buildingId ?? null],
  ['building_name', (l) => l.building?.name ?? null],
  ['time_zone', (l) => l.building?.timeZone ?? null],
  ['floor_id', (l) => l.floor?.floorId ?? null],
  ['floor_name', (l) => l.floor?.name ?? null],
  ['floor_level', (l) => l.floor?.level ?? null],
  ['floor_space_id', (l) => l.space?.floorSpaceId ?? null],
  ['floor_space_name', (l) => l.space?.name ?? null],
  ['space_type', (l) => l.space?.spaceType ?? null],
  ['capacity', (l) => l.space?.capacity ?? null],
  ['scope', (_, d) => d.scope],
  ['from_date', (_, d) => d.range.from],
  ['to_date', (_, d) => d.range.to],
  ['period_seconds', (l) => seconds(l.figures.periodMs)],
  ['known_seconds', (l) => seconds(l.figures.knownMs)],
  ['occupied_seconds', (l) => seconds(l.figures.occupiedMs)],
  ['coverage', (l) => round4(l.figures.coverage)],
  ['low_coverage', (l) => lowCoverage(l.figures)],
  ['time_used', (l) => round4(l.figures.timeUsed)],
  ['avg_headcount', (l) => round4(l.figures.avgHeadcount)],
  ['peak_headcount', (l) => l.figures.peakHeadcount],
  ['utilization', (l) => round4(l.figures.utilization)],
  ['peak_utilization', (l) => round4(l.figures.peakUtilization)],
];

/** Column names of the CSV output, in order. */
export const CSV_COLUMNS = CSV.map(([name]) => name);

function csvField(value: Cell): string {
  if (value === null) return '';
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** RFC 4180: CRLF line ends, a header line, fields quoted when they hold a comma, quote or line break. */
export function formatCsv(data: ReportData): string {
  const lines = [CSV_COLUMNS.join(','), ...reportLines(data).map((l) => CSV.map(([, value]) => csvField(value(l, data))).join(','))];
  return lines.map((line) => `${line}\r\n`).join('');
}

function jsonFigures(f: Figures) {
  return {
    periodSeconds: f.periodMs / 1000,
    knownSeconds: f.knownMs / 1000,
    occupiedSeconds: f.occupiedMs / 1000,
    coverage: round4(f.coverage),
    lowCoverage: lowCoverage(f),
    timeUsed: round4(f.timeUsed),
    avgHeadcount: round4(f.avgHeadcount),
    peakHeadcount: f.peakHeadcount,
    utilization: round4(f.utilization),
    peakUtilization: round4(f.peakUtilization),
  };
}

export function formatJson(data: ReportData): string {
  const body = {
    range: data.range,
    scope: data.scope,
    coverageThreshold: COVERAGE_THRESHOLD,
    customerId: data.customerId,
    generatedAt: data.generatedAt,
    portfolios: data.portfolios.map((p) => ({ ...p, figures: jsonFigures(p.figures) })),
    buildings: data.buildings.map(({ profile: _p, floors, ...b }) => ({
      ...b,
      figures: jsonFigures(b.figures),
      floors: floors.map(({ profile: _q, spaces, ...f }) => ({ ...f, figures: jsonFigures(f.figures), spaces: spaces.map((s) => ({ ...s, figures: jsonFigures(s.figures) })) })),
    })),
  };
  return `${JSON.stringify(body, null, 2)}\n`;
}

export const percent = (share: number | null): string => (share === null ? '-' : `${fixed(share, 1, 2)}%`);
const decimal = (value: number | null): string => (value === null ? '-' : fixed(value, 1));

interface TableColumn {
  title: string;
  align: 'left' | 'right';
  value(line: ReportLine): string;
}

const TABLE: TableColumn[] = [
  { title: '', align: 'left', value: (l) => `${'  '.repeat(l.depth)}${l.label}${l.rowType === 'building' && l.building?.timeZone ? ` (${l.building.timeZone})` : ''}` },
  { title: 'TYPE', align: 'left', value: (l) => l.space?.spaceType ?? '' },
  { title: 'CAP', align: 'right', value: (l) => (l.space ? String(l.space.capacity || '-') : '') },
  // The flag stands after the figure, so the numbers still line up.
  { title: 'COVERAGE', align: 'right', value: (l) => `${percent(l.figures.coverage)}${lowCoverage(l.figures) ? ' !' : '  '}` },
  { title: 'USED', align: 'right', value: (l) => percent(l.figures.timeUsed) },
  { title: 'AVG', align: 'right', value: (l) => decimal(l.figures.avgHeadcount) },
  { title: 'PEAK', align: 'right', value: (l) => (l.figures.peakHeadcount === null ? '-' : String(l.figures.peakHeadcount)) },
  { title: 'UTIL', align: 'right', value: (l) => percent(l.figures.utilization) },
  { title: 'PEAK UTIL', align: 'right', value: (l) => percent(l.figures.peakUtilization) },
];

/** Aligned plain text (two spaces between columns), with a heading naming the dates and the hours, and a legend. */
export function formatTable(data: ReportData): string {
  const heading =
    `Utilization ${scopeLabel(data)}, ${data.range.from} to ${data.range.to} (exclusive), each building in its own time zone` +
    (data.customerId ? `, customer ${data.portfolios[0] ? customerLabel(data.portfolios[0]) : data.customerId}` : '');
  const lines = reportLines(data);
  if (data.buildings.length === 0) {
    return `${heading}\nNo time-weighted figures for these dates: no floor space of ${data.customerId ? 'this customer' : 'any customer'} was measured on them. Fix: run occupancy-sync sync, or choose other dates with --from and --to.\n`;
  }
  const cells = lines.map((l) => TABLE.map((c) => c.value(l)));
  const widths = TABLE.map((c, i) => Math.max(c.title.length, ...cells.map((r) => r[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => (TABLE[i]!.align === 'right' ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  const body: string[] = [];
  lines.forEach((l, i) => {
    if (i > 0 && l.depth === 0) body.push('');
    body.push(line(cells[i]!));
  });
  const legend = [
    `COVERAGE: time measured / ${data.scope === 'working' ? 'working time' : 'time'}; ! below ${COVERAGE_THRESHOLD * 100}%: the sensors were silent too long to trust the figures.`,
    'USED: time occupied / time measured. AVG, PEAK: people. UTIL: average people / capacity, PEAK UTIL: the fullest floor space, where capacity is known.',
  ];
  return [heading, line(TABLE.map((c) => c.title)), ...body, '', ...legend].join('\n') + '\n';
}

export function formatReport(data: ReportData, format: ReportFormat): string {
  switch (format) {
    case 'csv':
      return formatCsv(data);
    case 'json':
      return formatJson(data);
    case 'table':
      return formatTable(data);
  }
}
