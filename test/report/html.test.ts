import { afterEach, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderHtml, MAX_LINES, heatmapCells } from '../../src/report/html.ts';
import { tempDir } from '../helpers/tmp.ts';
import { dumpDom, hasChromium, screenshot } from './chromium.ts';
import { countColor, readPng } from './png.ts';
import { syntheticReport } from './synthetic.ts';

const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

function writeReport(html: string): { file: string; dir: string } {
  const tmp = tempDir('report-html-');
  cleanups.push(tmp.remove);
  const file = join(tmp.dir, 'report.html');
  writeFileSync(file, html);
  return { file, dir: tmp.dir };
}

const count = (text: string, needle: string) => text.split(needle).length - 1;

describe('HTML report', () => {
  it('is one self-contained file: no script, no external resource, nothing fetched', () => {
    const html = renderHtml(syntheticReport(3));
    expect(html).not.toMatch(/<script|<link|<img|<iframe|@import|url\(\s*['"]?(https?:)?\/\//i);
    expect(html).not.toMatch(/\s(src|href)=/i);
    expect(html.startsWith('<!doctype html>')).toBe(true);
  });

  it('escapes ids and statuses that come from the platform', () => {
    const data = syntheticReport(1);
    data.floorSpaces[0]!.floorSpaceId = '<img src=x onerror=alert(1)>';
    data.floorSpaces[0]!.latestStatus = '"><script>alert(1)</script>';
    const html = renderHtml(data);
    expect(html).not.toContain('<img src=x');
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });

  it('weights the heatmap by readings and leaves hours without readings empty', () => {
    const cells = heatmapCells([
      { customerId: 'c', floorSpaceId: 'a', hour: '2026-01-05T09:00:00.000Z', readings: 1, occupiedReadings: 1, totalHeadcount: 10, avgHeadcount: 10, peakHeadcount: 10, occupiedShare: 1 },
      { customerId: 'c', floorSpaceId: 'b', hour: '2026-01-05T09:00:00.000Z', readings: 3, occupiedReadings: 0, totalHeadcount: 2, avgHeadcount: 2 / 3, peakHeadcount: 1, occupiedShare: 0 },
      { customerId: 'c', floorSpaceId: 'a', hour: '2026-01-11T23:00:00.000Z', readings: 2, occupiedReadings: 2, totalHeadcount: 5, avgHeadcount: 2.5, peakHeadcount: 3, occupiedShare: 1 },
    ]);
    expect(cells[0]![9]).toBe(3); // Monday 09:00: (10 + 2) / 4 readings
    expect(cells[6]![23]).toBe(2.5); // Sunday 23:00
    expect(cells.flat().filter((v) => v === null)).toHaveLength(7 * 24 - 2);
  });
});

describe.skipIf(!hasChromium && !process.env.CI)('HTML report in headless Chromium', () => {
  it('draws one line per floor space (busiest ten) and every heatmap cell', async () => {
    const data = syntheticReport(12);
    const { file } = writeReport(renderHtml(data));
    const dom = await dumpDom(file);
    expect(count(dom, '<svg class="chart line-chart"')).toBe(1);
    expect(count(dom, '<path class="line"')).toBe(MAX_LINES);
    expect(count(dom, '<ul class="legend"><li')).toBe(1);
    // One overall heatmap and one per floor space, 7 weekdays x 24 hours each.
    expect(count(dom, '<svg class="chart heatmap')).toBe(13);
    expect(count(dom, '<rect class="cell')).toBe(13 * 7 * 24);
    // Floor space 2 has a 9-hour gap in its week: exactly those cells are empty.
    expect(count(dom, '<rect class="cell empty"')).toBe(9);
    expect(dom).toContain('Mon 05 Jan 2026 00:00 UTC – Mon 12 Jan 2026 00:00 UTC');
    expect(count(dom, '<tr><td>cust-1</td>')).toBe(12);
  });

  it('puts the chart colours on screen (screenshot pixels, not just DOM nodes)', async () => {
    const html = renderHtml(syntheticReport(4));
    // Floor space 2 (the fourth line: fewest readings) has a 9-hour gap: its line breaks instead of bridging it.
    const broken = [...html.matchAll(/<path class="line" d="([^"]+)"/g)].map((m) => m[1]!.split('M').length - 1);
    expect(broken).toEqual([1, 1, 1, 2]);
    const { file, dir } = writeReport(html);
    const png = join(dir, 'shot.png');
    await screenshot(file, png);
    const bitmap = readPng(png);
    expect(bitmap.width).toBe(1100);
    // First series line colour, and the darkest heatmap colour (the busiest cell reaches the scale maximum).
    expect(countColor(bitmap, '#4269d0')).toBeGreaterThan(500);
    expect(countColor(bitmap, '#1a2f78', 3)).toBeGreaterThan(50);
  });

  it('explains an empty range instead of drawing empty charts', async () => {
    const data = { ...syntheticReport(1), floorSpaces: [], hourly: [] };
    const { file } = writeReport(renderHtml(data));
    const dom = await dumpDom(file);
    expect(dom).toContain('No readings in this range');
    expect(count(dom, '<svg class="chart')).toBe(0);
  });
});
