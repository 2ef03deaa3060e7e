/**
 * Server-side SVG charts for the HTML report: a multi-series line chart and an hour-of-day x weekday heatmap.
 * Drawn as plain SVG strings (no script, no network), so the file opens anywhere and tests can count the shapes.
 */

export function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

const f = (n: number) => (Math.round(n * 10) / 10).toString();

/** A "nice" upper bound for an axis (1, 2, 2.5 or 5 times a power of ten) and its tick step. */
export function niceScale(max: number, ticks = 5): { max: number; step: number } {
  if (!(max > 0)) return { max: 1, step: 0.2 };
  const raw = max / ticks;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * power).find((s) => s >= raw)!;
  return { max: Math.ceil(max / step - 1e-9) * step, step };
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const TIME_STEPS = [HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY, 2 * DAY, 7 * DAY, 14 * DAY, 28 * DAY, 91 * DAY];
const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** Monday = 0 (ISO weekday order), from a UTC timestamp. */
export function weekdayIndex(ms: number): number {
  return (new Date(ms).getUTCDay() + 6) % 7;
}

function timeLabel(ms: number, step: number): string {
  const d = new Date(ms);
  const day = `${WEEKDAYS[weekdayIndex(ms)]} ${String(d.getUTCDate()).padStart(2, '0')} ${MONTHS[d.getUTCMonth()]}`;
  if (step >= DAY) return day;
  const hh = `${String(d.getUTCHours()).padStart(2, '0')}:00`;
  return d.getUTCHours() === 0 ? day : hh;
}

export interface LineSeries {
  label: string;
  title: string;
  color: string;
  /** Drawn heavier, e.g. the line of all floor spaces together. */
  emphasis?: boolean;
  /** Sorted by time; a gap longer than `gapMs` breaks the line. */
  points: { t: number; v: number }[];
}

export interface LineChartOptions {
  from: number;
  to: number;
  yLabel: string;
  /** Wall-clock offset of the zone the axis is labelled in, ms (local = UTC + offset); default 0 (UTC). */
  offsetMs?: number;
  gapMs?: number;
  width?: number;
  height?: number;
}

export function lineChart(series: LineSeries[], o: LineChartOptions): string {
  const W = o.width ?? 960;
  const H = o.height ?? 320;
  const m = { top: 14, right: 28, bottom: 36, left: 56 };
  const iw = W - m.left - m.right;
  const ih = H - m.top - m.bottom;
  const maxV = Math.max(0, ...series.flatMap((s) => s.points.map((p) => p.v)));
  const y = niceScale(maxV);
  const span = Math.max(1, o.to - o.from);
  const xs = (t: number) => m.left + ((t - o.from) / span) * iw;
  const ys = (v: number) => m.top + ih - (v / y.max) * ih;
  const gap = o.gapMs ?? HOUR;

  const parts: string[] = [];
  for (let v = 0; v <= y.max + 1e-9; v += y.step) {
    const py = f(ys(v));
    parts.push(
      `<line class="grid" x1="${m.left}" x2="${m.left + iw}" y1="${py}" y2="${py}"/>`,
      `<text class="tick" x="${m.left - 8}" y="${py}" text-anchor="end" dominant-baseline="middle">${+v.toFixed(2)}</text>`,
    );
  }
  const step = TIME_STEPS.find((s) => span / s <= 8) ?? TIME_STEPS.at(-1)!;
  // Ticks on the zone's round hours and midnights: shifted by its offset, labelled in wall-clock time.
  const offset = o.offsetMs ?? 0;
  for (let t = Math.ceil((o.from + offset) / step) * step - offset; t <= o.to; t += step) {
    const px = f(xs(t));
    // Labels at the very edges are anchored inwards so they are not clipped by the viewBox.
    const anchor = xs(t) > W - 60 ? 'end' : xs(t) < m.left + 30 ? 'start' : 'middle';
    parts.push(
      `<line class="xtick" x1="${px}" x2="${px}" y1="${m.top + ih}" y2="${m.top + ih + 5}"/>`,
      `<text class="tick" x="${px}" y="${m.top + ih + 20}" text-anchor="${anchor}">${esc(timeLabel(t + offset, step))}</text>`,
    );
  }
  parts.push(
    `<line class="axis" x1="${m.left}" x2="${m.left + iw}" y1="${m.top + ih}" y2="${m.top + ih}"/>`,
    `<text class="axis-label" transform="translate(14 ${m.top + ih / 2}) rotate(-90)" text-anchor="middle">${esc(o.yLabel)}</text>`,
  );
  for (const s of series) {
    let d = '';
    const dots: string[] = [];
    s.points.forEach((p, i) => {
      const prev = s.points[i - 1];
      const next = s.points[i + 1];
      const joined = prev !== undefined && p.t - prev.t <= gap;
      d += `${joined ? 'L' : 'M'}${f(xs(p.t))} ${f(ys(p.v))}`;
      // A reading with no neighbour would draw nothing as a path segment: mark it with a dot.
      if (!joined && (next === undefined || next.t - p.t > gap)) {
        dots.push(`<circle class="dot" cx="${f(xs(p.t))}" cy="${f(ys(p.v))}" r="2.5" fill="${s.color}"/>`);
      }
    });
    parts.push(
      `<g class="series"><title>${esc(s.title)}</title>` +
        (d ? `<path class="line${s.emphasis ? ' total' : ''}" d="${d}" stroke="${s.color}"/>` : '') +
        dots.join('') +
        '</g>',
    );
  }
  return `<svg class="chart line-chart" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(o.yLabel)} over time">${parts.join('')}</svg>`;
}

/** Sequential palette (light to dark blue-green), interpolated in RGB. */
const RAMP = ['#f2f8ee', '#c9e8c4', '#7ccbc0', '#3a99c2', '#1f5fa6', '#1a2f78'];

export function rampColor(fraction: number): string {
  const x = Math.min(1, Math.max(0, fraction)) * (RAMP.length - 1);
  const i = Math.min(RAMP.length - 2, Math.floor(x));
  const a = RAMP[i]!;
  const b = RAMP[i + 1]!;
  const mix = (k: number) => {
    const ca = parseInt(a.slice(k, k + 2), 16);
    const cb = parseInt(b.slice(k, k + 2), 16);
    return Math.round(ca + (cb - ca) * (x - i)).toString(16).padStart(2, '0');
  };
  return `#${mix(1)}${mix(3)}${mix(5)}`;
}

/** cells[weekday 0=Mon][hour 0..23]: average headcount, or null when there was no reading. */
export type HeatmapCells = (number | null)[][];

export interface HeatmapOptions {
  /** Colour scale maximum (shared between small multiples so they compare). */
  max: number;
  cell?: number;
  /** Label every n-th hour column. */
  hourLabelEvery?: number;
  title?: string;
  /** The zone the weekdays and hours are in, for the cells' titles. Default UTC. */
  zone?: string;
}

export function heatmap(cells: HeatmapCells, o: HeatmapOptions): string {
  const c = o.cell ?? 38;
  const big = c >= 20;
  const ch = big ? Math.round(c * 0.75) : c;
  const left = big ? 40 : 28;
  const top = big ? 20 : 14;
  const every = o.hourLabelEvery ?? (big ? 1 : 3);
  const W = left + 24 * c + 2;
  const H = top + 7 * ch + 2;
  const parts: string[] = [];
  for (let h = 0; h < 24; h += every) {
    parts.push(`<text class="tick" x="${left + h * c + c / 2}" y="${top - 6}" text-anchor="middle">${String(h).padStart(2, '0')}</text>`);
  }
  cells.forEach((row, d) => {
    parts.push(`<text class="tick" x="${left - 6}" y="${top + d * ch + ch / 2}" text-anchor="end" dominant-baseline="middle">${WEEKDAYS[d]}</text>`);
    row.forEach((v, h) => {
      const x = left + h * c;
      const yy = top + d * ch;
      const when = `${WEEKDAYS[d]} ${String(h).padStart(2, '0')}:00 ${o.zone ?? 'UTC'}`;
      parts.push(
        v === null
          ? `<rect class="cell empty" x="${x}" y="${yy}" width="${c - 2}" height="${ch - 2}" rx="2"><title>${when}: no readings</title></rect>`
          : `<rect class="cell" x="${x}" y="${yy}" width="${c - 2}" height="${ch - 2}" rx="2" fill="${rampColor(o.max > 0 ? v / o.max : 0)}"><title>${when}: ${v.toFixed(2)} people on average</title></rect>`,
      );
    });
  });
  const label = o.title ? ` aria-label="${esc(o.title)}"` : '';
  return `<svg class="chart heatmap${big ? '' : ' small'}" viewBox="0 0 ${W} ${H}" width="${W}" role="img"${label}>${parts.join('')}</svg>`;
}

/** A horizontal colour legend for the heatmaps, 0 to max. */
export function rampLegend(max: number, id: string, label: string): string {
  const stops = RAMP.map((color, i) => `<stop offset="${(i / (RAMP.length - 1)) * 100}%" stop-color="${color}"/>`).join('');
  const W = 260;
  return (
    `<svg class="legend-ramp" viewBox="0 0 ${W} 40" width="${W}" role="img" aria-label="${esc(label)}">` +
    `<defs><linearGradient id="${id}">${stops}</linearGradient></defs>` +
    `<rect x="0" y="4" width="${W}" height="12" rx="3" fill="url(#${id})"/>` +
    `<text class="tick" x="0" y="32">0</text><text class="tick" x="${W / 2}" y="32" text-anchor="middle">${esc(label)}</text>` +
    `<text class="tick" x="${W}" y="32" text-anchor="end">${+max.toFixed(2)}</text></svg>`
  );
}
