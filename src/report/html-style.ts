/** The report's stylesheet, inlined into the page (the file must open without network access). */
export const REPORT_CSS = `
:root { --ink: #1d2433; --muted: #687083; --line: #e3e6ec; --bg: #f5f6f8; --card: #fff; --accent: #4269d0; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1040px; margin: 0 auto; padding: 28px 24px 40px; }
header h1 { margin: 0; font-size: 26px; letter-spacing: -0.01em; }
header .range { margin: 4px 0 18px; color: var(--muted); }
h2 { margin: 0 0 2px; font-size: 17px; }
.sub { margin: 0 0 12px; color: var(--muted); font-size: 13px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 18px 20px; margin: 0 0 18px;
  box-shadow: 0 1px 2px rgba(16, 24, 40, 0.04); }
.kpis { display: grid; grid-template-columns: repeat(5, 1fr); gap: 12px; margin-bottom: 18px; }
.kpi { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 12px 16px; }
.kpi .value { font-size: 24px; font-weight: 650; font-variant-numeric: tabular-nums; }
.kpi .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: 0.04em; }
svg.chart { display: block; max-width: 100%; height: auto; font-size: 11px; }
svg .grid { stroke: #eef0f3; }
svg .axis, svg .xtick { stroke: #9aa1ae; }
svg .tick { fill: var(--muted); font-size: 11px; }
svg.small .tick { font-size: 8.5px; }
svg .axis-label { fill: var(--muted); font-size: 12px; }
svg .line { fill: none; stroke-width: 2; stroke-linejoin: round; stroke-linecap: round; }
svg .series:hover .line { stroke-width: 3.5; }
svg .line.total { stroke-width: 3.5; stroke-dasharray: 7 4; }
tr.total td { border-top: 2px solid var(--ink); font-weight: 600; }
svg .cell { stroke: none; }
svg .cell.empty { fill: #f1f2f5; }
svg .cell:hover { stroke: var(--ink); stroke-width: 1.5; }
.legend { list-style: none; display: flex; flex-wrap: wrap; gap: 6px 16px; padding: 0; margin: 10px 0 0; font-size: 12px; }
.legend li { display: flex; align-items: center; gap: 6px; font-family: ui-monospace, "SF Mono", Menlo, Consolas, monospace; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 3px; margin-right: 6px; vertical-align: -1px; }
.legend .swatch { margin-right: 0; }
.legend-ramp { display: block; margin-top: 10px; font-size: 11px; }
.heat-main svg { max-width: 100%; height: auto; }
.multiples { display: grid; grid-template-columns: repeat(auto-fill, minmax(300px, 1fr)); gap: 14px 18px; }
figure { margin: 0; }
figcaption { font: 12px ui-monospace, "SF Mono", Menlo, Consolas, monospace; margin-bottom: 4px;
  white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.muted { color: var(--muted); }
table { width: 100%; border-collapse: collapse; font-size: 13px; }
th { text-align: left; color: var(--muted); font-weight: 600; font-size: 12px; border-bottom: 1px solid var(--line); padding: 6px 8px; }
td { border-bottom: 1px solid #f0f1f4; padding: 6px 8px; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
td.id { font-family: ui-monospace, "SF Mono", Menlo, Consolas, monospace; font-size: 12px; white-space: nowrap; }
tbody tr:hover { background: #fafbfc; }
code { font-family: ui-monospace, "SF Mono", Menlo, Consolas, monospace; font-size: 0.95em; }
footer { color: var(--muted); font-size: 12px; margin-top: 8px; }
.empty-state p { color: var(--muted); }
@media (max-width: 760px) { .kpis { grid-template-columns: repeat(2, 1fr); } }
@media print { body { background: #fff; } .card, .kpi { box-shadow: none; break-inside: avoid; } }
`;
