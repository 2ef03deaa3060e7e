import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Figures of the reliability suite. Each test publishes its rows here: they are written to
 * test-results/reliability/<section>.json (scripts/reliability-report.ts renders docs/reliability.md from those
 * files), and compared with the committed docs/reliability.md, so the page cannot drift from what the tests prove.
 *
 * Only deterministic quantities go into a row (seeded counts, planned sizes, outcomes); timings and other
 * run-dependent measurements go into `measured`, which is kept in the JSON but never compared.
 */

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const FIGURES_DIR = join(ROOT, 'test-results', 'reliability');
export const DOC_PATH = join(ROOT, 'docs', 'reliability.md');

/** RELIABILITY_SCALE multiplies the heavy counts for a local soak; the published figures are those of scale 1. */
export const SCALE = (() => {
  const raw = process.env.RELIABILITY_SCALE;
  const n = raw === undefined || raw === '' ? 1 : Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`RELIABILITY_SCALE=${JSON.stringify(raw)}: use a positive number, e.g. 5`);
  return n;
})();

export const scaled = (count: number): number => Math.max(1, Math.round(count * SCALE));

export interface FigureRow {
  /** Stable id, first cell of the row, e.g. `webhook-stream/tampered`. */
  key: string;
  /** What was tried. */
  tried: string;
  /** How many times (deterministic). */
  count: number;
  /** What held, in words (deterministic). */
  held: string;
}

export interface FigureSection {
  section: string;
  title: string;
  rows: FigureRow[];
  /** Run-dependent measurements (durations, memory): recorded, never compared. */
  measured?: Record<string, number | string>;
}

const fmt = (n: number) => n.toLocaleString('en-US');

export function renderRow(row: FigureRow): string {
  const cell = (s: string) => s.replace(/\|/g, '\\|');
  return `| \`${row.key}\` | ${cell(row.tried)} | ${fmt(row.count)} | ${cell(row.held)} |`;
}

/**
 * Writes the section's JSON and checks each row against docs/reliability.md (at scale 1 only). Returns the rows
 * that differ or are missing, so the caller's expect() shows them; regenerate the page with
 * `node --import tsx scripts/reliability-report.ts` after the suite ran.
 */
export function publishFigures(section: FigureSection): string[] {
  mkdirSync(FIGURES_DIR, { recursive: true });
  writeFileSync(join(FIGURES_DIR, `${section.section}.json`), `${JSON.stringify({ ...section, scale: SCALE }, null, 2)}\n`);
  if (SCALE !== 1) return [];
  let doc = '';
  try {
    doc = readFileSync(DOC_PATH, 'utf8');
  } catch {
    return [`docs/reliability.md is missing: run node --import tsx scripts/reliability-report.ts`];
  }
  const lines = new Set(doc.split('\n'));
  return section.rows.map(renderRow).filter((line) => !lines.has(line)).map((line) => `not in docs/reliability.md: ${line}`);
}
