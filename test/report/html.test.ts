import { afterEach, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderHtml, heatmapCells } from '../../src/report/html.ts';
import { MAX_CHOSEN } from '../../src/report/select.ts';
import { totalOf, type ReportData } from '../../src/report/types.ts';
import { dumpDom, hasChromium, screenshot } from './chromium.ts';
import { countColor, readPng } from './png.ts';
import { syntheticReport } from './synthetic.ts';
import { tempDir } from '../support/tmp.ts';

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

/** The labels of the chart legend, in order, as the browser parsed them. */
function legend(dom: string): string[] {
  const list = /<ul class="legend">(.*?)<\/ul>/s.exec(dom)?.[1] ?? '';
  return [...list.matchAll(/<li[^>]*>(?:<span[^>]*><\/span>)?([^<]*)<\/li>/g)].map((m) => m[1]!);
}

const short = (id: string) => id.slice(0, 8);

function named(data: ReportData, name: string): ReportData {
  const floorSpaces = data.floorSpaces.map((r) => ({ ...r, customerName: name }));
  return { ...data, floorSpaces, total: totalOf(floorSpaces) };
}

describe('HTML report', () => {
  it('is one self-contained file: no script, no external resource, nothing fetched', () => {
    const html = renderHtml(syntheticReport(3));
    expect(html).not.toMatch(/<script|<link|<img|<iframe|@import|url\(\s*['"]?(https?:)?\/\//i);
    expect(html).not.toMatch(/\s(src|href)=/i);
    expect(html.startsWith('<!doctype html>')).toBe(true);
  });

  it('escapes ids, statuses and names', () => {
    const data = named(syntheticReport(1), '<b>Acme</b>');
    data.floorSpaces[0]!.floorSpaceId = '<img src=x onerror=alert(1)>';
    data.floorSpaces[0]!.latestStatus = '"><script>alert(1)</script>';
    const html = renderHtml(data);
    expect(html).not.toContain('<img src=x');
    expect(html).not.toContain('<script>');
    expect(html).not.toContain('<b>Acme');
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(html).toContain('&lt;b&gt;Acme&lt;/b&gt;');
  });

  it('names customers when a name is configured, with the id beside it', () => {
    const html = renderHtml(named(syntheticReport(2), 'Head office'));
    expect(html).toContain('1 customer: Head office');
    expect(count(html, '<tr><td>Head office (cust-1)</td>')).toBe(2);
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
    // In Berlin (UTC+1 in January) the same readings fall on Monday 10:00 and Monday 00:00.
    const berlin = heatmapCells(
      [
        { customerId: 'c', floorSpaceId: 'a', hour: '2026-01-05T09:00:00.000Z', readings: 1, occupiedReadings: 1, totalHeadcount: 10, avgHeadcount: 10, peakHeadcount: 10, occupiedShare: 1 },
        { customerId: 'c', floorSpaceId: 'a', hour: '2026-01-11T23:00:00.000Z', readings: 2, occupiedReadings: 2, totalHeadcount: 5, avgHeadcount: 2.5, peakHeadcount: 3, occupiedShare: 1 },
      ],
      'Europe/Berlin',
    );
    expect(berlin[0]![10]).toBe(10);
    expect(berlin[0]![0]).toBe(2.5);
  });
});

describe.skipIf(!hasChromium && !process.env.CI)('HTML report in headless Chromium', () => {
  it('12 floor spaces: draws the 10 busiest and the total, says so, and lists all 12 with a total row', async () => {
    const data = syntheticReport(12);
    const { file } = writeReport(renderHtml(data));
    const dom = await dumpDom(file);
    const busiest = [...data.floorSpaces].sort((a, b) => b.avgHeadcount - a.avgHeadcount).slice(0, MAX_CHOSEN);
    expect(count(dom, '<svg class="chart line-chart"')).toBe(1);
    expect(count(dom, '<path class="line" ')).toBe(MAX_CHOSEN);
    expect(count(dom, '<path class="line total" ')).toBe(1);
    expect(legend(dom)).toEqual([...busiest.map((r) => short(r.floorSpaceId)), 'all 12 floor spaces']);
    expect(dom).toContain('Average headcount per hour: the 10 busiest of 12 floor spaces by average headcount, one line each (2 more in the table below), and all floor spaces together (the dark line). Hours in UTC.');
    // One overall heatmap and one per drawn floor space, 7 weekdays x 24 hours each.
    expect(count(dom, '<svg class="chart heatmap')).toBe(1 + MAX_CHOSEN);
    expect(count(dom, '<rect class="cell')).toBe((1 + MAX_CHOSEN) * 7 * 24);
    // Floor space 2 (among the busiest ten) has a 9-hour gap in its week: exactly those cells are empty.
    expect(count(dom, '<rect class="cell empty"')).toBe(9);
    expect(dom).toContain('Mon 05 Jan 2026 00:00 UTC – Mon 12 Jan 2026 00:00 UTC');
    expect(count(dom, '<tr><td>cust-1</td>')).toBe(12);
    expect(count(dom, '<tr class="total"><td>all</td><td>12 floor spaces</td>')).toBe(1);
  });

  it('100 floor spaces: the emptiest ten in local hours, stated on the page; the table has all 100', async () => {
    const data = { ...syntheticReport(100), timeZone: 'Europe/Berlin' };
    const { file } = writeReport(renderHtml(data, { show: 'emptiest' }));
    const dom = await dumpDom(file);
    const emptiest = [...data.floorSpaces].sort((a, b) => a.avgHeadcount - b.avgHeadcount).slice(0, MAX_CHOSEN);
    expect(count(dom, '<path class="line" ')).toBe(MAX_CHOSEN);
    expect(count(dom, '<path class="line total" ')).toBe(1);
    expect(legend(dom)).toEqual([...emptiest.map((r) => short(r.floorSpaceId)), 'all 100 floor spaces']);
    expect(dom).toContain('the 10 emptiest of 100 floor spaces by average headcount, one line each (90 more in the table below)');
    expect(dom).toContain('Hours in Europe/Berlin.');
    expect(dom).toContain('Mon 05 Jan 2026 01:00 Europe/Berlin – Mon 12 Jan 2026 01:00 Europe/Berlin');
    expect(dom).toContain('All times in Europe/Berlin.');
    expect(count(dom, '<svg class="chart heatmap')).toBe(1 + MAX_CHOSEN);
    expect(dom).toContain('<title>Mon 10:00 Europe/Berlin: ');
    expect(dom).not.toMatch(/first \d+ of/);
    expect(count(dom, '<tr><td>cust-1</td>')).toBe(100);
    expect(count(dom, '<tr class="total"><td>all</td><td>100 floor spaces</td>')).toBe(1);
  });

  it('draws the change selection: the floor spaces whose average moved most between the halves', async () => {
    const data = syntheticReport(12);
    // Floor space 0 empties in the second half of the week; it has the lowest average, yet the biggest change.
    const first = data.floorSpaces[0]!.floorSpaceId;
    data.hourly = data.hourly.map((p) => (p.floorSpaceId === first && p.hour >= '2026-01-08T12:00:00.000Z' ? { ...p, totalHeadcount: 0, avgHeadcount: 0 } : p));
    data.hourly = data.hourly.map((p) => (p.floorSpaceId === first && p.hour < '2026-01-08T12:00:00.000Z' ? { ...p, totalHeadcount: p.totalHeadcount * 20 } : p));
    const { file } = writeReport(renderHtml(data, { show: 'change', top: 3 }));
    const dom = await dumpDom(file);
    expect(legend(dom)[0]).toBe(short(first));
    expect(legend(dom)).toHaveLength(4);
    expect(dom).toContain('the 3 of 12 floor spaces with the biggest change in average headcount between the first and the second half of the range');
  });

  it('puts the chart colours on screen (screenshot pixels, not just DOM nodes)', async () => {
    const html = renderHtml(syntheticReport(12));
    const { file, dir } = writeReport(html);
    const png = join(dir, 'shot.png');
    await screenshot(file, png);
    const bitmap = readPng(png);
    expect(bitmap.width).toBe(1100);
    // First series line colour, the total line, and the darkest heatmap colour (the busiest cell reaches the scale maximum).
    expect(countColor(bitmap, '#4269d0')).toBeGreaterThan(500);
    expect(countColor(bitmap, '#1d1d1f', 2)).toBeGreaterThan(300);
    expect(countColor(bitmap, '#1a2f78', 3)).toBeGreaterThan(50);
  });

  it('breaks a line at a gap instead of bridging it', () => {
    const html = renderHtml(syntheticReport(4), { show: 'emptiest' });
    // Emptiest first: floor space 2 (9-hour gap) is the third line.
    const strokes = [...html.matchAll(/<path class="line" d="([^"]+)"/g)].map((m) => m[1]!.split('M').length - 1);
    expect(strokes).toEqual([1, 1, 2, 1]);
  });

  it('explains an empty range instead of drawing empty charts', async () => {
    const data = { ...syntheticReport(1), floorSpaces: [], hourly: [], total: totalOf([]) };
    const { file } = writeReport(renderHtml(data));
    const dom = await dumpDom(file);
    expect(dom).toContain('No readings in this range');
    expect(count(dom, '<svg class="chart')).toBe(0);
  });
});
