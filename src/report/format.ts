import type { FloorSpaceSummary, ReportData, ReportFormat, ReportTotal } from './types.ts';
import { UTC, zoned } from './zone.ts';

/**
 * Text renderings of a report: an aligned table for people, RFC 4180 CSV and JSON for machines.
 * Pure functions of ReportData, so the exact output is testable. Times in CSV and JSON stay ISO UTC (unambiguous for
 * programs); the table shows them in the report's time zone and says which.
 */

/** Averages and shares keep 4 decimals: enough for any headcount, without float noise (2.3333333333333335). */
export function round4(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}

type Cell = string | number | null;

interface Column {
  csv: string;
  value(row: FloorSpaceSummary): Cell;
  total(total: ReportTotal): Cell;
}

const COLUMNS: Column[] = [
  { csv: 'row_type', value: () => 'floor_space', total: () => 'total' },
  { csv: 'customer_id', value: (r) => r.customerId, total: () => null },
  { csv: 'customer_name', value: (r) => r.customerName, total: () => null },
  { csv: 'floor_space_id', value: (r) => r.floorSpaceId, total: (t) => `${t.floorSpaces} floor spaces` },
  { csv: 'readings', value: (r) => r.readings, total: (t) => t.readings },
  { csv: 'occupied_readings', value: (r) => r.occupiedReadings, total: (t) => t.occupiedReadings },
  { csv: 'occupied_share', value: (r) => round4(r.occupiedShare), total: (t) => round4(t.occupiedShare) },
  { csv: 'avg_headcount', value: (r) => round4(r.avgHeadcount), total: (t) => round4(t.avgHeadcount) },
  { csv: 'peak_headcount', value: (r) => r.peakHeadcount, total: (t) => t.peakHeadcount },
  { csv: 'first_hour', value: (r) => r.firstHour, total: () => null },
  { csv: 'last_hour', value: (r) => r.lastHour, total: () => null },
  { csv: 'latest_observed_at', value: (r) => r.latestObservedAt, total: () => null },
  { csv: 'latest_status', value: (r) => r.latestStatus, total: () => null },
  { csv: 'latest_headcount', value: (r) => r.latestHeadcount, total: () => null },
];

/** Column names of the CSV output, in order. */
export const CSV_COLUMNS = COLUMNS.map((c) => c.csv);

function csvField(value: Cell): string {
  if (value === null) return '';
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/**
 * RFC 4180: CRLF line ends, a header line, fields quoted when they hold a comma, quote or line break. One row per
 * floor space (`row_type` floor_space), then one row for all of them (`row_type` total).
 */
export function formatCsv(data: ReportData): string {
  const lines = [CSV_COLUMNS.join(',')];
  for (const row of data.floorSpaces) lines.push(COLUMNS.map((c) => csvField(c.value(row))).join(','));
  if (data.floorSpaces.length > 0) lines.push(COLUMNS.map((c) => csvField(c.total(data.total))).join(','));
  return lines.map((line) => `${line}\r\n`).join('');
}

export function formatJson(data: ReportData): string {
  const body = {
    range: data.range,
    customerId: data.customerId,
    generatedAt: data.generatedAt,
    timeZone: data.timeZone,
    total: { ...data.total, occupiedShare: round4(data.total.occupiedShare), avgHeadcount: round4(data.total.avgHeadcount) },
    floorSpaces: data.floorSpaces.map((r) => ({
      ...r,
      occupiedShare: round4(r.occupiedShare),
      avgHeadcount: round4(r.avgHeadcount),
    })),
  };
  return `${JSON.stringify(body, null, 2)}\n`;
}

/** `2026-01-05 09:00` in the report's zone (`Z` appended for UTC): short in a terminal, still unambiguous. */
export function shortTime(iso: string | null, zone: string): string {
  if (!iso) return '-';
  if (zone === UTC) return `${iso.slice(0, 10)} ${iso.slice(11, 16)}Z`;
  const t = zoned(Date.parse(iso), zone);
  return `${t.date} ${t.time}`;
}

/** A customer as people know it: its name and id when a name is configured, else the id. */
export function customerLabel(row: { customerId: string; customerName: string | null }): string {
  return row.customerName ? `${row.customerName} (${row.customerId})` : row.customerId;
}

interface TableColumn {
  title: string;
  align: 'left' | 'right';
  value(row: FloorSpaceSummary, zone: string): string;
  total(total: ReportTotal): string;
}

const percent = (share: number) => `${(share * 100).toFixed(1)}%`;

const TABLE: TableColumn[] = [
  { title: 'CUSTOMER', align: 'left', value: (r) => customerLabel(r), total: () => 'all' },
  { title: 'FLOOR SPACE', align: 'left', value: (r) => r.floorSpaceId, total: (t) => `${t.floorSpaces} floor space(s)` },
  { title: 'READINGS', align: 'right', value: (r) => String(r.readings), total: (t) => String(t.readings) },
  { title: 'OCCUPIED', align: 'right', value: (r) => percent(r.occupiedShare), total: (t) => percent(t.occupiedShare) },
  { title: 'AVG', align: 'right', value: (r) => r.avgHeadcount.toFixed(2), total: (t) => t.avgHeadcount.toFixed(2) },
  { title: 'PEAK', align: 'right', value: (r) => String(r.peakHeadcount), total: (t) => String(t.peakHeadcount) },
  {
    title: 'LATEST',
    align: 'left',
    value: (r, zone) => (r.latestObservedAt ? `${r.latestStatus ?? '-'} ${r.latestHeadcount ?? '-'} @ ${shortTime(r.latestObservedAt, zone)}` : '-'),
    total: () => '',
  },
];

/** Aligned plain text (two spaces between columns), with a header naming the range and zone and a total line. */
export function formatTable(data: ReportData): string {
  const zone = data.timeZone;
  const named = data.floorSpaces.find((r) => r.customerId === data.customerId)?.customerName;
  const heading =
    `Occupancy per floor space, ${shortTime(data.range.from, zone)} to ${shortTime(data.range.to, zone)} (hours in ${zone})` +
    (data.customerId ? `, customer ${named ? `${named} (${data.customerId})` : data.customerId}` : '');
  if (data.floorSpaces.length === 0) return `${heading}\nNo readings in this range.\n`;
  const cells = data.floorSpaces.map((row) => TABLE.map((c) => c.value(row, zone)));
  const total = TABLE.map((c) => c.total(data.total));
  const widths = TABLE.map((c, i) => Math.max(c.title.length, total[i]!.length, ...cells.map((r) => r[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => (TABLE[i]!.align === 'right' ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [heading, line(TABLE.map((c) => c.title)), ...cells.map(line), rule, line(total)].join('\n') + '\n';
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
