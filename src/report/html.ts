import { customerLabel, round4 } from './format.ts';
import { MAX_CHOSEN, selectFloorSpaces, type SelectionRule } from './select.ts';
import { esc, heatmap, lineChart, rampLegend, type HeatmapCells, type LineSeries } from './svg.ts';
import type { HourlyPoint, ReportData } from './types.ts';
import { REPORT_CSS } from './html-style.ts';
import { offsetAt, zoned } from './zone.ts';
import { formatCount } from '../numbers.ts';

/**
 * The `report --html` page: one self-contained file (inline CSS and SVG, no script, no network) with headcount over
 * time per floor space, an hour-of-day x weekday heatmap overall and per floor space, and the summary table.
 */

/** Categorical palette with good contrast on white and between neighbours. */
const PALETTE = ['#4269d0', '#efb118', '#ff725c', '#6cc5b0', '#3ca951', '#ff8ab7', '#a463f2', '#97bbf5', '#9c6b4e', '#9498a0'];

/** The colour of the line of all floor spaces together. */
const TOTAL_COLOR = '#1d1d1f';

export interface HtmlOptions {
  /** Which floor spaces the charts draw. Default busiest. */
  show?: SelectionRule;
  /** How many. Default (and at most) MAX_CHOSEN. */
  top?: number;
}

function shortId(id: string): string {
  return /^[0-9a-f]{8}-[0-9a-f-]{27}$/i.test(id) ? id.slice(0, 8) : id;
}

function key(p: { customerId: string; floorSpaceId: string }): string {
  return `${p.customerId}\u0000${p.floorSpaceId}`;
}

function human(iso: string, zone: string): string {
  const t = zoned(Date.parse(iso), zone);
  return `${t.day} ${t.time} ${zone}`;
}

/** Average headcount per weekday and hour of `zone`, weighted by readings (so sparse hours do not dominate). */
export function heatmapCells(points: HourlyPoint[], zone = 'UTC'): HeatmapCells {
  const sum = Array.from({ length: 7 }, () => new Array<number>(24).fill(0));
  const count = Array.from({ length: 7 }, () => new Array<number>(24).fill(0));
  for (const p of points) {
    const { weekday: d, hour: h } = zoned(Date.parse(p.hour), zone);
    sum[d]![h]! += p.totalHeadcount;
    count[d]![h]! += p.readings;
  }
  return sum.map((row, d) => row.map((s, h) => (count[d]![h]! ? s / count[d]![h]! : null)));
}

function cellsMax(cells: HeatmapCells[]): number {
  return Math.max(0, ...cells.flatMap((c) => c.flat().filter((v): v is number => v !== null)));
}

function kpis(data: ReportData): string {
  const t = data.total;
  const card = (value: string, label: string) => `<div class="kpi"><div class="value">${value}</div><div class="label">${label}</div></div>`;
  return `<div class="kpis">${[
    card(String(t.floorSpaces), 'floor spaces'),
    card(formatCount(t.readings), 'readings'),
    card(t.readings ? t.avgHeadcount.toFixed(1) : '–', 'average headcount'),
    card(String(t.peakHeadcount), 'peak headcount'),
    card(t.readings ? `${(t.occupiedShare * 100).toFixed(0)}%` : '–', 'of readings occupied'),
  ].join('')}</div>`;
}

function table(data: ReportData, colors: Map<string, string>): string {
  const head = ['Customer', 'Floor space', 'Readings', 'Occupied', 'Avg', 'Peak', 'Latest reading'];
  const body = data.floorSpaces
    .map((r) => {
      const swatch = colors.get(key(r));
      const latest = r.latestObservedAt ? `${esc(r.latestStatus ?? '')} · ${r.latestHeadcount ?? '–'} · ${esc(human(r.latestObservedAt, data.timeZone))}` : '–';
      return (
        `<tr><td>${esc(customerLabel(r))}</td>` +
        `<td class="id">${swatch ? `<span class="swatch" style="background:${swatch}"></span>` : ''}${esc(r.floorSpaceId)}</td>` +
        `<td class="n">${r.readings}</td><td class="n">${(round4(r.occupiedShare) * 100).toFixed(1)}%</td>` +
        `<td class="n">${r.avgHeadcount.toFixed(2)}</td><td class="n">${r.peakHeadcount}</td><td>${latest}</td></tr>`
      );
    })
    .join('');
  const t = data.total;
  const foot =
    `<tr class="total"><td>all</td><td>${t.floorSpaces} floor space${t.floorSpaces === 1 ? '' : 's'}</td><td class="n">${t.readings}</td>` +
    `<td class="n">${(round4(t.occupiedShare) * 100).toFixed(1)}%</td><td class="n">${t.avgHeadcount.toFixed(2)}</td><td class="n">${t.peakHeadcount}</td><td></td></tr>`;
  return `<table><thead><tr>${head.map((h) => `<th>${h}</th>`).join('')}</tr></thead><tbody>${body}</tbody><tfoot>${foot}</tfoot></table>`;
}

/** Average headcount per hour over every floor space: the total line. */
function totalSeries(points: HourlyPoint[]): Array<{ t: number; v: number }> {
  const byHour = new Map<number, [number, number]>();
  for (const p of points) {
    const t = Date.parse(p.hour);
    const h = byHour.get(t) ?? [0, 0];
    h[0] += p.totalHeadcount;
    h[1] += p.readings;
    byHour.set(t, h);
  }
  return [...byHour].sort((a, b) => a[0] - b[0]).map(([t, [total, readings]]) => ({ t, v: readings ? total / readings : 0 }));
}

export function renderHtml(data: ReportData, options: HtmlOptions = {}): string {
  const from = Date.parse(data.range.from);
  const to = Date.parse(data.range.to);
  const zone = data.timeZone;
  const customers = [...new Set(data.floorSpaces.map((r) => r.customerId))];
  const names = new Map(data.floorSpaces.map((r) => [r.customerId, r.customerName]));
  const several = customers.length > 1;
  const customerShort = (id: string) => names.get(id) ?? shortId(id);
  const label = (p: { customerId: string; floorSpaceId: string }) =>
    several ? `${customerShort(p.customerId)} / ${shortId(p.floorSpaceId)}` : shortId(p.floorSpaceId);

  const byKey = new Map<string, HourlyPoint[]>();
  for (const p of data.hourly) {
    const list = byKey.get(key(p));
    if (list) list.push(p);
    else byKey.set(key(p), [p]);
  }
  const selection = selectFloorSpaces(data.floorSpaces, data.hourly, data.range, options.show ?? 'busiest', Math.min(MAX_CHOSEN, options.top ?? MAX_CHOSEN));
  const drawn = selection.chosen;
  const colors = new Map(drawn.map((r, i) => [key(r), PALETTE[i % PALETTE.length]!]));
  const series: LineSeries[] = drawn.map((r) => ({
    label: label(r),
    title: `${r.floorSpaceId} (customer ${customerLabel(r)})`,
    color: colors.get(key(r))!,
    points: (byKey.get(key(r)) ?? []).map((p) => ({ t: Date.parse(p.hour), v: p.avgHeadcount })),
  }));
  const total: LineSeries = { label: `all ${data.floorSpaces.length} floor spaces`, title: 'Every floor space together', color: TOTAL_COLOR, emphasis: true, points: totalSeries(data.hourly) };
  const hidden = data.floorSpaces.length - drawn.length;

  const overall = heatmapCells(data.hourly, zone);
  const small = drawn.map((r) => ({ r, cells: heatmapCells(byKey.get(key(r)) ?? [], zone) }));
  const max = cellsMax([overall, ...small.map((s) => s.cells)]);
  const offsetMs = offsetAt(from, zone);

  const scope = data.customerId
    ? `customer ${esc(names.get(data.customerId) ? `${names.get(data.customerId)} (${data.customerId})` : data.customerId)}`
    : `${customers.length} customer${customers.length === 1 ? '' : 's'}${customers.some((c) => names.get(c)) ? `: ${esc(customers.map((c) => names.get(c) ?? c).join(', '))}` : ''}`;
  const range = `${esc(human(data.range.from, zone))} – ${esc(human(data.range.to, zone))}`;
  const empty = data.floorSpaces.length === 0;

  const sections = empty
    ? `<section class="card empty-state"><h2>No readings in this range</h2><p>Nothing was stored between ${range}. Run <code>occupancy-sync sync</code>, or choose another range with <code>--from</code> and <code>--to</code>.</p></section>`
    : `<section class="card"><h2>Headcount over time</h2>
<p class="sub selection">Average headcount per hour: ${esc(selection.description)}, one line each${hidden > 0 ? ` (${hidden} more in the table below)` : ''}, and all floor spaces together (the dark line). Hours in ${esc(zone)}.</p>
${lineChart([...series, total], { from, to, yLabel: 'people (hourly average)', offsetMs })}
<ul class="legend">${[...series, total].map((s) => `<li title="${esc(s.title)}"><span class="swatch" style="background:${s.color}"></span>${esc(s.label)}</li>`).join('')}</ul>
</section>
<section class="card"><h2>When is it busy?</h2>
<p class="sub">Average headcount by weekday and hour of day (${esc(zone)}), all floor spaces together. Hover a cell for its value.</p>
<div class="heat-main">${heatmap(overall, { max, zone, title: 'Average headcount by weekday and hour, all floor spaces' })}</div>
${rampLegend(max, 'ramp-main', 'average headcount')}
</section>
<section class="card"><h2>Per floor space</h2>
<p class="sub">${esc(selection.description.replace(/^./, (c) => c.toUpperCase()))}, on the same scale as above, so they compare.</p>
<div class="multiples">${small
        .map(({ r, cells }) => `<figure><figcaption title="${esc(r.floorSpaceId)}">${esc(label(r))} <span class="muted">peak ${r.peakHeadcount}</span></figcaption>${heatmap(cells, { max, zone, cell: 12, hourLabelEvery: 6, title: `Average headcount, floor space ${r.floorSpaceId}` })}</figure>`)
        .join('')}</div>
</section>
<section class="card"><h2>Floor spaces</h2>${table(data, colors)}</section>`;

  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Occupancy report, ${esc(data.range.from.slice(0, 10))} to ${esc(data.range.to.slice(0, 10))}</title>
<style>${REPORT_CSS}</style></head>
<body><main>
<header><h1>Occupancy report</h1>
<p class="range">${range} · ${scope}</p></header>
${kpis(data)}
${sections}
<footer>Generated ${esc(human(data.generatedAt, zone))} by occupancy-sync from the <code>occupancy_hourly</code> and <code>occupancy_latest</code> views. All times in ${esc(zone)}.
Figures are per floor space: the platform does not say which building a floor space belongs to.</footer>
</main></body></html>
`;
}
