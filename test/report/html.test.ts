import { afterEach, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderHtml } from '../../src/report/html.ts';
import { rampColor } from '../../src/report/svg.ts';
import type { ReportData } from '../../src/report/types.ts';
import { dumpDom, hasChromium, screenshot } from './chromium.ts';
import { readPng, type Bitmap } from './png.ts';
import { syntheticReport } from './synthetic.ts';
import { tempDir } from '../support/tmp.ts';

/**
 * The `report --html` page: self-contained, every building, floor and floor space named, a reader goes from the
 * portfolio to a building to a floor by links, and the heat maps (weekday x hour of each building's local time) reach
 * the screen in headless Chromium: a screenshot with empty heat maps fails the pixel check.
 */

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

/** Pixels in the heat maps' colours (the ramp from 10 % up: the palest end is too close to the page's greys). */
function heatPixels(bitmap: Bitmap): number {
  const q = (v: number) => v >> 3;
  const ramp = new Set<number>();
  for (let k = 10; k <= 100; k++) {
    const hex = rampColor(k / 100);
    const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)) as [number, number, number];
    for (const dr of [-1, 0, 1]) for (const dg of [-1, 0, 1]) for (const db of [-1, 0, 1]) ramp.add(((q(r) + dr) << 10) | ((q(g) + dg) << 5) | (q(b) + db));
  }
  let n = 0;
  const p = bitmap.pixels;
  for (let i = 0; i < p.length; i += 4) if (ramp.has((q(p[i]!) << 10) | (q(p[i + 1]!) << 5) | q(p[i + 2]!))) n++;
  return n;
}

describe('HTML report', () => {
  it('is one self-contained file: no script, no external resource, nothing fetched', () => {
    const html = renderHtml(syntheticReport());
    expect(html).not.toMatch(/<script|<link|<img|<iframe|@import|url\(\s*['"]?(https?:)?\/\//i);
    expect(html).not.toMatch(/\ssrc=/i);
    expect([...html.matchAll(/\shref="([^"]*)"/g)].every((m) => m[1]!.startsWith('#'))).toBe(true);
    expect(html.startsWith('<!doctype html>')).toBe(true);
  });

  it('names every building, floor and floor space, and escapes the names', () => {
    const data = syntheticReport({ buildings: 3 });
    data.buildings[0]!.name = '<img src=x onerror=alert(1)>';
    data.buildings[0]!.floors[0]!.spaces[0]!.name = '"><script>alert(1)</script>';
    const html = renderHtml(data);
    expect(html).not.toContain('<img src=x');
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    for (const b of data.buildings.slice(1)) {
      expect(html).toContain(`>${b.name}</a>`);
      for (const f of b.floors) {
        expect(html).toContain(`<h3>${f.name}</h3>`);
        for (const s of f.spaces) expect(html).toContain(`<td>${s.name} <span class="muted id">${s.floorSpaceId}</span></td>`);
      }
    }
  });

  it('labels a building, floor or floor space whose listed name is empty, blank or split over lines by its id, on one line', () => {
    const data = syntheticReport({ buildings: 2 });
    const [b0, b1] = data.buildings as [(typeof data.buildings)[number], (typeof data.buildings)[number]];
    b0.name = '';
    b0.floors[0]!.name = '  ';
    b0.floors[0]!.spaces[0]!.name = '';
    b1.floors[0]!.spaces[0]!.name = 'Room\nwith a break';
    const html = renderHtml(data);
    expect(html).toContain(`<h2>${b0.buildingId}</h2>`);
    expect(html).toContain(`<h3>${b0.floors[0]!.floorId}</h3>`);
    expect(html).toContain(`<tr><td>${b0.floors[0]!.spaces[0]!.floorSpaceId}</td>`);
    expect(html).toContain(`<tr><td>Room with a break <span class="muted id">${b1.floors[0]!.spaces[0]!.floorSpaceId}</span></td>`);
    expect(html).not.toMatch(/<a href="#building-1"><\/a>|<h2><\/h2>|<h3>\s*<\/h3>|<tr><td><\/td>/);
  });

  it('says whose each building is in the portfolio table when the report holds several customers (two may share a name)', () => {
    const one = renderHtml(syntheticReport({ buildings: 2 }));
    expect(one).toContain('<th>Building</th><th>Time zone</th>');
    const data = syntheticReport({ buildings: 2 });
    data.buildings[1] = { ...data.buildings[1]!, customerId: 'cust-2', customerName: 'Second office', name: data.buildings[0]!.name };
    const html = renderHtml(data);
    const portfolio = html.slice(html.indexOf('id="portfolio"'), html.indexOf('</section>'));
    expect(portfolio).toContain('<th>Building</th><th>Customer</th><th>Time zone</th>');
    expect([...portfolio.matchAll(/<tr><td><a href="#[^"]+">([^<]+)<\/a><\/td><td>([^<]+)<\/td>/g)].map((m) => [m[1], m[2]])).toEqual([
      [data.buildings[0]!.name, 'cust-1'],
      [data.buildings[0]!.name, 'Second office (cust-2)'],
    ]);
  });

  it('links the portfolio to each building and each building to each floor, and back; every link has its target', () => {
    const data = syntheticReport({ buildings: 3, floors: 2 });
    const html = renderHtml(data);
    const ids = new Set([...html.matchAll(/\sid="([^"]+)"/g)].map((m) => m[1]!));
    const links = [...html.matchAll(/\shref="#([^"]+)"/g)].map((m) => m[1]!);
    expect(links.filter((l) => !ids.has(l))).toEqual([]);
    const portfolio = html.slice(html.indexOf('id="portfolio"'), html.indexOf('</section>'));
    expect([...portfolio.matchAll(/href="#([^"]+)">([^<]+)</g)].map((m) => [m[1], m[2]])).toEqual(data.buildings.map((b, i) => [`building-${i + 1}`, b.name]));
    const second = html.slice(html.indexOf('id="building-2"'), html.indexOf('id="building-3"'));
    expect([...second.matchAll(/<td><a href="#([^"]+)">([^<]+)</g)].map((m) => [m[1], m[2]])).toEqual([
      ['building-2-floor-1', 'Floor 1'],
      ['building-2-floor-2', 'Floor 2'],
    ]);
    expect(count(second, 'href="#portfolio"')).toBe(3);
    // Buildings open, floors closed until a reader follows a link (Chromium opens a <details> a link points into).
    expect(count(html, '<details class="card building"')).toBe(3);
    expect(count(html, '<details class="card building" id="building-1" open>')).toBe(1);
    expect(count(html, '<details class="floor" id="building-1-floor-1">')).toBe(1);
  });

  it('flags coverage under 80 % and shows no utilization where capacity is unknown', () => {
    const html = renderHtml(syntheticReport());
    expect(html).toMatch(/<td class="n low" title="Below 80%[^"]*">60\.0% !<\/td>/);
    const noCapacity = /<tr><td>Room 1\.03[^]*?<\/tr>/.exec(html)![0];
    expect(noCapacity).toMatch(/<td class="n">–<\/td><td class="n">95\.0%<\/td>.*<td class="n">–<\/td><td class="n">–<\/td><\/tr>$/);
  });

  it('explains dates nobody measured instead of drawing empty charts', () => {
    const html = renderHtml({ ...syntheticReport(), buildings: [], portfolios: [] });
    expect(html).toContain('Nothing measured on these dates');
    expect(count(html, '<svg class="chart')).toBe(0);
  });
});

describe.skipIf(!hasChromium && !process.env.CI)('HTML report in headless Chromium', () => {
  it('draws a weekday x hour heat map per building and per floor in local time, with a cell per working hour measured', async () => {
    const data = syntheticReport({ buildings: 3, floors: 2 });
    const { file } = writeReport(renderHtml(data));
    const dom = await dumpDom(file);
    expect(count(dom, '<svg class="chart heatmap')).toBe(3 + 3 * 2);
    expect(count(dom, '<rect class="cell')).toBe(9 * 7 * 24);
    // Monday to Friday, 08:00 to 18:00: 50 cells of each map hold a figure.
    expect(count(dom, '<rect class="cell" ')).toBe(9 * 50);
    expect(dom).toContain('<title>Mon 09:00 Asia/Kolkata: ');
    expect(dom).toMatch(/<title>Wed 13:00 Europe\/Berlin: \d+\.\d% of the time used, 2\.0 people on average, 100\.0% measured<\/title>/);
    for (const b of data.buildings) expect(dom).toContain(`>${b.name}</a>`);
  });

  it('puts the heat maps on screen: a screenshot counts their colours, and one whose maps are empty fails that count', async () => {
    const shoot = async (data: ReportData) => {
      const { file, dir } = writeReport(renderHtml(data));
      const png = join(dir, 'shot.png');
      await screenshot(file, png, '1100,2400');
      return readPng(png);
    };
    const drawn = await shoot(syntheticReport({ buildings: 2 }));
    expect(drawn.width).toBe(1100);
    // Two building maps on screen, 50 cells each of about 36 x 26 pixels.
    const full = heatPixels(drawn);
    expect(full).toBeGreaterThan(50_000);
    const empty = heatPixels(await shoot(syntheticReport({ buildings: 2, emptyProfiles: true })));
    expect(empty).toBeLessThan(full / 10);
  });
});
