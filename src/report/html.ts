import { round4 } from './format.ts';
import { esc, heatmap, lineChart, rampLegend, weekdayIndex, type HeatmapCells, type LineSeries } from './svg.ts';
import { UNKNOWN_BUILDING, type HourlyPoint, type ReportData } from './types.ts';
import { REPORT_CSS } from './html-style.ts';

/**
 * The `report --html` page: one self-contained file (inline CSS and SVG, no script, no network) with headcount over
 * time per floor space, an hour-of-day x weekday heatmap overall and per floor space, and the summary table.
 */

/** Categorical palette with good contrast on white and between neighbours. */
const PALETTE = ['#4269d0', '#efb118', '#ff725c', '#6cc5b0', '#3ca951', '#ff8ab7', '#a463f2', '#97bbf5', '#9c6b4e', '#9498a0'];

/** More lines than this turn the chart into spaghetti: the busiest floor spaces are drawn, the rest listed. */
export const MAX_LINES = PALETTE.length;
export const MAX_SMALL_HEATMAPS = 24;

function shortId(id: string): string {
  return /^[0-9a-f]{8}-[0-9a-f-]{27}$/i.test(id) ? id.slice(0, 8) : id;
}

function key(p: { customerId: string; floorSpaceId: string }): string {
  return `${p.customerId}\u0000${p.floorSpaceId}`;
}

function human(iso: string): string {
  const d = new Date(iso);
  return `${d.toUTCString().slice(0, 16).replace(',', '')} ${iso.slice(11, 16)} UTC`;
}

/** Average headcount per weekday and hour, weighted by readings (so sparse hours do not dominate). */
export function heatmapCells(points: HourlyPoint[]): HeatmapCells {
  const sum = Array.from({ length: 7 }, () => new Array<number>(24).fill(0));
  const count = Array.from({ length: 7 }, () => new Array<number>(24).fill(0));
  for (const p of points) {
    const t = Date.parse(p.hour);
    const d = weekdayIndex(t);
    const h = new Date(t).getUTCHours();
    sum[d]![h]! += p.totalHeadcount;
    count[d]![h]! += p.readings;
  }
  return sum.map((row, d) => row.map((s, h) => (count[d]![h]! ? s / count[d]![h]! : null)));
}

function cellsMax(cells: HeatmapCells[]): number {
  return Math.max(0, ...cells.flatMap((c) => c.flat().filter((v): v is number => v !== null)));
}

function kpis(data: ReportData): string {
  const rows = data.floorSpaces;
  const readings = rows.reduce((n, r) => n + r.readings, 0);
  const occupied = rows.reduce((n, r) => n + r.occupiedReadings, 0);
  const people = rows.reduce((n, r) => n + r.avgHeadcount * r.readings, 0);
  const peak = Math.max(0, ...rows.map((r) => r.peakHeadcount));
  const card = (value: string, label: string) => `<div class="kpi"><div class="value">${value}</div><div class="label">${label}</div></div>`;
  return `<div class="kpis">${[
    card(String(rows.length), 'floor spaces'),
    card(readings.toLocaleString('en-US'), 'readings'),
    card(readings ? (people / readings).toFixed(1) : '–', 'average headcount'),
    card(String(peak), 'peak headcount'),
    card(readings ? `${((occupied / readings) * 100).toFixed(0)}%` : '–', 'of readings occupied'),
  ].join('')}</div>`;
}

function table(data: ReportData, colors: Map<string, string>): string {
  const head = ['Customer', 'Building', 'Floor space', 'Readings', 'Occupied', 'Avg', 'Peak', 'Latest reading'];
  const body = data.floorSpaces
    .map((r) => {
      const swatch = colors.get(key(r));
      const latest = r.latestObservedAt ? `${esc(r.latestStatus ?? '')} · ${r.latestHeadcount ?? '–'} · ${esc(human(r.latestObservedAt))}` : '–';
      return (
        `<tr><td>${esc(r.customerId)}</td><td>${esc(r.building)}</td>` +
        `<td class="id">${swatch ? `<span class="swatch" style="background:${swatch}"></span>` : ''}${esc(r.floorSpaceId)}</td>` +
        `<td class="n">${r.readings}</td><td class="n">${(round4(r.occupiedShare) * 100).toFixed(1)}%</td>` +
        `<td class="n">${r.avgHeadcount.toFixed(2)}</td><td class="n">${r.peakHeadcount}</td><td>${latest}</td></tr>`
      );
    })
    .join('');
  return `<table><thead><tr>${head.map((h) => `<th>${h}</th>`).join('')}</tr></thead><tbody>${body}</tbody></table>`;
}

export function renderHtml(data: ReportData): string {
  const from = Date.parse(data.range.from);
  const to = Date.parse(data.range.to);
  const customers = [...new Set(data.floorSpaces.map((r) => r.customerId))];
  const several = customers.length > 1;
  const label = (p: { customerId: string; floorSpaceId: string }) =>
    several ? `${shortId(p.customerId)} / ${shortId(p.floorSpaceId)}` : shortId(p.floorSpaceId);

  const byKey = new Map<string, HourlyPoint[]>();
  for (const p of data.hourly) {
    const list = byKey.get(key(p));
    if (list) list.push(p);
    else byKey.set(key(p), [p]);
  }
  const drawn = [...data.floorSpaces].sort((a, b) => b.readings - a.readings).slice(0, MAX_LINES);
  const colors = new Map(drawn.map((r, i) => [key(r), PALETTE[i % PALETTE.length]!]));
  const series: LineSeries[] = drawn.map((r) => ({
    label: label(r),
    title: `${r.floorSpaceId} (customer ${r.customerId})`,
    color: colors.get(key(r))!,
    points: (byKey.get(key(r)) ?? []).map((p) => ({ t: Date.parse(p.hour), v: p.avgHeadcount })),
  }));
  const hidden = data.floorSpaces.length - drawn.length;

  const overall = heatmapCells(data.hourly);
  const small = data.floorSpaces.slice(0, MAX_SMALL_HEATMAPS).map((r) => ({ r, cells: heatmapCells(byKey.get(key(r)) ?? []) }));
  const max = cellsMax([overall, ...small.map((s) => s.cells)]);

  const scope = data.customerId ? `customer ${esc(data.customerId)}` : `${customers.length} customer${customers.length === 1 ? '' : 's'}`;
  const range = `${esc(human(data.range.from))} – ${esc(human(data.range.to))}`;
  const empty = data.floorSpaces.length === 0;

  const sections = empty
    ? `<section class="card empty-state"><h2>No readings in this range</h2><p>Nothing was stored between ${range}. Run <code>occupancy-sync sync</code>, or choose another range with <code>--from</code> and <code>--to</code>.</p></section>`
    : `<section class="card"><h2>Headcount over time</h2>
<p class="sub">Average headcount per hour, one line per floor space${hidden > 0 ? ` (the ${MAX_LINES} with most readings; ${hidden} more in the table below)` : ''}.</p>
${lineChart(series, { from, to, yLabel: 'people (hourly average)' })}
<ul class="legend">${series.map((s) => `<li title="${esc(s.title)}"><span class="swatch" style="background:${s.color}"></span>${esc(s.label)}</li>`).join('')}</ul>
</section>
<section class="card"><h2>When is it busy?</h2>
<p class="sub">Average headcount by weekday and hour of day (UTC), all floor spaces together. Hover a cell for its value.</p>
<div class="heat-main">${heatmap(overall, { max, title: 'Average headcount by weekday and hour, all floor spaces' })}</div>
${rampLegend(max, 'ramp-main', 'average headcount')}
</section>
<section class="card"><h2>Per floor space</h2>
<p class="sub">Same scale as above, so the floor spaces compare${data.floorSpaces.length > MAX_SMALL_HEATMAPS ? ` (first ${MAX_SMALL_HEATMAPS} of ${data.floorSpaces.length})` : ''}.</p>
<div class="multiples">${small
        .map(({ r, cells }) => `<figure><figcaption title="${esc(r.floorSpaceId)}">${esc(label(r))} <span class="muted">peak ${r.peakHeadcount}</span></figcaption>${heatmap(cells, { max, cell: 12, hourLabelEvery: 6, title: `Average headcount, floor space ${r.floorSpaceId}` })}</figure>`)
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
<footer>Generated ${esc(human(data.generatedAt))} by occupancy-sync from the <code>occupancy_hourly</code> and <code>occupancy_latest</code> views. All times UTC.
Building is “${UNKNOWN_BUILDING}”: the platform does not say which building a floor space belongs to, so figures are per floor space.</footer>
</main></body></html>
`;
}
