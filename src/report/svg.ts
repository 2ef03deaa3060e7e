/**
 * Server-side SVG charts for the HTML report: an hour-of-day x weekday heatmap and its colour legend.
 * Drawn as plain SVG strings (no script, no network), so the file opens anywhere and tests can count the shapes.
 */

export function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];

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

/** cells[weekday 0=Mon][hour 0..23]: a value to colour, or null when nothing was measured. */
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
  /** A cell's value in words, for its title (default: people on average). */
  describe?: (weekday: number, hour: number, value: number) => string;
  /** What an empty cell's title says (default: no readings). */
  emptyText?: string;
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
          ? `<rect class="cell empty" x="${x}" y="${yy}" width="${c - 2}" height="${ch - 2}" rx="2"><title>${when}: ${esc(o.emptyText ?? 'no readings')}</title></rect>`
          : `<rect class="cell" x="${x}" y="${yy}" width="${c - 2}" height="${ch - 2}" rx="2" fill="${rampColor(o.max > 0 ? v / o.max : 0)}"><title>${when}: ${esc(o.describe ? o.describe(d, h, v) : `${v.toFixed(2)} people on average`)}</title></rect>`,
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
