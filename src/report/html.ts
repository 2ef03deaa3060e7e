import { COVERAGE_THRESHOLD, lowCoverage, type Figures } from './figures.ts';
import { buildingLabel, customerLabel, fixed, floorLabel, percent as pct, scopeLabel, shownName, spaceLabel } from './format.ts';
import { REPORT_CSS } from './html-style.ts';
import { esc, heatmap, rampLegend, type HeatmapCells } from './svg.ts';
import type { BuildingReport, FloorReport, ProfileCells, ReportData } from './types.ts';

/**
 * The `report --html` page: one self-contained file (inline CSS and SVG, no script, nothing fetched) that a reader
 * walks from the portfolio to a building to a floor: links to anchors, each building and floor a <details> section
 * (a link to a closed one opens it). Each building and floor has a weekday x hour heat map of % time used in the
 * building's own local time; every building, floor and floor space is named.
 */

const num = (v: number | null, digits = 1) => (v === null ? '–' : fixed(v, digits));
const percent = (v: number | null) => (v === null ? '–' : pct(v));

function coverageCell(f: Figures): string {
  return lowCoverage(f)
    ? `<td class="n low" title="Below ${COVERAGE_THRESHOLD * 100}%: the sensors measured too little of the time to trust these figures">${percent(f.coverage)} !</td>`
    : `<td class="n">${percent(f.coverage)}</td>`;
}

function figureCells(f: Figures): string {
  return (
    coverageCell(f) +
    `<td class="n">${percent(f.timeUsed)}</td><td class="n">${num(f.avgHeadcount)}</td><td class="n">${f.peakHeadcount ?? '–'}</td>` +
    `<td class="n">${percent(f.utilization)}</td><td class="n">${percent(f.peakUtilization)}</td>`
  );
}

const FIGURE_HEADS = ['Coverage', '% time used', 'Avg people', 'Peak', 'Utilization', 'Peak util.'];

function table(heads: string[], rows: string[]): string {
  return `<table><thead><tr>${heads.map((h, i) => `<th${i >= heads.length - FIGURE_HEADS.length ? ' class="n"' : ''}>${h}</th>`).join('')}</tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

/** % time used per weekday and hour; a cell nothing was measured in stays empty. */
function cellsOf(profile: ProfileCells): HeatmapCells {
  return profile.map((row) => row.map((f) => (f === null || f.timeUsed === null ? null : f.timeUsed)));
}

function profileMap(profile: ProfileCells, zone: string, title: string, small: boolean): string {
  return heatmap(cellsOf(profile), {
    max: 1,
    zone,
    title,
    ...(small ? { cell: 16, hourLabelEvery: 3 } : {}),
    emptyText: 'nothing measured',
    describe: (d, h) => {
      const f = profile[d]![h]!;
      return `${percent(f.timeUsed)} of the time used, ${f.avgHeadcount === null ? 'no headcount' : `${num(f.avgHeadcount)} people on average`}, ${percent(f.coverage)} measured`;
    },
  });
}

function kpis(f: Figures, spaces: number): string {
  const card = (value: string, label: string, low = false) => `<div class="kpi${low ? ' low' : ''}"><div class="value">${value}</div><div class="label">${label}</div></div>`;
  return `<div class="kpis">${[
    card(percent(f.timeUsed), '% time used'),
    card(percent(f.utilization), 'utilization'),
    card(num(f.avgHeadcount), 'people on average'),
    card(percent(f.coverage) + (lowCoverage(f) ? ' !' : ''), 'coverage', lowCoverage(f)),
    card(String(spaces), 'floor spaces'),
  ].join('')}</div>`;
}

const buildingAnchor = (i: number) => `building-${i + 1}`;
const floorAnchor = (i: number, j: number) => `building-${i + 1}-floor-${j + 1}`;
const spacesOf = (b: BuildingReport) => b.floors.reduce((n, f) => n + f.spaces.length, 0);

function floorSection(b: BuildingReport, f: FloorReport, i: number, j: number): string {
  const zone = b.timeZone ?? 'UTC';
  const rows = f.spaces.map(
    (s) => `<tr><td>${esc(spaceLabel(s))}${shownName(s.name) !== null ? ` <span class="muted id">${esc(s.floorSpaceId)}</span>` : ''}</td><td>${esc(s.spaceType ?? '–')}</td><td class="n">${s.capacity || '–'}</td>${figureCells(s.figures)}</tr>`,
  );
  return `<details class="floor" id="${floorAnchor(i, j)}"><summary><h3>${esc(floorLabel(f))}</h3> <span class="muted">${f.level === null ? '' : `level ${f.level} · `}${f.spaces.length} floor space${f.spaces.length === 1 ? '' : 's'} · ${percent(f.figures.timeUsed)} used · utilization ${percent(f.figures.utilization)}</span></summary>
<div class="heat-floor">${profileMap(f.profile, zone, `% time used by weekday and hour, ${buildingLabel(b)}, ${floorLabel(f)}`, true)}</div>
${table(['Floor space', 'Type', 'Capacity', ...FIGURE_HEADS], rows)}
<p class="nav"><a href="#${buildingAnchor(i)}">${esc(buildingLabel(b))}</a> · <a href="#portfolio">Portfolio</a></p>
</details>`;
}

function buildingSection(b: BuildingReport, i: number, data: ReportData): string {
  const zone = b.timeZone ?? 'UTC';
  const several = severalCustomers(data);
  const floorRows = b.floors.map((f, j) => `<tr><td><a href="#${floorAnchor(i, j)}">${esc(floorLabel(f))}</a></td><td class="n">${f.spaces.length}</td>${figureCells(f.figures)}</tr>`);
  return `<details class="card building" id="${buildingAnchor(i)}" open><summary><h2>${esc(buildingLabel(b))}</h2> <span class="muted">${esc(zone)}${several ? ` · ${esc(customerLabel(b))}` : ''}</span></summary>
${kpis(b.figures, spacesOf(b))}
<p class="sub">% of the time used by weekday and hour, ${scopeLabel(data)}, in the building's local time (${esc(zone)}). Hover a cell for its figures; grey: nothing measured${data.scope === 'working' ? ' or outside working hours' : ''}.</p>
<div class="heat-main">${profileMap(b.profile, zone, `% time used by weekday and hour, ${buildingLabel(b)}`, false)}</div>
${rampLegend(100, `ramp-${i + 1}`, '% of the time used')}
<h3 class="floors">Floors</h3>
${table(['Floor', 'Floor spaces', ...FIGURE_HEADS], floorRows)}
${b.floors.map((f, j) => floorSection(b, f, i, j)).join('\n')}
<p class="nav"><a href="#portfolio">Back to the portfolio</a></p>
</details>`;
}

const severalCustomers = (data: ReportData): boolean => new Set(data.buildings.map((b) => b.customerId)).size > 1;

export function renderHtml(data: ReportData): string {
  const customers = data.portfolios.map((p) => esc(customerLabel(p))).join(', ');
  const range = `${esc(data.range.from)} to ${esc(data.range.to)} (exclusive)`;
  const empty = data.buildings.length === 0;
  // Buildings of several customers in one table: each says whose it is (two may share a name).
  const several = severalCustomers(data);
  const portfolio = empty
    ? `<section class="card empty-state" id="portfolio"><h2>Nothing measured on these dates</h2><p>No floor space was measured from ${range}. Run <code>occupancy-sync sync</code>, or choose other dates with <code>--from</code> and <code>--to</code>.</p></section>`
    : `<section class="card" id="portfolio"><h2>Portfolio</h2>
${data.portfolios.map((p) => `<p class="sub">${esc(customerLabel(p))}: ${p.buildings} building${p.buildings === 1 ? '' : 's'}, ${p.spaces} floor space${p.spaces === 1 ? '' : 's'}</p>${kpis(p.figures, p.spaces)}`).join('')}
${table(
  ['Building', ...(several ? ['Customer'] : []), 'Time zone', ...FIGURE_HEADS],
  data.buildings.map((b, i) => `<tr><td><a href="#${buildingAnchor(i)}">${esc(buildingLabel(b))}</a></td>${several ? `<td>${esc(customerLabel(b))}</td>` : ''}<td>${esc(b.timeZone ?? '–')}</td>${figureCells(b.figures)}</tr>`),
)}
</section>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Utilization report, ${esc(data.range.from)} to ${esc(data.range.to)}</title>
<style>${REPORT_CSS}</style></head>
<body><main>
<header><h1>Utilization report</h1>
<p class="range">${range}, each building's local dates · ${scopeLabel(data)} · ${customers || esc(data.customerId ?? '')}</p></header>
${portfolio}
${data.buildings.map((b, i) => buildingSection(b, i, data)).join('\n')}
<footer>Generated ${esc(data.generatedAt)} by occupancy-sync from the time-weighted views (<code>space_days</code>, <code>floor_days</code>,
<code>building_days</code>, <code>portfolio_days</code>, <code>building_hours</code>, <code>floor_hours</code>; docs/reporting.md).
Coverage is the time measured over ${data.scope === 'working' ? 'the working time' : 'the time'}; figures marked ! rest on less than ${COVERAGE_THRESHOLD * 100}% of it.
% time used: time occupied over time measured. Utilization: average people over capacity, where capacity is known.</footer>
</main></body></html>
`;
}
