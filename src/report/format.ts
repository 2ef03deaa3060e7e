import { UNKNOWN_BUILDING, type FloorSpaceSummary, type ReportData, type ReportFormat } from './types.ts';

/**
 * Text renderings of a report: an aligned table for people, RFC 4180 CSV and JSON for machines.
 * Pure functions of ReportData, so the exact output is testable.
 */

/** Averages and shares keep 4 decimals: enough for any headcount, without float noise (2.3333333333333335). */
export function round4(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}

type Cell = string | number | null;

interface Column {
  csv: string;
  value(row: FloorSpaceSummary): Cell;
}

const COLUMNS: Column[] = [
  { csv: 'customer_id', value: (r) => r.customerId },
  { csv: 'building', value: (r) => r.building },
  { csv: 'floor_space_id', value: (r) => r.floorSpaceId },
  { csv: 'readings', value: (r) => r.readings },
  { csv: 'occupied_readings', value: (r) => r.occupiedReadings },
  { csv: 'occupied_share', value: (r) => round4(r.occupiedShare) },
  { csv: 'avg_headcount', value: (r) => round4(r.avgHeadcount) },
  { csv: 'peak_headcount', value: (r) => r.peakHeadcount },
  { csv: 'first_hour', value: (r) => r.firstHour },
  { csv: 'last_hour', value: (r) => r.lastHour },
  { csv: 'latest_observed_at', value: (r) => r.latestObservedAt },
  { csv: 'latest_status', value: (r) => r.latestStatus },
  { csv: 'latest_headcount', value: (r) => r.latestHeadcount },
];

/** Column names of the CSV output, in order. */
export const CSV_COLUMNS = COLUMNS.map((c) => c.csv);

function csvField(value: Cell): string {
  if (value === null) return '';
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** RFC 4180: CRLF line ends, a header line, fields quoted when they hold a comma, quote or line break. */
export function formatCsv(data: ReportData): string {
  const lines = [CSV_COLUMNS.join(',')];
  for (const row of data.floorSpaces) lines.push(COLUMNS.map((c) => csvField(c.value(row))).join(','));
  return lines.map((line) => `${line}\r\n`).join('');
}

export function formatJson(data: ReportData): string {
  const body = {
    range: data.range,
    customerId: data.customerId,
    generatedAt: data.generatedAt,
    floorSpaces: data.floorSpaces.map((r) => ({
      ...r,
      occupiedShare: round4(r.occupiedShare),
      avgHeadcount: round4(r.avgHeadcount),
    })),
  };
  return `${JSON.stringify(body, null, 2)}\n`;
}

/** `2026-01-05T09:00:00.000Z` -> `2026-01-05 09:00Z`: shorter in a terminal, still unambiguous. */
function shortTime(iso: string | null): string {
  return iso ? `${iso.slice(0, 10)} ${iso.slice(11, 16)}Z` : '-';
}

interface TableColumn {
  title: string;
  align: 'left' | 'right';
  value(row: FloorSpaceSummary): string;
}

const TABLE: TableColumn[] = [
  { title: 'CUSTOMER', align: 'left', value: (r) => r.customerId },
  { title: 'BUILDING', align: 'left', value: (r) => r.building },
  { title: 'FLOOR SPACE', align: 'left', value: (r) => r.floorSpaceId },
  { title: 'READINGS', align: 'right', value: (r) => String(r.readings) },
  { title: 'OCCUPIED', align: 'right', value: (r) => `${(r.occupiedShare * 100).toFixed(1)}%` },
  { title: 'AVG', align: 'right', value: (r) => r.avgHeadcount.toFixed(2) },
  { title: 'PEAK', align: 'right', value: (r) => String(r.peakHeadcount) },
  { title: 'LATEST', align: 'left', value: (r) => (r.latestObservedAt ? `${r.latestStatus ?? '-'} ${r.latestHeadcount ?? '-'} @ ${shortTime(r.latestObservedAt)}` : '-') },
];

/** Aligned plain text (two spaces between columns), with a header line naming the range. */
export function formatTable(data: ReportData): string {
  const heading =
    `Occupancy per floor space, ${shortTime(data.range.from)} to ${shortTime(data.range.to)} (UTC hours)` +
    (data.customerId ? `, customer ${data.customerId}` : '');
  if (data.floorSpaces.length === 0) return `${heading}\nNo readings in this range.\n`;
  const cells = data.floorSpaces.map((row) => TABLE.map((c) => c.value(row)));
  const widths = TABLE.map((c, i) => Math.max(c.title.length, ...cells.map((r) => r[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => (TABLE[i]!.align === 'right' ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  const readings = data.floorSpaces.reduce((n, r) => n + r.readings, 0);
  const unknown = data.floorSpaces.every((r) => r.building === UNKNOWN_BUILDING)
    ? ` Building is "${UNKNOWN_BUILDING}": the platform does not say which building a floor space belongs to.`
    : '';
  const footer = `${data.floorSpaces.length} floor space(s), ${readings} reading(s).${unknown}`;
  return [heading, line(TABLE.map((c) => c.title)), ...cells.map(line), footer].join('\n') + '\n';
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
