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
svg .tick { fill: var(--muted); font-size: 11px; }
svg.small .tick { font-size: 8.5px; }
svg .cell { stroke: none; }
svg .cell.empty { fill: #f1f2f5; }
svg .cell:hover { stroke: var(--ink); stroke-width: 1.5; }
.legend-ramp { display: block; margin-top: 10px; font-size: 11px; }
.heat-main svg { max-width: 100%; height: auto; }
.muted { color: var(--muted); }
table { width: 100%; border-collapse: collapse; font-size: 13px; }
th { text-align: left; color: var(--muted); font-weight: 600; font-size: 12px; border-bottom: 1px solid var(--line); padding: 6px 8px; }
td { border-bottom: 1px solid #f0f1f4; padding: 6px 8px; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
td.id { font-family: ui-monospace, "SF Mono", Menlo, Consolas, monospace; font-size: 12px; white-space: nowrap; }
tbody tr:hover { background: #fafbfc; }
code { font-family: ui-monospace, "SF Mono", Menlo, Consolas, monospace; font-size: 0.95em; }
footer { color: var(--muted); font-size: 12px; margin-top: 8px; }
.empty-state p { color: var(--muted); }
details > summary { cursor: pointer; display: flex; flex-wrap: wrap; align-items: baseline; gap: 4px 10px; margin-bottom: 10px; }
details > summary h2, details > summary h3 { display: inline; margin: 0; }
details > summary { list-style: none; }
details > summary::-webkit-details-marker { display: none; }
details > summary::before { content: '\\25B8'; color: var(--muted); width: 12px; }
details[open] > summary::before { content: '\\25BE'; }
details.floor { border-top: 1px solid var(--line); padding: 12px 0 4px; }
details.floor > summary h3 { font-size: 15px; }
h3.floors { margin: 18px 0 6px; font-size: 15px; }
td.low, .kpi.low .value { color: #b42318; font-weight: 600; }
.nav { font-size: 12px; margin: 8px 0 0; }
a { color: var(--accent); }
.heat-floor svg { max-width: 100%; height: auto; margin: 4px 0 10px; }
@media (max-width: 760px) { .kpis { grid-template-columns: repeat(2, 1fr); } }
@media print { body { background: #fff; } .card, .kpi { box-shadow: none; break-inside: avoid; } }
`;
